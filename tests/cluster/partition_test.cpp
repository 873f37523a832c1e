// Property tests of hash and range partitioning and of sampled range splitters (single rank).
#include "cluster/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "cluster/comm.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/settings.h"

namespace gtadoc {
namespace {

Comm& local_comm() {
  ::setenv("GTADOC_MPI", "0", 1);  // a single local rank, whatever the environment says
  settings::reread_for_tests();
  static int argc = 1;
  static char name[] = "partition_test";
  static char* args[] = {name, nullptr};
  static char** argv = args;
  return Comm::init(argc, argv);
}

RecordBatch random_batch(uint64_t seed, size_t n, uint32_t width, uint32_t key_range) {
  std::mt19937_64 rng(seed);
  RecordBatch b;
  b.width = width;
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t c = 0; c < width; ++c) b.keys.push_back(static_cast<uint32_t>(rng() % key_range));
    b.counts.push_back(rng() % 1000 + 1);
  }
  return b;
}

// Checks every guarantee of partition_records against a direct reference: partition p must be
// exactly the input rows whose owner is p, in input order.
void check_partition(const RecordBatch& in, const KeyLayout& layout, uint32_t parts,
                     std::span<const uint32_t> splitters) {
  const PartitionedRecords out = partition_records(in, layout, parts, splitters);
  ASSERT_EQ(out.offsets.size(), parts + 1u);
  ASSERT_EQ(out.parts(), parts);
  EXPECT_EQ(out.offsets.front(), 0u);
  EXPECT_EQ(out.offsets.back(), in.size());
  EXPECT_TRUE(std::is_sorted(out.offsets.begin(), out.offsets.end()));
  ASSERT_EQ(out.records.width, in.width);
  ASSERT_EQ(out.records.size(), in.size());
  ASSERT_EQ(out.records.keys.size(), in.keys.size());

  std::vector<uint32_t> owner(in.size());
  for (size_t i = 0; i < in.size(); ++i) owner[i] = owner_of(in.key(i), layout, parts, splitters);
  size_t row = 0;
  for (uint32_t p = 0; p < parts; ++p) {
    ASSERT_EQ(row, out.offsets[p]);
    for (size_t i = 0; i < in.size(); ++i) {
      if (owner[i] != p) continue;
      ASSERT_LT(row, out.offsets[p + 1]) << "partition " << p << " too small";
      const auto got = out.records.key(row);
      const auto want = in.key(i);
      ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
          << "row " << row << " of partition " << p;
      ASSERT_EQ(out.records.counts[row], in.counts[i]);
      if (layout.range_partition && parts > 1) {
        if (p > 0) {
          EXPECT_GE(got[0], splitters[p - 1]);
        }
        if (p + 1 < parts) {
          EXPECT_LT(got[0], splitters[p]);
        }
      } else if (parts > 1) {
        EXPECT_EQ(hash_u32s(got.first(layout.partition_width)) % parts, p);
      }
      ++row;
    }
  }
  EXPECT_EQ(row, in.size());
}

std::vector<uint32_t> even_splitters(uint32_t parts, uint32_t key_range) {
  std::vector<uint32_t> s;
  for (uint32_t p = 1; p < parts; ++p) {
    s.push_back(static_cast<uint32_t>(uint64_t{key_range} * p / parts));
  }
  return s;
}

TEST(Partition, HashPropertiesAcrossSizesWidthsAndParts) {
  uint64_t seed = 1;
  for (size_t n : {0u, 1u, 31u, 32u, 33u, 65u, 1000u}) {
    for (uint32_t width : {1u, 2u, 3u, 5u}) {
      for (uint32_t pw = 1; pw <= width; pw += 2) {
        for (uint32_t parts : {1u, 2u, 3u, 4u, 7u}) {
          SCOPED_TRACE(testing::Message()
                       << "n=" << n << " width=" << width << " pw=" << pw << " parts=" << parts);
          const RecordBatch in = random_batch(seed++, n, width, 50);
          check_partition(in, KeyLayout{width, pw, false}, parts, {});
        }
      }
    }
  }
}

