// MPI check (run under mpirun -np 1..4): Comm helpers, the record shuffle (host records, by
// cross-memory pulls and by MPI's rounds, and
// device-resident records staged through host memory: shuffle_device_records_mpi, here with
// records in host memory behind the DeviceRecords interface) and range splitters across real
// ranks. Every rank generates seeded records; since each rank can regenerate every
// other rank's input, each rank knows exactly what it must receive. Rank 0 prints the GoogleTest
// report; other ranks print only their failures, prefixed with their rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "cluster/comm.h"
#include "cluster/device_shuffle.h"
#include "cluster/partition.h"
#include "cluster/reduce.h"
#include "cluster/shuffle.h"
#include "common/hash.h"
#include "common/settings.h"

namespace gtadoc {
namespace {

Comm& comm() {
  return Comm::world();
}

// Rank `rank`'s input: `n` records with keys drawn from [0, key_range) and counts that name
// their source and row, so every record is unique.
RecordBatch generate(int rank, uint32_t width, size_t n, uint32_t key_range, uint64_t salt) {
  std::mt19937_64 rng(salt * 1000003 + static_cast<uint64_t>(rank) * 7919 + width);
  RecordBatch b;
  b.width = width;
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t c = 0; c < width; ++c) b.keys.push_back(static_cast<uint32_t>(rng() % key_range));
    b.counts.push_back((static_cast<uint64_t>(rank) << 40) | i);
  }
  return b;
}

uint64_t fingerprint(const RecordBatch& b) {
  uint64_t sum = 0;
  for (size_t i = 0; i < b.size(); ++i) sum += mix64(hash_u32s(b.key(i)) ^ b.counts[i]);
  return sum;
}

std::vector<uint8_t> serialize(const RecordBatch& b) {
  std::vector<uint8_t> out(sizeof(uint32_t) + b.keys.size() * 4 + b.counts.size() * 8);
  std::memcpy(out.data(), &b.width, 4);
  std::memcpy(out.data() + 4, b.keys.data(), b.keys.size() * 4);
  std::memcpy(out.data() + 4 + b.keys.size() * 4, b.counts.data(), b.counts.size() * 8);
  return out;
}

RecordBatch deserialize(const std::vector<uint8_t>& bytes) {
  RecordBatch b;
  std::memcpy(&b.width, bytes.data(), 4);
  const size_t n = (bytes.size() - 4) / (4 * b.width + 8);
  b.keys.resize(n * b.width);
  b.counts.resize(n);
  std::memcpy(b.keys.data(), bytes.data() + 4, b.keys.size() * 4);
  std::memcpy(b.counts.data(), bytes.data() + 4 + b.keys.size() * 4, n * 8);
  return b;
}

std::vector<uint8_t> pattern(int rank, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(rank * 31 + i * 7);
  return v;
}

size_t pattern_size(int rank) {
  return rank == 1 ? 0 : static_cast<size_t>(rank) * 37 + 5;
}

class MessageLimit {  // lowers Comm's message size limit for one scope
 public:
  explicit MessageLimit(size_t bytes) : saved_(comm().max_message_bytes()) {
    comm().set_max_message_bytes(bytes);
  }
  ~MessageLimit() { comm().set_max_message_bytes(saved_); }

 private:
  size_t saved_;
};

TEST(Comm, Basics) {
  Comm& c = comm();
  EXPECT_TRUE(c.is_distributed());
  EXPECT_GE(c.local_size(), 1);
  EXPECT_LT(c.local_rank(), c.local_size());
  const auto ranks = c.allgather(static_cast<uint64_t>(c.rank()));
  ASSERT_EQ(ranks.size(), static_cast<size_t>(c.size()));
  for (int r = 0; r < c.size(); ++r) EXPECT_EQ(ranks[r], static_cast<uint64_t>(r));
  const uint64_t p = static_cast<uint64_t>(c.size());
  EXPECT_EQ(c.allreduce(c.rank() + 1, ReduceOp::kSum), p * (p + 1) / 2);
  EXPECT_EQ(c.allreduce(c.rank() + 1, ReduceOp::kMax), p);
  EXPECT_EQ(c.allreduce(c.rank() + 1, ReduceOp::kMin), 1u);
  std::vector<uint64_t> v = {static_cast<uint64_t>(c.rank()), 10};
  c.allreduce(v, ReduceOp::kSum);
  EXPECT_EQ(v, (std::vector<uint64_t>{p * (p - 1) / 2, 10 * p}));
  EXPECT_FALSE(c.allreduce_and(c.rank() != 0));
  EXPECT_TRUE(c.allreduce_and(true));
  EXPECT_EQ(c.allreduce_or(c.rank() == c.size() - 1), true);
  EXPECT_FALSE(c.allreduce_or(false));
  std::vector<uint64_t> send(c.size());
  for (int d = 0; d < c.size(); ++d) send[d] = static_cast<uint64_t>(c.rank()) * 100 + d;
  const auto got = c.alltoall(send);
  for (int s = 0; s < c.size(); ++s) EXPECT_EQ(got[s], static_cast<uint64_t>(s) * 100 + c.rank());
  c.barrier();
}

