// common/big_alloc.h: large blocks freed go to a bounded cache and come back to an allocation of
// a similar size with their contents intact (no zero fill is promised); a block larger than
// twice the request is not taken; capacity 0 keeps nothing; the cache never holds more than its
// capacity.
#include "common/big_alloc.h"

#include <gtest/gtest.h>

#include <cstring>

namespace gtadoc {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

class BigBlock : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = big_block::capacity();
    big_block::set_capacity(0);  // empty
    big_block::set_capacity(64 * kMiB);
  }
  void TearDown() override { big_block::set_capacity(saved_); }
  uint64_t saved_ = 0;
};

TEST_F(BigBlock, AFreedBlockServesTheNextAllocationOfItsSize) {
  void* a = big_block::acquire(8 * kMiB);
  std::memset(a, 0x5a, 8 * kMiB);
  big_block::release(a, 8 * kMiB);
  EXPECT_EQ(big_block::held(), 8 * kMiB);
  void* b = big_block::acquire(7 * kMiB + 5);  // rounds to the same 8 MiB
  EXPECT_EQ(b, a);
  EXPECT_EQ(static_cast<unsigned char*>(b)[8 * kMiB - 1], 0x5a);  // the pages were kept
  EXPECT_EQ(big_block::held(), 0u);
  big_block::release(b, 7 * kMiB + 5);
}

TEST_F(BigBlock, ALargerBlockIsTrimmedAndAMuchLargerOneIsNotTaken) {
  void* a = big_block::acquire(12 * kMiB);
  big_block::release(a, 12 * kMiB);
  void* b = big_block::acquire(8 * kMiB);  // 12 <= 2 x 8: taken, its tail unmapped
  EXPECT_EQ(b, a);
  EXPECT_EQ(big_block::held(), 0u);
  std::memset(b, 1, 8 * kMiB);
  big_block::release(b, 8 * kMiB);
  void* c = big_block::acquire(4 * kMiB);  // 8 <= 2 x 4: taken
  EXPECT_EQ(c, a);
  big_block::release(c, 4 * kMiB);
  void* d = big_block::acquire(40 * kMiB);  // nothing cached is that large
  EXPECT_EQ(big_block::held(), 4 * kMiB);
  big_block::release(d, 40 * kMiB);
  big_block::set_capacity(64 * kMiB);
  void* e = big_block::acquire(16 * kMiB);  // 40 MiB > 2 x 16: left in the cache
  EXPECT_NE(e, d);
  big_block::release(e, 16 * kMiB);
}

TEST_F(BigBlock, TheCacheKeepsWithinItsCapacityOldestFirst) {
  big_block::set_capacity(20 * kMiB);
  void* a = big_block::acquire(8 * kMiB);
  void* b = big_block::acquire(8 * kMiB);
  void* c = big_block::acquire(8 * kMiB);
  big_block::release(a, 8 * kMiB);
  big_block::release(b, 8 * kMiB);
  big_block::release(c, 8 * kMiB);  // 24 MiB > 20: `a` goes back to the system
  EXPECT_EQ(big_block::held(), 16 * kMiB);
  big_block::set_capacity(0);
  EXPECT_EQ(big_block::held(), 0u);
  void* d = big_block::acquire(8 * kMiB);
  big_block::release(d, 8 * kMiB);
  EXPECT_EQ(big_block::held(), 0u);  // capacity 0: nothing kept
}

TEST_F(BigBlock, VectorsOnHugePagesReuseBlocks) {
  const void* first = nullptr;
  {
    UninitVector<uint64_t> v(2 * kMiB);  // 16 MiB
    v[0] = 7;
    first = v.data();
  }
  UninitVector<uint64_t> w;
  w.resize(2 * kMiB);
  EXPECT_EQ(static_cast<const void*>(w.data()), first);
  BigVector<uint32_t> z(5 * kMiB);  // value-initialized whatever block it gets
  for (size_t i = 0; i < z.size(); i += 4096) ASSERT_EQ(z[i], 0u);
}

}  // namespace
}  // namespace gtadoc
