// Sizing the large std::vectors the readers fill. Their first touch dominates reading an archive
// on 4 KiB pages (a page fault per 4 KiB; about 0.6 ms per MiB on a VM against 0.15 ms on
// transparent huge pages), so a vector about to be filled asks for huge pages before it is
// touched. The vectors keep std::allocator: Manifest and ShardGrammar hold plain std::vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gtadoc {

/// Marks the whole 4 KiB pages of [data, data + bytes) for transparent huge pages (Linux, from
/// 4 MiB up; a hint: failure only costs speed). Call it before the memory is first written.
inline void advise_huge_pages(const void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr size_t kMin = size_t{4} << 20, kPage = 4096;
  if (bytes < kMin) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kPage - 1) & ~uintptr_t{kPage - 1};
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~uintptr_t{kPage - 1};
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

/// Resizes an empty `v` to `n` value-initialized elements, on huge pages where it is large.
template <class T>
void resize_on_huge_pages(std::vector<T>& v, size_t n) {
  if (v.capacity() < n) {
    std::vector<T>().swap(v);
    v.reserve(n);
    advise_huge_pages(v.data(), n * sizeof(T));
  }
  v.resize(n);
}

}  // namespace gtadoc