void check_gather_broadcast() {
  Comm& c = comm();
  const auto mine = pattern(c.rank(), pattern_size(c.rank()));
  for (int root : {0, c.size() - 1}) {
    const auto all = c.gather(mine, root);
    if (c.rank() == root) {
      ASSERT_EQ(all.size(), static_cast<size_t>(c.size()));
      for (int r = 0; r < c.size(); ++r) EXPECT_EQ(all[r], pattern(r, pattern_size(r))) << r;
    } else {
      EXPECT_TRUE(all.empty());
    }
    std::vector<uint8_t> buf = c.rank() == root ? pattern(root + 100, 1000) : pattern(5, 3);
    c.broadcast(buf, root);
    EXPECT_EQ(buf, pattern(root + 100, 1000));
    std::vector<uint8_t> empty = c.rank() == root ? std::vector<uint8_t>{} : pattern(1, 9);
    c.broadcast(empty, root);
    EXPECT_TRUE(empty.empty());
  }
  const auto every = c.allgather_bytes(mine);
  ASSERT_EQ(every.size(), static_cast<size_t>(c.size()));
  for (int r = 0; r < c.size(); ++r) EXPECT_EQ(every[r], pattern(r, pattern_size(r))) << r;
}

TEST(Comm, GatherAndBroadcast) {
  check_gather_broadcast();
}

TEST(Comm, GatherAndBroadcastInManyRounds) {
  MessageLimit limit(7);
  check_gather_broadcast();
}

template <typename T>
void check_alltoallv() {
  Comm& c = comm();
  const int p = c.size();
  std::vector<T> send;
  std::vector<size_t> counts(p);
  for (int d = 0; d < p; ++d) {
    counts[d] = static_cast<size_t>((c.rank() + 2 * d) % 5) * 3;
    for (size_t i = 0; i < counts[d]; ++i) {
      send.push_back(static_cast<T>(c.rank() * 61 + d * 7 + i));
    }
  }
  std::vector<size_t> recv_counts;
  const auto got = c.alltoallv(std::span<const T>(send), counts, &recv_counts);
  ASSERT_EQ(recv_counts.size(), static_cast<size_t>(p));
  size_t at = 0;
  for (int s = 0; s < p; ++s) {
    ASSERT_EQ(recv_counts[s], static_cast<size_t>((s + 2 * c.rank()) % 5) * 3);
    for (size_t i = 0; i < recv_counts[s]; ++i, ++at) {
      ASSERT_LT(at, got.size());
      EXPECT_EQ(got[at], static_cast<T>(s * 61 + c.rank() * 7 + i));
    }
  }
  EXPECT_EQ(at, got.size());
}

TEST(Comm, Alltoallv) {
  check_alltoallv<uint8_t>();
  check_alltoallv<uint32_t>();
  check_alltoallv<uint64_t>();
}

TEST(Comm, AlltoallvInManyRounds) {
  MessageLimit limit(10);
  check_alltoallv<uint8_t>();
  check_alltoallv<uint32_t>();
  check_alltoallv<uint64_t>();
}

// What rank `me` must receive: every source's partition `me`, in source order.
RecordBatch expected_for(int me, uint32_t width, size_t n_of_rank0, uint32_t key_range,
                         uint64_t salt, const KeyLayout& layout,
                         std::span<const uint32_t> splitters, size_t (*rows)(int, size_t)) {
  RecordBatch want;
  want.width = width;
  for (int s = 0; s < comm().size(); ++s) {
    const RecordBatch in = generate(s, width, rows(s, n_of_rank0), key_range, salt);
    const auto parts = partition_records(in, layout, comm().size(), splitters);
    for (size_t i = parts.offsets[me]; i < parts.offsets[me + 1]; ++i) {
      want.push(parts.records.key(i), parts.records.counts[i]);
    }
  }
  return want;
}

