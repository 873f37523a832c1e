// Golden values and properties of the key hash (common/hash.h). The golden values decide which
// rank owns which key: they must never change.
#include "common/hash.h"

#include <gtest/gtest.h>

#include <bit>
#include <vector>

namespace gtadoc {
namespace {

uint64_t h(std::vector<uint32_t> v) {
  return hash_u32s(v);
}

TEST(Hash, GoldenValues) {
  EXPECT_EQ(h({}), 0x6b4d49123624120fULL);
  EXPECT_EQ(h({0}), 0x2fbeb173915a7886ULL);
  EXPECT_EQ(h({1}), 0x8800eeb8402ee9abULL);
  EXPECT_EQ(h({0, 0}), 0x06ec20c0d490d92dULL);
  EXPECT_EQ(h({1, 2}), 0x65aca1c3b152ac84ULL);
  EXPECT_EQ(h({2, 1}), 0x8638d5d43eac9c18ULL);
  EXPECT_EQ(h({1, 2, 3}), 0x79035d535b74903aULL);
  EXPECT_EQ(h({0xFFFFFFFFu}), 0xbf3c518314852be1ULL);
  EXPECT_EQ(h({42, 7, 1000000, 3, 9}), 0x6b3145815426468bULL);
  EXPECT_EQ(h({1, 2, 3, 4, 5, 6, 7, 8, 9}), 0x2430eb9f4d2f823fULL);
  const std::vector<uint32_t> one_two = {1, 2};
  EXPECT_EQ(hash_u32s(one_two, 7), 0xc0f8a31c850cefd6ULL);
  EXPECT_EQ(mix64(1), 0xca009717f87d8879ULL);
}

TEST(Hash, IsConstexpr) {
  static_assert(hash_u32(1) == 0x8800eeb8402ee9abULL);
  static_assert(mix64(0) == 0);
}

TEST(Hash, SingleValueOverloadMatches) {
  for (uint32_t v : {0u, 1u, 17u, 123456789u, 0xFFFFFFFFu}) EXPECT_EQ(hash_u32(v), h({v}));
}

TEST(Hash, OrderAndLengthMatter) {
  EXPECT_NE(h({1, 2}), h({2, 1}));
  EXPECT_NE(h({5}), h({5, 0}));
  EXPECT_NE(h({0}), h({}));
  EXPECT_NE(h({1, 2, 3}), h({1, 2, 3, 0}));
  const std::vector<uint32_t> v = {3, 4};
  EXPECT_NE(hash_u32s(v, 1), hash_u32s(v, 2));
}

TEST(Hash, SpreadsConsecutiveIdsEvenly) {
  for (uint32_t parts : {2u, 3u, 7u, 16u}) {
    std::vector<int> bins(parts, 0);
    const int n = 70000;
    for (int i = 0; i < n; ++i) ++bins[hash_u32(static_cast<uint32_t>(i)) % parts];
    for (int c : bins) {
      EXPECT_GT(c, n / static_cast<int>(parts) * 9 / 10);
      EXPECT_LT(c, n / static_cast<int>(parts) * 11 / 10);
    }
  }
}

TEST(Hash, FlippingAnInputBitFlipsAboutHalfTheOutput) {
  int total = 0, trials = 0;
  for (uint32_t v = 1; v < 200; ++v) {
    for (int bit = 0; bit < 32; ++bit) {
      total += std::popcount(hash_u32(v) ^ hash_u32(v ^ (1u << bit)));
      ++trials;
    }
  }
  const double mean = static_cast<double>(total) / trials;
  EXPECT_GT(mean, 30.0);
  EXPECT_LT(mean, 34.0);
}

}  // namespace
}  // namespace gtadoc
