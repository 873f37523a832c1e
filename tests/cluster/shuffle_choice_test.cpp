// cluster/nccl_comm.h: which one-query shuffles take NCCL (large_shuffle_task) and what
// GTADOC_SHUFFLE leaves possible before MPI starts (shuffle_may_use_nccl).
#include <gtest/gtest.h>

#include <cstdlib>

#include "cluster/nccl_comm.h"

namespace gtadoc {
namespace {

TEST(ShuffleChoice, LargeShufflesByTaskAndRanksPerNode) {
  for (int ranks : {-1, 1, 2, 4, 8}) {
    EXPECT_TRUE(large_shuffle_task(Task::kRankedInvertedIndex, ranks)) << ranks;
    EXPECT_FALSE(large_shuffle_task(Task::kWordCount, ranks)) << ranks;
    EXPECT_FALSE(large_shuffle_task(Task::kInvertedIndex, ranks)) << ranks;
    EXPECT_FALSE(large_shuffle_task(Task::kTermVector, ranks)) << ranks;
    EXPECT_FALSE(large_shuffle_task(Task::kSort, ranks)) << ranks;
  }
  EXPECT_TRUE(large_shuffle_task(Task::kSequenceCount, 1));
  EXPECT_TRUE(large_shuffle_task(Task::kSequenceCount, 2));
  EXPECT_FALSE(large_shuffle_task(Task::kSequenceCount, 3));
  EXPECT_FALSE(large_shuffle_task(Task::kSequenceCount, 4));
  EXPECT_FALSE(large_shuffle_task(Task::kSequenceCount, -1));  // unknown: MPI
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