size_t same_rows(int, size_t n) {
  return n;
}
size_t rank0_only(int rank, size_t n) {
  return rank == 0 ? n : 0;
}
size_t uneven_rows(int rank, size_t n) {
  return n * (rank + 1) / 2 + static_cast<size_t>(rank);
}

// Records behind the DeviceRecords interface, in host memory: what shuffle_device_records_mpi
// asks of a GPU's records (size, allocate, ranges copied in and out), nothing else.
class HostRecords final : public DeviceRecords {
 public:
  HostRecords(uint32_t width, uint64_t n) {
    b_.width = width, b_.keys.resize(n * width), b_.counts.resize(n);
  }
  explicit HostRecords(RecordBatch b) : b_(std::move(b)) {}
  const RecordBatch& batch() const { return b_; }

  uint32_t width() const override { return b_.width; }
  uint64_t size() const override { return b_.size(); }
  int device() const override { return 0; }
  void* stream() const override { return nullptr; }
  uint32_t* keys() override { return b_.keys.data(); }
  uint64_t* counts() override { return b_.counts.data(); }
  std::unique_ptr<DeviceRecords> allocate(uint64_t n) const override {
    return std::make_unique<HostRecords>(b_.width, n);
  }
  void download_range(uint64_t first, uint64_t n, uint32_t* keys, uint64_t* counts) const override {
    EXPECT_LE(first + n, size());
    std::copy_n(b_.keys.data() + first * b_.width, n * b_.width, keys);
    std::copy_n(b_.counts.data() + first, n, counts);
  }
  void upload_range(uint64_t at, uint64_t n, const uint32_t* keys,
                    const uint64_t* counts) override {
    EXPECT_LE(at + n, size());
    std::copy_n(keys, n * b_.width, b_.keys.data() + at * b_.width);
    std::copy_n(counts, n, b_.counts.data() + at);
  }
  void copy_range(DeviceRecords& from, uint64_t first, uint64_t at, uint64_t n) override {
    download_range_of(from, first, n, b_.keys.data() + at * b_.width, b_.counts.data() + at);
  }
  RecordBatch download() const override { return b_; }

  // Not used by the shuffle.
  void map_keys(uint32_t, uint32_t, std::span<const uint32_t>) override { unused(); }
  std::vector<uint32_t> strided_first_values(uint64_t) override {
    return unused(), std::vector<uint32_t>{};
  }
  std::vector<uint64_t> partition(const KeyLayout&, uint32_t, std::span<const uint32_t>) override {
    return unused(), std::vector<uint64_t>{};
  }
  void reduce() override { unused(); }
  void keep_top_counts(uint64_t) override { unused(); }
  bool order_by_count(uint32_t, uint64_t) override { return unused(), false; }
  std::vector<uint64_t> count_order_cuts(const RecordBatch&) override {
    return unused(), std::vector<uint64_t>{};
  }
  RecordBatch rows_at(std::span<const uint64_t>) const override { return unused(), RecordBatch{}; }

 private:
  static void download_range_of(DeviceRecords& from, uint64_t first, uint64_t n, uint32_t* keys,
                                uint64_t* counts) {
    from.download_range(first, n, keys, counts);
  }
  static void unused() {
    ADD_FAILURE() << "the shuffle called a DeviceRecords operation it does not need";
  }
  RecordBatch b_;
};