TEST(Partition, RangePropertiesAcrossSizesAndParts) {
  uint64_t seed = 100;
  for (size_t n : {0u, 1u, 31u, 32u, 33u, 65u, 1000u}) {
    for (uint32_t parts : {1u, 2u, 3u, 4u, 7u}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " parts=" << parts);
      const RecordBatch in = random_batch(seed++, n, 1, 1000);
      const auto s = even_splitters(parts, 1000);
      check_partition(in, KeyLayout{1, 1, true}, parts, s);
    }
  }
}

TEST(Partition, LargeBatch) {
  const RecordBatch in = random_batch(7, 100000, 3, 1u << 20);
  check_partition(in, KeyLayout{3, 3, false}, 5, {});
  check_partition(in, KeyLayout{3, 1, false}, 4, {});
  RecordBatch w1 = random_batch(8, 100000, 1, 1u << 30);
  const auto s = even_splitters(6, 1u << 30);
  check_partition(w1, KeyLayout{1, 1, true}, 6, s);
}

TEST(Partition, AllEqualKeysLandInOnePartition) {
  RecordBatch in;
  in.width = 2;
  for (int i = 0; i < 500; ++i) in.push(std::vector<uint32_t>{9, 4}, static_cast<uint64_t>(i));
  for (uint32_t parts : {2u, 3u, 8u}) {
    const PartitionedRecords out = partition_records(in, KeyLayout{2, 2, false}, parts, {});
    int nonempty = 0;
    for (uint32_t p = 0; p < parts; ++p) nonempty += out.part_size(p) > 0 ? 1 : 0;
    EXPECT_EQ(nonempty, 1);
    EXPECT_EQ(out.records.counts, in.counts);  // stable: order kept
    check_partition(in, KeyLayout{2, 2, false}, parts, {});
  }
}

TEST(Partition, OneHugeGroup) {
  RecordBatch in = random_batch(11, 2000, 2, 100);
  for (int i = 0; i < 30000; ++i) in.push(std::vector<uint32_t>{77, 5}, 1);
  std::shuffle(in.counts.begin(), in.counts.end(), std::mt19937_64(3));  // counts only
  check_partition(in, KeyLayout{2, 1, false}, 4, {});
  const auto s = even_splitters(4, 100);
  check_partition(in, KeyLayout{2, 1, true}, 4, s);
}

TEST(Partition, RangeWithEqualAndExtremeSplitters) {
  const RecordBatch in = random_batch(12, 500, 1, 10);
  const std::vector<uint32_t> equal = {5, 5, 5};
  check_partition(in, KeyLayout{1, 1, true}, 4, equal);
  const std::vector<uint32_t> extreme = {0, 0xFFFFFFFFu};
  check_partition(in, KeyLayout{1, 1, true}, 3, extreme);
  RecordBatch top;
  top.push(std::vector<uint32_t>{0xFFFFFFFFu}, 1);
  top.push(std::vector<uint32_t>{0}, 2);
  const auto out = partition_records(top, KeyLayout{1, 1, true}, 3, extreme);
  EXPECT_EQ(out.offsets, (std::vector<size_t>{0, 0, 1, 2}));
}

TEST(Partition, RejectsBadArguments) {
  const RecordBatch in = random_batch(13, 10, 2, 10);
  EXPECT_THROW(partition_records(in, KeyLayout{3, 1, false}, 2, {}), InternalError);
  EXPECT_THROW(partition_records(in, KeyLayout{2, 0, false}, 2, {}), InternalError);
  EXPECT_THROW(partition_records(in, KeyLayout{2, 3, false}, 2, {}), InternalError);
  EXPECT_THROW(partition_records(in, KeyLayout{2, 1, false}, 0, {}), InternalError);
  const std::vector<uint32_t> one = {4};
  EXPECT_THROW(partition_records(in, KeyLayout{2, 1, true}, 3, one), InternalError);
  const std::vector<uint32_t> unsorted = {6, 2};
  EXPECT_THROW(partition_records(in, KeyLayout{2, 1, true}, 3, unsorted), InternalError);
}

