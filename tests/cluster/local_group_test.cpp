// Ranks that are threads of one process (Comm::in_process_ranks, cluster/local_group.h): every
// collective against what each rank must receive, the shuffle's rounds in place, and the
// failure paths (a rank that abandons the group, an exception inside a collective).
#include "cluster/local_group.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "cluster/shuffle.h"
#include "common/error.h"

namespace gtadoc {
namespace {

/// Runs body(comm) on `n` in-process ranks; fails the test on any rank's exception.
template <typename F>
void on_ranks(int n, F&& body) {
  const std::vector<std::exception_ptr> failures =
      run_in_process_ranks(n, [&](Comm& comm) { body(comm); });
  for (size_t r = 0; r < failures.size(); ++r) {
    if (!failures[r]) continue;
    try {
      std::rethrow_exception(failures[r]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << ": " << e.what();
    }
  }
}

TEST(LocalGroup, RanksKnowThemselves) {
  std::vector<int> seen(4, -1);
  on_ranks(4, [&](Comm& comm) {
    EXPECT_TRUE(comm.is_in_process());
    EXPECT_FALSE(comm.is_distributed());
    EXPECT_EQ(comm.size(), 4);
    EXPECT_EQ(comm.local_size(), 4);
    EXPECT_EQ(comm.local_rank(), comm.rank());
    seen[comm.rank()] = comm.rank();
    comm.barrier();
  });
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3}));
}

TEST(LocalGroup, BroadcastGatherReduce) {
  on_ranks(3, [](Comm& comm) {
    const int r = comm.rank();
    std::vector<uint8_t> buf;
    if (r == 1) buf = {7, 8, 9, 10};
    comm.broadcast(buf, 1);
    EXPECT_EQ(buf, (std::vector<uint8_t>{7, 8, 9, 10}));

    EXPECT_EQ(comm.allgather(static_cast<uint64_t>(10 * r)), (std::vector<uint64_t>{0, 10, 20}));
    std::vector<uint64_t> v = {static_cast<uint64_t>(r + 1), static_cast<uint64_t>(5 - r)};
    std::vector<uint64_t> sum = v, mx = v, mn = v;
    comm.allreduce(sum, ReduceOp::kSum);
    comm.allreduce(mx, ReduceOp::kMax);
    comm.allreduce(mn, ReduceOp::kMin);
    EXPECT_EQ(sum, (std::vector<uint64_t>{6, 12}));
    EXPECT_EQ(mx, (std::vector<uint64_t>{3, 5}));
    EXPECT_EQ(mn, (std::vector<uint64_t>{1, 3}));
    EXPECT_FALSE(comm.allreduce_and(r != 2));
    EXPECT_TRUE(comm.allreduce_or(r == 2));
    EXPECT_TRUE(comm.allreduce_and(true));

    const std::vector<uint8_t> mine(static_cast<size_t>(r), static_cast<uint8_t>(r));
    const auto all = comm.allgather_bytes(mine);
    ASSERT_EQ(all.size(), 3u);
    for (int s = 0; s < 3; ++s)
      EXPECT_EQ(all[s], std::vector<uint8_t>(static_cast<size_t>(s), static_cast<uint8_t>(s)));
    const auto at_root = comm.gather(mine, 2);
    EXPECT_EQ(at_root.size(), r == 2 ? 3u : 0u);
    if (r == 2) EXPECT_EQ(at_root[1], std::vector<uint8_t>{1});
  });
}

TEST(LocalGroup, AllToAllAndPointToPoint) {
  on_ranks(3, [](Comm& comm) {
    const uint64_t r = static_cast<uint64_t>(comm.rank());
    const std::vector<uint64_t> send = {r * 10, r * 10 + 1, r * 10 + 2};
    EXPECT_EQ(comm.alltoall(send), (std::vector<uint64_t>{r, 10 + r, 20 + r}));

    // Rank r sends d+1 copies of (100 r + d) to rank d.
    std::vector<uint32_t> data;
    std::vector<size_t> counts;
    for (uint32_t d = 0; d < 3; ++d) {
      counts.push_back(d + 1);
      for (uint32_t k = 0; k <= d; ++k) data.push_back(static_cast<uint32_t>(100 * r + d));
    }
    std::vector<size_t> got_counts;
    const std::vector<uint32_t> got =
        comm.alltoallv(std::span<const uint32_t>(data), counts, &got_counts);
    std::vector<uint32_t> want;
    for (uint32_t s = 0; s < 3; ++s)
      for (uint64_t k = 0; k <= r; ++k) want.push_back(static_cast<uint32_t>(100 * s + r));
    EXPECT_EQ(got, want);
    EXPECT_EQ(got_counts, (std::vector<size_t>(3, r + 1)));

    // Messages arrive in order per (source, tag).
    if (r != 0) {
      for (uint8_t k = 0; k < 3; ++k) comm.send_bytes(std::vector<uint8_t>{uint8_t(r), k}, 0, 5);
    } else {
      for (int s = 1; s < 3; ++s)
        for (uint8_t k = 0; k < 3; ++k)
          EXPECT_EQ(comm.recv_bytes(s, 5), (std::vector<uint8_t>{uint8_t(s), k}));
    }
  });
}