void check_shuffle(uint32_t width, const KeyLayout& layout, size_t n, size_t round_bytes,
                   size_t (*rows)(int, size_t), uint64_t salt) {
  Comm& c = comm();
  const uint32_t key_range = 1000;
  const RecordBatch in = generate(c.rank(), width, rows(c.rank(), n), key_range, salt);
  const auto parts = partition_records(in, layout, c.size(), {});
  // Pulled from the other ranks' memory (cluster/cross_memory.h; every rank here shares one
  // node) and moved by MPI's rounds: the same records either way.
  setenv("GTADOC_SHUFFLE_CMA", "0", 1);
  settings::reread_for_tests();
  const RecordBatch by_mpi = shuffle_records(c, parts, round_bytes);
  // Turned off on one rank only: no rank pulls, every rank falls back to MPI together.
  if (c.rank() != 1) unsetenv("GTADOC_SHUFFLE_CMA");
  settings::reread_for_tests();
  const RecordBatch mixed = shuffle_records(c, parts, round_bytes);
  unsetenv("GTADOC_SHUFFLE_CMA");
  settings::reread_for_tests();
  const RecordBatch got = shuffle_records(c, parts, round_bytes);
  EXPECT_EQ(by_mpi.keys, got.keys);
  EXPECT_EQ(by_mpi.counts, got.counts);
  EXPECT_EQ(mixed.keys, got.keys);
  EXPECT_EQ(mixed.counts, got.counts);

  // Exactly the records this rank owns, in source order.
  const RecordBatch want = expected_for(c.rank(), width, n, key_range, salt, layout, {}, rows);
  EXPECT_EQ(got.width, width);
  EXPECT_EQ(got.keys, want.keys);
  EXPECT_EQ(got.counts, want.counts);
  {  // the same records, device-resident, staged through host memory
    HostRecords on_device(parts.records);
    const std::vector<uint64_t> offsets(parts.offsets.begin(), parts.offsets.end());
    const std::unique_ptr<DeviceRecords> owned =
        shuffle_device_records_mpi(c, on_device, offsets, round_bytes);
    const RecordBatch& staged = dynamic_cast<const HostRecords&>(*owned).batch();
    EXPECT_EQ(staged.width, width);
    EXPECT_EQ(staged.keys, want.keys);
    EXPECT_EQ(staged.counts, want.counts);
  }
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(owner_of(got.key(i), layout, c.size()), static_cast<uint32_t>(c.rank()));
  }

  // Globally: nothing lost, nothing duplicated.
  const auto sent_rows = c.allgather(in.size());
  const auto recv_rows = c.allgather(got.size());
  uint64_t sent_total = 0, recv_total = 0;
  for (int r = 0; r < c.size(); ++r) {
    sent_total += sent_rows[r];
    recv_total += recv_rows[r];
  }
  EXPECT_EQ(sent_total, recv_total);
  EXPECT_EQ(c.allreduce(fingerprint(in), ReduceOp::kSum),
            c.allreduce(fingerprint(got), ReduceOp::kSum));
  std::vector<uint64_t> ids(got.counts.begin(), got.counts.end());
  std::sort(ids.begin(), ids.end());
  EXPECT_TRUE(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
}

TEST(Shuffle, HashPartitionedManyRounds) {
  check_shuffle(1, KeyLayout{1, 1, false}, 1500, 50, same_rows, 1);
  check_shuffle(3, KeyLayout{3, 3, false}, 1200, 64, same_rows, 2);
  check_shuffle(4, KeyLayout{4, 1, false}, 900, 1, same_rows, 3);  // one record per round
}

TEST(Shuffle, SingleRoundMatchesManyRounds) {
  check_shuffle(3, KeyLayout{3, 2, false}, 5000, kDefaultShuffleRoundBytes, same_rows, 4);
  check_shuffle(3, KeyLayout{3, 2, false}, 5000, 333, same_rows, 4);
}

TEST(Shuffle, UnevenAndEmptyInputs) {
  check_shuffle(2, KeyLayout{2, 1, false}, 2000, 100, rank0_only, 5);
  check_shuffle(2, KeyLayout{2, 1, false}, 700, 100, uneven_rows, 6);
  check_shuffle(5, KeyLayout{5, 5, false}, 0, 100, same_rows, 7);
}

TEST(Shuffle, LargeRecordsWithSmallMessageLimit) {
  MessageLimit limit(64);  // Comm splits each round's Alltoallv further
  check_shuffle(9, KeyLayout{9, 9, false}, 800, 4096, same_rows, 8);
}

