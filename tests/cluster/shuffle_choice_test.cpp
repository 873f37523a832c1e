// cluster/nccl_comm.h: which one-query shuffles take NCCL (large_shuffle_task: by task, ranks a
// node and shard bytes per rank) and what
// GTADOC_SHUFFLE leaves possible before MPI starts (shuffle_may_use_nccl; another value is a usage
// error).
#include <gtest/gtest.h>

#include "cluster/nccl_comm.h"
#include "common/error.h"
#include "tests/testutil/scoped_env.h"

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
  using testutil::ScopedEnv;
  {
    ScopedEnv unset("GTADOC_SHUFFLE", std::nullopt);
    EXPECT_TRUE(shuffle_may_use_nccl(true, false));    // resident
    EXPECT_TRUE(shuffle_may_use_nccl(false, true));    // a large shuffle
    EXPECT_FALSE(shuffle_may_use_nccl(false, false));  // one query, small shuffle
  }
  {
    ScopedEnv mpi("GTADOC_SHUFFLE", "mpi");
    EXPECT_FALSE(shuffle_may_use_nccl(true, true));
  }
  {
    ScopedEnv nccl("GTADOC_SHUFFLE", "nccl");
    EXPECT_TRUE(shuffle_may_use_nccl(false, false));
  }
  ScopedEnv bogus("GTADOC_SHUFFLE", "bogus");
  EXPECT_THROW(shuffle_may_use_nccl(false, false), UsageError);
}

}  // namespace
}  // namespace gtadoc
