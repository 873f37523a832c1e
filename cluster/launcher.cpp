// Launcher detection and the MPI / NCCL environment set before MPI starts (cluster/launcher.h).
#include "cluster/launcher.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/settings.h"

namespace gtadoc {

namespace {

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

/// `read()` of a setting read before MPI starts, or nullopt when its value is bad: the CLI's check
/// of every setting, once MPI runs, then says so in one line for the job.
template <typename Read>
auto before_mpi(Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

}  // namespace

bool launched_by_mpi() {
  const std::optional<bool> force = before_mpi([] { return settings::flag_if_set("GTADOC_MPI"); });
  if (force) return *force;
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"}) {
    if (env_set(name)) return true;
  }
  if (env_set("SLURM_PROCID")) {
    const char* ntasks = std::getenv("SLURM_NTASKS");
    if (ntasks != nullptr && std::atol(ntasks) > 1) return true;
  }
  return false;
}

std::string prefer_shared_memory_pml() {
  const std::optional<std::string_view> keep =
      before_mpi([] { return settings::word_if_set("GTADOC_MPI_PML"); });
  if (keep == "default") return "";
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (size == nullptr || local == nullptr || std::strcmp(size, local) != 0) return "";
  if (env_set("OMPI_MCA_pml")) return "";
  setenv("OMPI_MCA_pml", "ob1", 1);
  return "MPI: every rank on this node, Open MPI's shared-memory transport (pml ob1; "
         "GTADOC_MPI_PML=default leaves Open MPI's choice)";
}

void prefer_legacy_nccl_buffers() {
  if (!env_set("NCCL_CUMEM_ENABLE")) setenv("NCCL_CUMEM_ENABLE", "0", 1);
}

}  // namespace gtadoc