TEST(LocalGroup, LargeMessagesArriveWholeAndInOrder) {
  // Pieces past the mailbox's bound: the sender waits for room, nothing is lost or reordered.
  const size_t piece = LocalGroup::kMailboxBytes / 2 + 3;
  on_ranks(2, [&](Comm& comm) {
    if (comm.rank() == 1) {
      for (uint8_t k = 0; k < 5; ++k) comm.send_bytes(std::vector<uint8_t>(piece, k), 0, 9);
      return;
    }
    for (uint8_t k = 0; k < 5; ++k) {
      const std::vector<uint8_t> got = comm.recv_bytes(1, 9);
      ASSERT_EQ(got.size(), piece);
      EXPECT_EQ(got.front(), k);
      EXPECT_EQ(got.back(), k);
    }
  });
}

TEST(LocalGroup, ShuffleLandsInPlace) {
  // Every rank sends record (key = 1000 src + dst, count = k) k = 1..(src + dst + 1) to every
  // rank (in one collective: the round size is MPI's concern).
  on_ranks(4, [](Comm& comm) {
    const uint32_t me = static_cast<uint32_t>(comm.rank());
    PartitionedRecords parts;
    parts.records.width = 2;
    parts.offsets.push_back(0);
    for (uint32_t d = 0; d < 4; ++d) {
      for (uint64_t k = 1; k <= me + d + 1; ++k) {
        parts.records.keys.push_back(1000 * me + d);
        parts.records.keys.push_back(static_cast<uint32_t>(k));
        parts.records.counts.push_back(k);
      }
      parts.offsets.push_back(parts.records.counts.size());
    }
    const RecordBatch got = shuffle_records(comm, parts, 3 * shuffle_record_bytes(2));
    RecordBatch want;
    want.width = 2;
    for (uint32_t s = 0; s < 4; ++s)
      for (uint64_t k = 1; k <= s + me + 1; ++k) {
        want.keys.push_back(1000 * s + me);
        want.keys.push_back(static_cast<uint32_t>(k));
        want.counts.push_back(k);
      }
    EXPECT_TRUE(std::equal(got.keys.begin(), got.keys.end(), want.keys.begin(), want.keys.end()));
    EXPECT_TRUE(
        std::equal(got.counts.begin(), got.counts.end(), want.counts.begin(), want.counts.end()));
  });
}

TEST(LocalGroup, MadeOnceForTheProcess) {
  std::atomic<int> made{0};
  std::vector<const int*> seen(4, nullptr);
  on_ranks(4, [&](Comm& comm) {
    auto v = comm.made_once<int>("answer", [&] {
      ++made;
      return 42;
    });
    EXPECT_EQ(*v, 42);
    seen[comm.rank()] = v.get();
    comm.barrier();
    EXPECT_THROW(comm.made_once<int>("broken", []() -> int { throw InputError("unreadable"); }),
                 InputError);
  });
  EXPECT_EQ(made.load(), 1);
  for (const int* p : seen) EXPECT_EQ(p, seen[0]);
}

TEST(LocalGroup, AbandonedGroupReleasesTheOthers) {
  std::atomic<int> aborted{0};
  const auto failures = run_in_process_ranks(3, [&](Comm& comm) {
    if (comm.rank() == 1) throw InputError("rank 1 failed on its own");
    try {
      comm.barrier();  // rank 1 never arrives
    } catch (const LocalGroupAborted&) {
      ++aborted;
      throw;
    }
  });
  EXPECT_EQ(aborted.load(), 2);
  ASSERT_EQ(failures.size(), 3u);
  EXPECT_THROW(std::rethrow_exception(failures[1]), InputError);
  EXPECT_THROW(std::rethrow_exception(failures[0]), LocalGroupAborted);
  EXPECT_THROW(std::rethrow_exception(failures[2]), LocalGroupAborted);
}

TEST(LocalGroup, CollectiveErrorsStayCollective) {
  const auto failures = run_in_process_ranks(3, [&](Comm& comm) {
    run_collectively(comm, [&] {
      if (comm.rank() == 2) throw InputError("only rank 2 sees it");
    });
  });
  for (const auto& f : failures) {
    ASSERT_TRUE(f);
    EXPECT_THROW(std::rethrow_exception(f), CollectiveError);
  }
}

TEST(LocalGroup, ExceptionInsideACollectiveFailsTheGroup) {
  // Allreduce of different lengths: the checking rank throws inside the collective, and no rank
  // is left waiting.
  const auto failures = run_in_process_ranks(2, [&](Comm& comm) {
    std::vector<uint64_t> v(static_cast<size_t>(comm.rank() + 1), 1);
    comm.allreduce(v, ReduceOp::kSum);
    comm.barrier();
  });
  int internal = 0;
  for (const auto& f : failures) {
    ASSERT_TRUE(f);
    try {
      std::rethrow_exception(f);
    } catch (const LocalGroupAborted&) {
    } catch (const InternalError&) {
      ++internal;
    }
  }
  EXPECT_GE(internal, 1);
}

}  // namespace
}  // namespace gtadoc
