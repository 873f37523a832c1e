// common/visible_gpus.h: the only rank on a node leaves visible the device it would pick (the
// first of CUDA_VISIBLE_DEVICES, or index 0), written as CUDA_VISIBLE_DEVICES names it; nothing is
// narrowed when ranks share the node and may exchange data GPU to GPU (NCCL's IPC needs their
// peers visible); ranks that share it without that keep their local rank's device; nothing when
// the choice is uncertain (unknown rank count, MIG, entries that are not plain indices or
// GPU-UUIDs, fewer than two devices). The job's rank count from each launcher's environment.
#include "common/visible_gpus.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace gtadoc {
namespace {

TEST(VisibleGpus, TheOnlyRankKeepsTheDeviceItWouldPick) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 2, false, true), "0");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 8, false, true), "0");
  EXPECT_EQ(narrowed_visible_devices("3,1", 1, -1, 4, false, true), "3");
  EXPECT_EQ(narrowed_visible_devices("GPU-aa,GPU-bb", 1, -1, 2, false, true), "GPU-aa");
}

TEST(VisibleGpus, RanksSharingANodeWithoutPeerTrafficKeepTheirOwnDevice) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, 0, 2, false, false), "0");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, 1, 2, false, false), "1");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 4, 3, 4, false, false), "3");
  EXPECT_EQ(narrowed_visible_devices("3,1", 2, 1, 4, false, false), "1");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 4, 3, 2, false, false), "1");  // 2 ranks per GPU
  EXPECT_EQ(narrowed_visible_devices("GPU-aa,GPU-bb", 2, 1, 2, false, false), "GPU-bb");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, -1, 2, false, false), std::nullopt);  // unknown
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, 1, 2, true, false), std::nullopt);    // MIG
}

TEST(VisibleGpus, RanksSharingANodeKeepEveryDevice) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, -1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("0,1", 4, 1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, 1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices(nullptr, -1, -1, 2, false, true), std::nullopt);  // unknown
}

TEST(VisibleGpus, NothingWhenUncertainOrPointless) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 1, false, true), std::nullopt);  // one GPU
  EXPECT_EQ(narrowed_visible_devices("2", 1, -1, 4, false, true), std::nullopt);      // already one
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 2, true, true), std::nullopt);   // MIG
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 0, false, true), std::nullopt);  // no driver
  EXPECT_EQ(narrowed_visible_devices("0,7", 1, -1, 2, false, true),
            std::nullopt);  // 7: no such GPU
  EXPECT_EQ(narrowed_visible_devices("MIG-x,MIG-y", 1, -1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("0,,1", 1, -1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("", 1, -1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("-1", 1, -1, 2, false, true), std::nullopt);
}

/// Runs `check` with exactly `vars` of the launchers' variables set (others unset), then restores.
template <typename Check>
void with_launcher_env(const std::vector<std::pair<const char*, const char*>>& vars, Check check) {
  const char* names[] = {"OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_PROCID",
                         "SLURM_NTASKS",         "PMIX_RANK",           "PMI_RANK"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* n : names) {
    if (const char* v = std::getenv(n)) saved.emplace_back(n, v);
    ::unsetenv(n);
  }
  for (const auto& [n, v] : vars) ::setenv(n, v, 1);
  check();
  for (const char* n : names) ::unsetenv(n);
  for (const auto& [n, v] : saved) ::setenv(n.c_str(), v.c_str(), 1);
}

TEST(LauncherEnv, RanksInTheJob) {
  with_launcher_env({}, [] { EXPECT_EQ(ranks_in_job_from_env(), 1); });
  with_launcher_env({{"OMPI_COMM_WORLD_SIZE", "4"}}, [] { EXPECT_EQ(ranks_in_job_from_env(), 4); });
  with_launcher_env({{"PMI_SIZE", "2"}}, [] { EXPECT_EQ(ranks_in_job_from_env(), 2); });
  with_launcher_env({{"OMPI_COMM_WORLD_SIZE", "x"}},
                    [] { EXPECT_EQ(ranks_in_job_from_env(), -1); });
  // srun sets SLURM_PROCID; sbatch's SLURM_NTASKS alone is not a launched rank.
  with_launcher_env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}},
                    [] { EXPECT_EQ(ranks_in_job_from_env(), 8); });
  with_launcher_env({{"SLURM_NTASKS", "8"}}, [] { EXPECT_EQ(ranks_in_job_from_env(), 1); });
  with_launcher_env({{"PMIX_RANK", "1"}}, [] { EXPECT_EQ(ranks_in_job_from_env(), -1); });
}

}  // namespace
}  // namespace gtadoc
