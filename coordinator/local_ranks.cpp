// How many in-process ranks a command runs on. See local_ranks.h.
#include "coordinator/local_ranks.h"

#include <optional>
#include <string>
#include <string_view>

#include "cluster/comm.h"
#include "common/error.h"
#include "common/settings.h"
#include "common/visible_gpus.h"

namespace gtadoc {

namespace {

/// --gpus and GTADOC_LOCAL_RANKS share the bound.
constexpr int kMaxInProcessRanks =
    static_cast<int>(settings::variable("GTADOC_LOCAL_RANKS").max);

/// N in 1..kMaxInProcessRanks from `text`, or 0.
int rank_count(std::string_view text) {
  if (text.empty() || text.size() > 2 || text.find_first_not_of("0123456789") != text.npos)
    return 0;
  const int n = std::stoi(std::string(text));
  return n >= 1 && n <= kMaxInProcessRanks ? n : 0;
}

}  // namespace

int gpus_asked(int argc, const char* const* argv) {
  bool in_command = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (!in_command) {
      in_command = a == "run" || a == "serve";
      continue;
    }
    std::string_view v;
    if (a == "--gpus" && i + 1 < argc)
      v = argv[i + 1];
    else if (a.rfind("--gpus=", 0) == 0)
      v = a.substr(7);
    else
      continue;
    return v == "all" ? -1 : rank_count(v);
  }
  return 0;
}

int in_process_rank_count(const std::string& gpus, std::string& engine, const Comm& comm) {
  int n = 1;
  if (!gpus.empty()) {
    if (engine == "cpu")
      throw UsageError("--gpus " + gpus.substr(0, 40) +
                       " with --engine cpu: the CPU engine uses the cores (--threads); leave "
                       "--gpus out");
    const int visible = visible_gpus_from_env();
    if (gpus == "all") {
      if (visible == 0) throw ResourceError("--gpus all: no GPU is visible");
      n = visible;
    } else {
      n = rank_count(gpus);
      if (n == 0)
        throw UsageError("--gpus: '" + gpus.substr(0, 40) +
                         "' is not all or an integer from 1 to " +
                         std::to_string(kMaxInProcessRanks));
      if (n > visible)
        throw ResourceError("--gpus " + gpus + ": " + std::to_string(visible) + " GPU" +
                            (visible == 1 ? " is" : "s are") + " visible");
    }
    if (n > 1) engine = "gpu";
  } else if (const std::optional<uint64_t> v = settings::count_if_set("GTADOC_LOCAL_RANKS")) {
    n = static_cast<int>(*v);
  }
  if (n > 1 && comm.is_distributed())
    throw UsageError(std::string(gpus.empty() ? "GTADOC_LOCAL_RANKS" : "--gpus") +
                     ": under a launcher (mpirun, srun) it starts one rank per GPU; leave it out");
  return n;
}

}  // namespace gtadoc
