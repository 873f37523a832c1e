// concatenate(): batches in order, one copy, independent of the thread count. merge_increasing():
// the sum of the batches' counts per key, keys increasing, for 0 to many batches of every width.
#include "worker/records.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "common/error.h"

namespace gtadoc {
namespace {

RecordBatch batch(std::mt19937& rng, size_t n, uint32_t width) {
  RecordBatch b;
  b.width = width;
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t c = 0; c < width; ++c) b.keys.push_back(rng());
    b.counts.push_back(rng());
  }
  return b;
}

TEST(Records, ConcatenateKeepsOrderAcrossThreadCounts) {
  std::mt19937 rng(5);
  for (unsigned threads : {1u, 4u}) {
    std::vector<RecordBatch> parts, copy;
    for (size_t n : {0, 1, 31, 32, 33, 5000, 0, 70000}) parts.push_back(batch(rng, n, 3));
    copy = parts;
    RecordBatch want;
    want.width = 3;
    for (const auto& p : parts) want.append(p);
    const RecordBatch got = concatenate(std::move(copy), 3, threads);
    EXPECT_EQ(got.width, 3u);
    EXPECT_EQ(got.keys, want.keys);
    EXPECT_EQ(got.counts, want.counts);
  }
  EXPECT_EQ(concatenate({}, 2, 1).size(), 0u);
  std::vector<RecordBatch> mixed;
  mixed.push_back(batch(rng, 3, 2));
  mixed.push_back(batch(rng, 3, 1));
  EXPECT_THROW(concatenate(std::move(mixed), 2, 1), InternalError);
}

TEST(Records, MergeIncreasingSumsEqualKeysOfAnyNumberOfBatches) {
  std::mt19937 rng(7);
  for (uint32_t width : {1u, 2u, 3u}) {
    for (size_t k : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}}) {
      std::map<std::vector<uint32_t>, uint64_t> want;
      std::vector<RecordBatch> in(k);
      for (RecordBatch& b : in) {
        b.width = width;
        std::map<std::vector<uint32_t>, uint64_t> mine;  // keys from a small range: many shared
        const size_t n = rng() % 50;
        for (size_t i = 0; i < n; ++i) {
          std::vector<uint32_t> key(width);
          for (uint32_t& c : key) c = rng() % 6;
          mine[key] += 1 + rng() % 1000;
        }
        for (const auto& [key, count] : mine) {
          b.keys.insert(b.keys.end(), key.begin(), key.end());
          b.counts.push_back(count);
          want[key] += count;
        }
      }
      const RecordBatch got = merge_increasing(std::move(in), width);
      ASSERT_EQ(got.width, width);
      ASSERT_EQ(got.size(), want.size()) << "width " << width << ", " << k << " batches";
      EXPECT_TRUE(keys_increasing(got));
      size_t i = 0;
      for (const auto& [key, count] : want) {
        EXPECT_EQ(std::vector<uint32_t>(got.key(i).begin(), got.key(i).end()), key);
        EXPECT_EQ(got.counts[i], count);
        ++i;
      }
    }
  }
}

}  // namespace
}  // namespace gtadoc
