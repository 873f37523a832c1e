// Comm in single-node fallback mode (no launcher, MPI untouched) and the one-rank shuffle.
#include "cluster/comm.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "cluster/partition.h"
#include "cluster/shuffle.h"
#include "common/error.h"
#include "common/settings.h"

namespace gtadoc {
namespace {

Comm& local_comm() {
  ::setenv("GTADOC_MPI", "0", 1);
  settings::reread_for_tests();
  static int argc = 1;
  static char name[] = "comm_test";
  static char* args[] = {name, nullptr};
  static char** argv = args;
  return Comm::init(argc, argv);
}

TEST(CommLocal, IsOneRankWithoutMpi) {
  Comm& comm = local_comm();
  EXPECT_EQ(&comm, &Comm::world());
  EXPECT_FALSE(comm.is_distributed());
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.local_rank(), 0);
  EXPECT_EQ(comm.local_size(), 1);
  EXPECT_TRUE(comm.is_root());
  comm.barrier();
}

TEST(CommLocal, HelpersAreLocalCopies) {
  Comm& comm = local_comm();
  std::vector<uint8_t> buf = {1, 2, 3};
  comm.broadcast(buf);
  EXPECT_EQ(buf, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(comm.allgather(42), (std::vector<uint64_t>{42}));
  EXPECT_EQ(comm.allreduce(5, ReduceOp::kSum), 5u);
  EXPECT_EQ(comm.allreduce(5, ReduceOp::kMin), 5u);
  EXPECT_TRUE(comm.allreduce_and(true));
  EXPECT_FALSE(comm.allreduce_or(false));
  const auto g = comm.gather(buf);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0], buf);
  EXPECT_EQ(comm.allgather_bytes(buf), g);
  const std::vector<uint64_t> one = {9};
  EXPECT_EQ(comm.alltoall(one), one);
  const std::vector<uint32_t> data = {4, 5, 6};
  const std::vector<size_t> counts = {3};
  std::vector<size_t> recv;
  EXPECT_EQ(comm.alltoallv(std::span<const uint32_t>(data), counts, &recv), data);
  EXPECT_EQ(recv, (std::vector<size_t>{3}));
  const std::vector<size_t> wrong = {2};
  EXPECT_THROW(comm.alltoallv(std::span<const uint32_t>(data), wrong), Error);
}

TEST(CommLocal, InitIsIdempotent) {
  Comm& a = local_comm();
  int argc = 0;
  char** argv = nullptr;
  EXPECT_EQ(&Comm::init(argc, argv), &a);
}

TEST(ShuffleLocal, OneRankReturnsRecordsUnchanged) {
  Comm& comm = local_comm();
  RecordBatch in;
  in.width = 2;
  for (uint32_t i = 0; i < 100; ++i) in.push(std::vector<uint32_t>{i % 7, i}, i + 1);
  const auto parts = partition_records(in, KeyLayout{2, 1, false}, 1, {});
  const RecordBatch out = shuffle_records(comm, parts, 16);
  EXPECT_EQ(out.width, 2u);
  EXPECT_EQ(out.keys, in.keys);
  EXPECT_EQ(out.counts, in.counts);
  const auto two = partition_records(in, KeyLayout{2, 1, false}, 2, {});
  EXPECT_THROW(shuffle_records(comm, two), Error);
}

}  // namespace
}  // namespace gtadoc
