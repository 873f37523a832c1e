// concatenate(): batches in order, one copy, independent of the thread count.
#include "worker/records.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gtadoc
