// cluster/nccl_comm.h: which one-query shuffles take NCCL (large_shuffle_task: by task, ranks a
// node and shard bytes per rank) and what
// GTADOC_SHUFFLE leaves possible before MPI starts (shuffle_may_use_nccl).
#include <gtest/gtest.h>

#include <cstdlib>

#include "cluster/nccl_comm.h"

namespace gtadoc {
namespace {

TEST(ShuffleChoice, LargeShufflesByTaskRanksPerNodeAndSize) {
  const uint64_t huge = uint64_t{1} << 40;
  for (int ranks : {-1, 1, 2, 4, 8}) {
    for (uint64_t bytes : {uint64_t{0}, kNcclShardBytesPerRank, huge}) {
      EXPECT_FALSE(large_shuffle_task(Task::kWordCount, ranks, bytes, false)) << ranks;
      EXPECT_FALSE(large_shuffle_task(Task::kSort, ranks, bytes, false)) << ranks;
    }
  }
  const auto by_size = [&](Task t, uint64_t threshold) {
    EXPECT_FALSE(large_shuffle_task(t, 2, threshold - 1, false));  // below the size: MPI
    EXPECT_TRUE(large_shuffle_task(t, 2, threshold, false));
    EXPECT_TRUE(large_shuffle_task(t, 1, threshold, false));
    EXPECT_FALSE(large_shuffle_task(t, 3, huge, false));  // MPI from 3 ranks a node
    EXPECT_FALSE(large_shuffle_task(t, 4, huge, false));
    EXPECT_FALSE(large_shuffle_task(t, -1, huge, false));  // unknown: MPI
    EXPECT_FALSE(large_shuffle_task(t, 2, huge, true));    // one node, pulls: never NCCL
  };
  by_size(Task::kRankedInvertedIndex, kNcclRankedShardBytesPerRank);
  for (Task t : {Task::kSequenceCount, Task::kInvertedIndex, Task::kTermVector})
    by_size(t, kNcclShardBytesPerRank);
  EXPECT_LT(kNcclRankedShardBytesPerRank, kNcclShardBytesPerRank);
}

TEST(ShuffleChoice, EnvironmentBeforeMpiStarts) {
  const char* saved = std::getenv("GTADOC_SHUFFLE");
  const std::string keep = saved != nullptr ? saved : "";
  unsetenv("GTADOC_SHUFFLE");
  EXPECT_TRUE(shuffle_may_use_nccl(true, false));    // resident
  EXPECT_TRUE(shuffle_may_use_nccl(false, true));    // a large shuffle
  EXPECT_FALSE(shuffle_may_use_nccl(false, false));  // one query, small shuffle
  setenv("GTADOC_SHUFFLE", "mpi", 1);
  EXPECT_FALSE(shuffle_may_use_nccl(true, true));
  setenv("GTADOC_SHUFFLE", "nccl", 1);
  EXPECT_TRUE(shuffle_may_use_nccl(false, false));
  setenv("GTADOC_SHUFFLE", "bogus", 1);  // rejected later by use_nccl_shuffle: keep GPUs visible
  EXPECT_TRUE(shuffle_may_use_nccl(false, false));
  if (saved != nullptr)
    setenv("GTADOC_SHUFFLE", keep.c_str(), 1);
  else
    unsetenv("GTADOC_SHUFFLE");
}

}  // namespace
}  // namespace gtadoc
