// keep_freed_blocks (common/malloc_tuning.h): applied by default, left alone when the setting
// says 0 or GLIBC_TUNABLES sets the allocator's own; once applied, a block of a few MiB comes
// from the allocator's heap (reused after a free), not from a mapping of its own.
#include "common/malloc_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tests/testutil/scoped_env.h"

namespace gtadoc {
namespace {

using testutil::ScopedEnv;

TEST(MallocTuning, AppliedUnlessTurnedOffOrTheTunablesSetTheAllocator) {
#if defined(__GLIBC__)
  {
    ScopedEnv off("GTADOC_MALLOC_KEEP", "0");
    EXPECT_FALSE(keep_freed_blocks());
  }
  {
    ScopedEnv tunables("GLIBC_TUNABLES", "glibc.malloc.arena_max=2");
    EXPECT_FALSE(keep_freed_blocks());
  }
  {
    ScopedEnv other("GLIBC_TUNABLES", "glibc.rtld.nns=2");
    ScopedEnv on("GTADOC_MALLOC_KEEP", std::nullopt);
    EXPECT_TRUE(keep_freed_blocks());
  }
  // glibc marks a chunk with a mapping of its own by bit 1 of the size word before it.
  constexpr size_t kBytes = size_t{8} << 20;
  void* block = std::malloc(kBytes);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBytes);
  size_t size_word = 0;
  std::memcpy(&size_word, static_cast<char*>(block) - sizeof(size_t), sizeof(size_t));
  EXPECT_EQ(size_word & 2u, 0u) << "an 8 MiB block has a mapping of its own";
  std::free(block);
#else
  EXPECT_FALSE(keep_freed_blocks());
#endif
}

}  // namespace
}  // namespace gtadoc
