// recycled:: hands a given-back array's memory to the next take() of a similar size, keeps at
// most its capacity, and ignores small arrays.
#include "common/recycled_arrays.h"

#include <gtest/gtest.h>

#include <vector>

namespace gtadoc {
namespace {

struct Clean {
  Clean() { recycled::clear(); }
  ~Clean() {
    recycled::clear();
    recycled::set_capacity(uint64_t{1} << 30);
  }
};

TEST(RecycledArrays, TakeGetsTheMemoryOfAGivenArrayOfASimilarSize) {
  Clean clean;
  const size_t n = size_t{1} << 20;  // 4 MiB
  EXPECT_EQ(recycled::take(n).capacity(), 0u);
  std::vector<uint32_t> v(n, 7);
  const uint32_t* memory = v.data();
  recycled::give(std::move(v));
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(recycled::held(), n * sizeof(uint32_t));
  EXPECT_EQ(recycled::take(2 * n + 1).capacity(), 0u);  // too small for it
  EXPECT_EQ(recycled::take(n / 2 - 1).capacity(), 0u);  // more than twice what is asked
  std::vector<uint32_t> back = recycled::take(n - 5);
  EXPECT_EQ(back.data(), memory);
  EXPECT_TRUE(back.empty());
  EXPECT_GE(back.capacity(), n);
  EXPECT_EQ(recycled::held(), 0u);
  EXPECT_EQ(recycled::take(n).capacity(), 0u);  // taken once only
}

TEST(RecycledArrays, SmallArraysAndTheCapacity) {
  Clean clean;
  recycled::give(std::vector<uint32_t>(1000, 1));
  EXPECT_EQ(recycled::held(), 0u);
  const size_t n = size_t{1} << 19;                      // 2 MiB each
  recycled::set_capacity(5 * n * sizeof(uint32_t) / 2);  // room for two
  for (int i = 0; i < 3; ++i) recycled::give(std::vector<uint32_t>(n, 1));
  EXPECT_EQ(recycled::held(), 2 * n * sizeof(uint32_t));  // the oldest went
  recycled::clear();
  EXPECT_EQ(recycled::held(), 0u);
}

TEST(RecycledArrays, SixtyFourBitArraysAreKeptApartAndShareTheCapacity) {
  Clean clean;
  const size_t n = size_t{1} << 19;  // 4 MiB of uint64
  std::vector<uint64_t> wide(n, 9);
  const uint64_t* memory = wide.data();
  recycled::give(std::move(wide));
  EXPECT_EQ(recycled::held(), n * sizeof(uint64_t));
  EXPECT_EQ(recycled::take<uint32_t>(2 * n).capacity(), 0u);  // not handed to the other type
  std::vector<uint64_t> back = recycled::take<uint64_t>(n);
  EXPECT_EQ(back.data(), memory);
  EXPECT_EQ(recycled::held(), 0u);

  recycled::set_capacity(3 * n * sizeof(uint64_t));  // 12 MiB: a 4 MiB and an 8 MiB array fit
  recycled::give(std::move(back));                   // 4 MiB, uint64
  recycled::give(std::vector<uint32_t>(2 * n, 1));   // 4 MiB, uint32
  recycled::give(std::vector<uint32_t>(2 * n, 1));   // 4 MiB more: 12 MiB held
  EXPECT_EQ(recycled::held(), 3 * n * sizeof(uint64_t));
  recycled::give(std::vector<uint64_t>(n, 1));  // over: the oldest arrays go until it fits
  EXPECT_EQ(recycled::held(), 3 * n * sizeof(uint64_t));
  EXPECT_GE(recycled::take<uint64_t>(n).capacity(), n);
}

TEST(RecycledArrays, AtMostMaxArraysOfEachType) {
  Clean clean;
  const size_t n = recycled::kMinBytes / sizeof(uint32_t);  // the smallest kept
  for (size_t i = 0; i < recycled::kMaxArrays + 3; ++i) recycled::give(std::vector<uint32_t>(n, 1));
  recycled::give(std::vector<uint64_t>(n / 2, 1));  // the other type is counted apart
  EXPECT_EQ(recycled::held(), (recycled::kMaxArrays + 1) * n * sizeof(uint32_t));
  std::vector<std::vector<uint32_t>> back;
  for (size_t i = 0; i < recycled::kMaxArrays; ++i) back.push_back(recycled::take(n));
  EXPECT_EQ(recycled::take(n).capacity(), 0u);  // three went
  for (const auto& v : back) EXPECT_GE(v.capacity(), n);
  EXPECT_EQ(recycled::held(), n * sizeof(uint32_t));  // the uint64 array
  EXPECT_EQ(recycled::take(n - 1).capacity(), 0u);
  recycled::give(std::vector<uint32_t>(n - 1, 1));  // below kMinBytes: freed at once
  EXPECT_EQ(recycled::held(), n * sizeof(uint32_t));
}

}  // namespace
}  // namespace gtadoc