// Sort-style pipeline: sampled range splitters, range partition, shuffle, reduce. The
// concatenation of the ranks' results must be the global reduction in key order.
TEST(Shuffle, RangeSplittersGiveGlobalOrder) {
  Comm& c = comm();
  const uint32_t p = static_cast<uint32_t>(c.size());
  // Each rank's keys come from a different, skewed distribution.
  auto make = [](int rank) {
    std::mt19937_64 rng(4242 + static_cast<uint64_t>(rank));
    RecordBatch b;
    const size_t n = 3000 + static_cast<size_t>(rank) * 1500;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t x = rng() % 100000;
      const uint32_t key = rank % 2 == 0 ? static_cast<uint32_t>(x * x / 100000)
                                         : static_cast<uint32_t>(x + 50000 * rank);
      b.push(std::span<const uint32_t>(&key, 1), rng() % 10 + 1);
    }
    return b;
  };
  const RecordBatch in = make(c.rank());
  const KeyLayout layout{1, 1, true};
  const auto splitters = choose_range_splitters(c, in, p);
  ASSERT_EQ(splitters.size(), p - 1);
  EXPECT_TRUE(std::is_sorted(splitters.begin(), splitters.end()));
  const auto hashes = c.allgather(hash_u32s(splitters));  // same splitters everywhere
  for (uint64_t h : hashes) EXPECT_EQ(h, hashes[0]);

  const auto parts = partition_records(in, layout, p, splitters);
  RecordBatch mine = shuffle_records(c, parts, 256);
  const uint64_t received = mine.size();
  reduce_records(mine, 2);
  for (size_t i = 0; i < mine.size(); ++i) {
    const uint32_t k = mine.keys[i];
    if (c.rank() > 0) {
      EXPECT_GE(k, splitters[c.rank() - 1]);
    }
    if (c.rank() + 1 < c.size()) {
      EXPECT_LT(k, splitters[c.rank()]);
    }
  }

  // Balance: rows received per rank within 25% of the mean (plus slack for tiny inputs).
  const auto rows = c.allgather(received);
  uint64_t total = 0;
  for (uint64_t r : rows) total += r;
  for (uint64_t r : rows) EXPECT_LE(r, total / p * 5 / 4 + 64) << "received " << r;

  const auto all = c.gather(serialize(mine), 0);
  if (c.rank() == 0) {
    std::map<uint32_t, uint64_t> reference;
    for (int r = 0; r < c.size(); ++r) {
      const RecordBatch b = make(r);
      for (size_t i = 0; i < b.size(); ++i) reference[b.keys[i]] += b.counts[i];
    }
    RecordBatch joined;
    for (const auto& bytes : all) joined.append(deserialize(bytes));
    ASSERT_EQ(joined.size(), reference.size());
    size_t i = 0;
    for (const auto& [k, v] : reference) {
      ASSERT_EQ(joined.keys[i], k) << "row " << i;
      ASSERT_EQ(joined.counts[i], v) << "row " << i;
      ++i;
    }
  }
}

// Word-count-style pipeline with hash partitioning: the union of the ranks' reduced results is
// the global reduction, each key at exactly one rank.
TEST(Shuffle, HashPipelineEqualsGlobalReduction) {
  Comm& c = comm();
  const KeyLayout layout{2, 1, false};
  auto make = [](int rank) {
    RecordBatch b = generate(rank, 2, 4000, 300, 99);
    for (auto& count : b.counts) count = count % 13 + 1;
    return b;
  };
  const auto parts = partition_records(make(c.rank()), layout, c.size(), {});
  RecordBatch mine = shuffle_records(c, parts, 1000);
  reduce_records(mine, 0);
  const auto all = c.gather(serialize(mine), c.size() - 1);
  if (c.rank() == c.size() - 1) {
    std::map<std::vector<uint32_t>, uint64_t> reference;
    for (int r = 0; r < c.size(); ++r) {
      const RecordBatch b = make(r);
      for (size_t i = 0; i < b.size(); ++i) {
        reference[std::vector<uint32_t>(b.key(i).begin(), b.key(i).end())] += b.counts[i];
      }
    }
    std::map<std::vector<uint32_t>, uint64_t> merged;
    for (int r = 0; r < c.size(); ++r) {
      const RecordBatch b = deserialize(all[r]);
      for (size_t i = 0; i < b.size(); ++i) {
        std::vector<uint32_t> k(b.key(i).begin(), b.key(i).end());
        EXPECT_EQ(owner_of(k, layout, c.size()), static_cast<uint32_t>(r));
        EXPECT_TRUE(merged.emplace(k, b.counts[i]).second) << "key at two ranks";
      }
    }
    EXPECT_EQ(merged, reference);
  }
}

// Prints failed assertions of a non-root rank, prefixed with the rank.
class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace gtadoc

int main(int argc, char** argv) {
  gtadoc::Comm& comm = gtadoc::Comm::init(argc, argv);
  testing::InitGoogleTest(&argc, argv);
  if (comm.rank() != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new gtadoc::RankFailurePrinter(comm.rank()));
  }
  const int rc = RUN_ALL_TESTS();
  const bool ok = comm.allreduce_and(rc == 0);
  if (comm.rank() == 0) {
    std::printf("shuffle_check: %d rank(s), %s\n", comm.size(), ok ? "PASSED" : "FAILED");
  }
  comm.finalize();
  return ok ? 0 : 1;
}