TEST(RangeSplitters, SingleRankBalancedAndOrdered) {
  Comm& comm = local_comm();
  const RecordBatch in = random_batch(21, 100000, 1, 1u << 24);
  for (uint32_t parts : {2u, 3u, 4u, 16u}) {
    const auto s = choose_range_splitters(comm, in, parts);
    ASSERT_EQ(s.size(), parts - 1);
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    const auto out = partition_records(in, KeyLayout{1, 1, true}, parts, s);
    const double even = 100000.0 / parts;
    for (uint32_t p = 0; p < parts; ++p) {
      EXPECT_GT(out.part_size(p), even * 0.8) << "parts=" << parts << " p=" << p;
      EXPECT_LT(out.part_size(p), even * 1.2) << "parts=" << parts << " p=" << p;
    }
    check_partition(in, KeyLayout{1, 1, true}, parts, s);
  }
}

TEST(RangeSplitters, SkewedAndDegenerateInputs) {
  Comm& comm = local_comm();
  EXPECT_TRUE(choose_range_splitters(comm, random_batch(1, 10, 1, 5), 1).empty());
  RecordBatch empty;
  EXPECT_EQ(choose_range_splitters(comm, empty, 4), (std::vector<uint32_t>{0, 0, 0}));

  RecordBatch skew = random_batch(22, 5000, 2, 1000);
  for (int i = 0; i < 50000; ++i) skew.push(std::vector<uint32_t>{500, 1}, 1);
  const auto s = choose_range_splitters(comm, skew, 4);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  check_partition(skew, KeyLayout{2, 1, true}, 4, s);

  RecordBatch same;
  for (int i = 0; i < 100; ++i) same.push(std::vector<uint32_t>{0xFFFFFFFFu}, 1);
  const auto t = choose_range_splitters(comm, same, 3);
  ASSERT_EQ(t.size(), 2u);
  check_partition(same, KeyLayout{1, 1, true}, 3, t);
}

TEST(RangeSplitters, WideBatchUsesFirstKeyValue) {
  Comm& comm = local_comm();
  const RecordBatch in = random_batch(23, 300000, 3, 1u << 16);  // exceeds the candidate cap
  const auto s = choose_range_splitters(comm, in, 5);
  const auto out = partition_records(in, KeyLayout{3, 1, true}, 5, s);
  for (uint32_t p = 0; p < 5; ++p) {
    EXPECT_GT(out.part_size(p), 300000 / 5 * 0.8);
    EXPECT_LT(out.part_size(p), 300000 / 5 * 1.2);
  }
}

TEST(Partition, ThreadsDoNotChangeTheResult) {
  // Large enough for many blocks; hash and range layouts.
  const RecordBatch in = random_batch(77, 300000, 3, 50000);
  const std::vector<uint32_t> s = {10000, 20000, 20000, 45000};
  for (const KeyLayout layout : {KeyLayout{3, 2, false}, KeyLayout{3, 1, true}}) {
    const std::span<const uint32_t> sp =
        layout.range_partition ? std::span<const uint32_t>(s) : std::span<const uint32_t>();
    const auto one = partition_records(in, layout, 5, sp, 1);
    const auto many = partition_records(in, layout, 5, sp, 4);
    EXPECT_EQ(one.offsets, many.offsets);
    EXPECT_EQ(one.records.keys, many.records.keys);
    EXPECT_EQ(one.records.counts, many.records.counts);
    for (size_t i = 0; i < many.records.size(); ++i) {
      const uint32_t owner = owner_of(many.records.key(i), layout, 5, sp);
      ASSERT_GE(i, many.offsets[owner]);
      ASSERT_LT(i, many.offsets[owner + 1]);
    }
  }
}

}  // namespace
}  // namespace gtadoc
