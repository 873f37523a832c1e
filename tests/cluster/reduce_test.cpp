// reduce_records against a std::map reference on seeded random inputs.
#include "cluster/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace gtadoc {
namespace {

// `key_range` small -> many duplicates; `high_bits` spreads values over all 32 bits.
RecordBatch random_batch(uint64_t seed, size_t n, uint32_t width, uint32_t key_range,
                         bool high_bits) {
  std::mt19937_64 rng(seed);
  RecordBatch b;
  b.width = width;
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t c = 0; c < width; ++c) {
      uint32_t v = static_cast<uint32_t>(rng() % key_range);
      if (high_bits) v = v * 0x9e3779b1u;  // bijective scramble over u32
      b.keys.push_back(v);
    }
    b.counts.push_back(rng() % 1000000 + 1);
  }
  return b;
}

RecordBatch reference(const RecordBatch& in) {
  std::map<std::vector<uint32_t>, uint64_t> sums;
  for (size_t i = 0; i < in.size(); ++i) {
    auto k = in.key(i);
    sums[std::vector<uint32_t>(k.begin(), k.end())] += in.counts[i];
  }
  RecordBatch out;
  out.width = in.width;
  for (const auto& [k, c] : sums) out.push(k, c);
  return out;
}

void expect_same(const RecordBatch& got, const RecordBatch& want) {
  ASSERT_EQ(got.width, want.width);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.keys, want.keys);
  ASSERT_EQ(got.counts, want.counts);
}

TEST(Reduce, MatchesMapOnRandomInputsOfWidths1To9) {
  uint64_t seed = 1;
  for (uint32_t width = 1; width <= 9; ++width) {
    for (size_t n : {0u, 1u, 2u, 31u, 33u, 1000u, 20000u}) {
      for (uint32_t key_range : {3u, 50u, 1u << 20}) {
        for (bool high : {false, true}) {
          SCOPED_TRACE(testing::Message() << "width=" << width << " n=" << n
                                          << " range=" << key_range << " high=" << high);
          const RecordBatch in = random_batch(seed++, n, width, key_range, high);
          const RecordBatch want = reference(in);
          RecordBatch got = in;
          reduce_records(got, 1);
          expect_same(got, want);
        }
      }
    }
  }
}

TEST(Reduce, ParallelPathMatchesReference) {
  uint64_t seed = 1000;
  for (uint32_t width : {1u, 2u, 3u, 4u, 5u, 9u}) {
    for (uint32_t key_range : {7u, 1u << 30}) {
      SCOPED_TRACE(testing::Message() << "width=" << width << " range=" << key_range);
      const RecordBatch in = random_batch(seed++, 100000, width, key_range, key_range > 1000);
      const RecordBatch want = reference(in);
      for (unsigned threads : {0u, 2u, 4u, 7u}) {
        RecordBatch got = in;
        reduce_records(got, threads);
        expect_same(got, want);
      }
    }
  }
}

TEST(Reduce, OneHugeGroupAndSortedInputs) {
  RecordBatch in = random_batch(5, 1000, 3, 100, false);
  for (int i = 0; i < 200000; ++i) in.push(std::vector<uint32_t>{4, 4, 4}, 2);
  const RecordBatch want = reference(in);
  RecordBatch got = in;
  reduce_records(got, 4);
  expect_same(got, want);

  RecordBatch sorted = want;  // already reduced: reducing again changes nothing
  reduce_records(sorted, 3);
  expect_same(sorted, want);

  RecordBatch reversed;
  reversed.width = want.width;
  for (size_t i = want.size(); i-- > 0;) reversed.push(want.key(i), want.counts[i]);
  reduce_records(reversed, 2);
  expect_same(reversed, want);
}

TEST(Reduce, UnsignedOrderAndExtremeValues) {
  RecordBatch in;
  in.width = 2;
  in.push(std::vector<uint32_t>{0xFFFFFFFFu, 0}, 1);
  in.push(std::vector<uint32_t>{0x80000000u, 5}, 2);
  in.push(std::vector<uint32_t>{0, 0xFFFFFFFFu}, 3);
  in.push(std::vector<uint32_t>{0xFFFFFFFFu, 0}, 4);
  in.push(std::vector<uint32_t>{0, 0}, 5);
  reduce_records(in, 1);
  EXPECT_EQ(in.keys, (KeyVector{0, 0, 0, 0xFFFFFFFFu, 0x80000000u, 5, 0xFFFFFFFFu, 0}));
  EXPECT_EQ(in.counts, (CountVector{5, 3, 2, 5}));
}

