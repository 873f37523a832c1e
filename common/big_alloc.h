// Allocators for large arrays. HugePageAllocator maps blocks of 4 MiB and more directly (freeing
// one gives the memory back at once) and marks them for transparent huge pages on Linux, so
// touching hundreds of MiB costs few page faults and random access few TLB misses.
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
    if (bytes >= kDirect) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      advise_huge_pages(p, bytes);
      return static_cast<T*>(p);
    }
#endif
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
#if defined(__linux__)
    if (n * sizeof(T) >= kDirect) {
      munmap(p, n * sizeof(T));
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
