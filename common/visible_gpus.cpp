#include "common/visible_gpus.h"

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include "common/settings.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

int ranks_on_node_from_env() {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(name);
    if (v != nullptr) return all_digits(v) ? std::atoi(v) : -1;
  }
  if (const char* tasks = std::getenv("SLURM_STEP_TASKS_PER_NODE")) {  // srun: "1(x4)", "2,1"
    const std::string_view t(tasks);
    return t == "1" || t.rfind("1(x", 0) == 0 ? 1 : -1;
  }
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                           "MV2_COMM_WORLD_SIZE", "SLURM_PROCID"})
    if (std::getenv(name) != nullptr) return -1;
  return 1;
}

int ranks_in_job_from_env() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* v = std::getenv(name);
    if (v != nullptr) return all_digits(v) ? std::atoi(v) : -1;
  }
  if (std::getenv("SLURM_PROCID") != nullptr) {  // srun; SLURM_NTASKS alone is sbatch's too
    const char* n = std::getenv("SLURM_NTASKS");
    return n != nullptr && all_digits(n) ? std::atoi(n) : -1;
  }
  for (const char* name : {"PMIX_RANK", "PMI_RANK"})
    if (std::getenv(name) != nullptr) return -1;
  return 1;
}

int local_rank_from_env() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                           "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* v = std::getenv(name);
    if (v != nullptr) return all_digits(v) ? std::atoi(v) : -1;
  }
  return -1;
}

namespace {

int physical_gpu_count() {
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator it("/proc/driver/nvidia/gpus", ec), end; !ec && it != end;
       it.increment(ec))
    ++n;
  return ec ? 0 : n;
}

/// Some GPU has MIG GPU instances (/proc/driver/nvidia/capabilities/gpuN/mig/giM).
bool mig_instances() {
  std::error_code ec;
  for (fs::directory_iterator it("/proc/driver/nvidia/capabilities", ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code ec2;
    for (fs::directory_iterator gi(it->path() / "mig", ec2), gend; !ec2 && gi != gend;
         gi.increment(ec2))
      if (gi->path().filename().string().rfind("gi", 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> narrowed_visible_devices(const char* visible, int ranks_on_node,
                                                    int local_rank, int physical_gpus, bool mig,
                                                    bool peers_needed) {
  if (ranks_on_node < 1 || physical_gpus <= 0 || mig) return std::nullopt;
  if (ranks_on_node > 1 && (peers_needed || local_rank < 0)) return std::nullopt;
  if (ranks_on_node == 1) local_rank = 0;
  std::vector<std::string> entries;
  if (visible == nullptr) {
    for (int i = 0; i < physical_gpus; ++i) entries.push_back(std::to_string(i));
  } else {
    std::string_view rest(visible);
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view e = rest.substr(0, comma);
      const bool index = all_digits(e) && std::atoi(std::string(e).c_str()) < physical_gpus;
      if (!index && e.rfind("GPU-", 0) != 0) return std::nullopt;
      entries.emplace_back(e);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (entries.size() < 2) return std::nullopt;
  return entries[static_cast<size_t>(local_rank) % entries.size()];  // what the rank would pick
}

int visible_gpus_from_env() {
  const int physical = physical_gpu_count();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr || physical == 0) return physical;
  int n = 0;
  std::string_view rest(visible);
  while (!rest.empty() && n < physical) {
    const size_t comma = rest.find(',');
    const std::string_view e = rest.substr(0, comma);
    const bool index = all_digits(e) && std::atoi(std::string(e).c_str()) < physical;
    if (!index && e.rfind("GPU-", 0) != 0) break;
    ++n;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return n;
}

std::string narrow_visible_gpus(bool peers_needed) {
  if (!settings::flag("GTADOC_NARROW_GPUS")) return "";
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const int ranks = ranks_on_node_from_env();
  const int local = local_rank_from_env();
  const std::optional<std::string> one = narrowed_visible_devices(
      visible, ranks, local, physical_gpu_count(), mig_instances(), peers_needed);
  if (!one) return "";
  const std::string was = visible != nullptr ? visible : "unset";
  setenv("CUDA_VISIBLE_DEVICES", one->c_str(), 1);
  return "CUDA_VISIBLE_DEVICES=" + *one + " (was " + was +
         (ranks == 1 ? "; the only rank on this node uses that GPU only)"
                     : "; local rank " + std::to_string(local) + " of " + std::to_string(ranks) +
                           ", no data between the node's GPUs)");
}

}  // namespace gtadoc
