// Allocators for large arrays. HugePageAllocator maps blocks of 4 MiB and more directly and marks
// them for transparent huge pages on Linux, so touching hundreds of MiB costs few page faults and
// random access few TLB misses. In a resident process (gtadoc serve) a freed block goes to a
// bounded process-wide cache (big_block) and the next large allocation of a similar size takes it
// back with its pages already in memory: the queries that follow allocate the same sizes again,
// and first touch of fresh memory (0.1-6 GB/s on a VM, against 5-15 GB/s for memory in use) is
// what their large copies wait for. A one-query process keeps no cache (measured slower with it,
// docs/PERFORMANCE.md, "Measured and not kept").
// UninitAllocator adds default-initialization: resize() leaves trivial values unwritten, so a
// buffer about to be overwritten (a download, a bulk copy) is touched once, by the writer.
// resize_on_huge_pages gives plain std::vectors (Manifest, ShardGrammar) the same huge-page hint
// before they are first filled: on 4 KiB pages first touch dominates reading an archive (about
// 0.6 ms per MiB on a VM against 0.15 ms on transparent huge pages).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
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

/// Gives the memory of [data + from, data + to) back to the system, in whole huge pages (2 MiB)
/// inside it, where `data` is an array of `capacity` bytes from HugePageAllocator (a mapping of
/// its own from 4 MiB up; smaller arrays are left alone). The array stays valid: the pages
/// released read as zeros when touched again. For a consumer that reads a large input once, in
/// order, while it writes its output: the input's pages go back as it goes. Returns where the
/// next release should start so that no page is skipped: the end of the pages released (`to`
/// rounded down to a huge page), or `from` when none was.
inline size_t release_pages(const void* data, size_t capacity, size_t from, size_t to) {
#if defined(__linux__) && defined(MADV_DONTNEED)
  constexpr size_t kMin = size_t{4} << 20, kHuge = size_t{2} << 20;
  if (capacity < kMin || to > capacity || from >= to) return from;
  const uintptr_t base = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (base + from + kHuge - 1) & ~uintptr_t{kHuge - 1};
  const uintptr_t end = (base + to) & ~uintptr_t{kHuge - 1};
  if (end <= begin) return from;
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  return end - base;
#else
  (void)data;
  (void)capacity;
  (void)to;
  return from;
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

/// The process-wide cache of large blocks behind HugePageAllocator (Linux).
namespace big_block {
/// A mapping of at least `bytes` (>= 4 MiB), marked for huge pages: a cached block of the same
/// rounded size or up to twice it (trimmed to size), else a fresh one. Throws std::bad_alloc.
void* acquire(size_t bytes);
/// Gives back a block from acquire(bytes): cached while the cache holds at most its capacity
/// (the oldest blocks are unmapped first), unmapped at once otherwise.
void release(void* p, size_t bytes) noexcept;
/// The cache's capacity in bytes; 0 (the default of a process) unmaps every block when freed.
/// GTADOC_BLOCK_CACHE_BYTES, when set, is the capacity of every process (compress excepted: its
/// memory budget counts on memory going back, so it sets 0).
void set_capacity(uint64_t bytes);
/// The capacity a resident process sets (gtadoc serve, the resident benchmark):
/// GTADOC_BLOCK_CACHE_BYTES when set, else the smaller of 4 GiB and an eighth of the memory.
uint64_t resident_capacity();
uint64_t capacity();
/// Bytes held by the cache now.
uint64_t held();
}  // namespace big_block

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kDirect = size_t{4} << 20;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
#if defined(__linux__)
    if (bytes >= kDirect) return static_cast<T*>(big_block::acquire(bytes));
#endif
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
#if defined(__linux__)
    if (n * sizeof(T) >= kDirect) {
      big_block::release(p, n * sizeof(T));
      return;
    }
#endif
    std::free(p);
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

/// HugePageAllocator whose value-less construct() default-initializes (no zero fill).
template <typename T>
struct UninitAllocator : HugePageAllocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <typename U>
  UninitAllocator(const UninitAllocator<U>&) {}

  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const UninitAllocator<U>&) const {
    return true;
  }
};

template <typename T>
using BigVector = std::vector<T, HugePageAllocator<T>>;
/// resize() leaves new trivial elements uninitialized.
template <typename T>
using UninitVector = std::vector<T, UninitAllocator<T>>;

}  // namespace gtadoc