/// Keys of 2 to 4 values are sorted whole, by buckets of their highest varying bits, each bucket
/// then digit by digit (reduce_wide_keys): most keys share their first values, so one bucket holds
/// nearly all of them and the bits that tell them apart are deep in the last value.
TEST(Reduce, WideKeysWithOneCrowdedBucketAndDeepDifferences) {
  std::mt19937_64 rng(77);
  for (uint32_t width : {2u, 3u, 4u}) {
    RecordBatch in;
    in.width = width;
    for (size_t i = 0; i < 120000; ++i) {
      std::vector<uint32_t> k(width, 0xABCDu);
      if (rng() % 10 == 0) k[0] = static_cast<uint32_t>(rng());       // a few spread out
      k[width - 1] = static_cast<uint32_t>(rng() % 5000) * 0x10001u;  // low and high bits vary
      if (width > 2 && rng() % 3 == 0) k[1] = 0xFFFFFFFFu;
      in.push(k, rng() % 9 + 1);
    }
    const RecordBatch want = reference(in);
    for (unsigned threads : {1u, 3u, 8u}) {
      SCOPED_TRACE(testing::Message() << "width=" << width << " threads=" << threads);
      RecordBatch got = in;
      reduce_records(got, threads);
      expect_same(got, want);
    }
  }
}

/// Every record of one key (no varying bit): one record, its counts summed, on every width the
/// whole-key sort takes and every thread count.
TEST(Reduce, WideKeysAllEqual) {
  for (uint32_t width : {2u, 3u, 4u}) {
    for (unsigned threads : {1u, 3u}) {
      RecordBatch in;
      in.width = width;
      for (uint32_t i = 0; i < 50000; ++i)
        in.push(std::vector<uint32_t>(width, 0xC0FFEEu), i % 7 + 1);
      const RecordBatch want = reference(in);
      reduce_records(in, threads);
      SCOPED_TRACE(testing::Message() << "width=" << width << " threads=" << threads);
      expect_same(in, want);
    }
  }
}

TEST(Reduce, CountsAreExact64Bit) {
  RecordBatch in;
  in.push(std::vector<uint32_t>{1}, uint64_t{1} << 62);
  in.push(std::vector<uint32_t>{1}, uint64_t{1} << 62);
  in.push(std::vector<uint32_t>{1}, 7);
  reduce_records(in, 1);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in.counts[0], (uint64_t{1} << 63) + 7);
}

}  // namespace
}  // namespace gtadoc

namespace gtadoc {
namespace {

// Inputs made of a few strictly increasing runs (what a rank receives from ranks whose records
// were already reduced) take the merge path; inputs already reduced return as they are. Both must
// equal the reference, with equal keys across runs summed, on the serial and parallel paths.
TEST(Reduce, FewSortedRunsAndAlreadyReducedInputs) {
  for (uint32_t width : {1u, 3u}) {
    for (size_t runs : {1u, 2u, 17u, 64u, 65u, 256u, 257u}) {
      for (size_t per_run : {size_t{50}, size_t{40000}}) {
        if (runs > 65 && per_run > 50) continue;  // the reference's map is slow
        RecordBatch in;
        in.width = width;
        for (size_t r = 0; r < runs; ++r) {
          RecordBatch run = random_batch(1000 * r + width, per_run, width, 300, r % 2 == 1);
          reduce_records(run, 1);  // strictly increasing keys
          in.append(run);
        }
        const RecordBatch want = reference(in);
        for (unsigned threads : {1u, 4u}) {
          RecordBatch got = in;
          reduce_records(got, threads);
          SCOPED_TRACE("width " + std::to_string(width) + " runs " + std::to_string(runs) +
                       " per run " + std::to_string(per_run) + " threads " +
                       std::to_string(threads));
          expect_same(got, want);
        }
      }
    }
  }
}

// Runs large enough that the merge gives the input's pages back as it goes (arrays of 4 MiB and
// more, pieces of ~1 M records): the output must still equal the reference, with keys equal
// across runs summed, on every thread count (a page given back too early reads as zeros).
TEST(Reduce, LargeSortedRunsGiveTheirPagesBackAndStayExact) {
  for (uint32_t width : {1u, 4u}) {
    RecordBatch in;
    in.width = width;
    for (size_t r = 0; r < 7; ++r) {
      RecordBatch run = random_batch(77 * r + width, 500000, width, 1u << 20, r % 2 == 0);
      reduce_records(run, 2);  // strictly increasing keys
      in.append(run);
    }
    ASSERT_GE(in.keys.size() * sizeof(uint32_t), size_t{4} << 20);
    // The reference: every record's key and count, sorted, equal keys summed.
    std::vector<size_t> order(in.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const uint32_t w = width;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::lexicographical_compare(in.keys.begin() + a * w, in.keys.begin() + (a + 1) * w,
                                          in.keys.begin() + b * w, in.keys.begin() + (b + 1) * w);
    });
    RecordBatch want;
    want.width = w;
    for (size_t i : order) {
      const std::span<const uint32_t> k = in.key(i);
      if (want.size() > 0 && std::equal(k.begin(), k.end(), want.keys.end() - w))
        want.counts.back() += in.counts[i];
      else
        want.push(k, in.counts[i]);
    }
    for (unsigned threads : {1u, 2u, 5u}) {
      SCOPED_TRACE("width " + std::to_string(width) + " threads " + std::to_string(threads));
      RecordBatch got = in;
      reduce_records(got, threads);
      expect_same(got, want);
    }
  }
}

}  // namespace
}  // namespace gtadoc
