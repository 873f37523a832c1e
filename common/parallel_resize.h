// Sizing a large std::vector that several threads are about to fill. std::vector value-initializes
// on the calling thread, and on fresh memory that first touch is mostly the kernel's zeroing of
// each page (0.3-4 GB/s on one core, against 5-20 GB/s for memory in place): hundreds of MiB of
// a merged batch's arrays took most of their build on one thread. resize_in_parallel first
// touches the new pages on every core, so the one-thread value-initialization that follows
// writes memory already in place.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/big_alloc.h"
#include "common/parallel.h"

namespace gtadoc {

/// Resizes `v` to `n` value-initialized elements (its old contents dropped), on huge pages where
/// it is large. From kParallelTouchBytes up, a fresh array's pages are first written (with
/// zeros) on `threads` threads (0: every CPU this process may use) before the resize.
template <class T>
void resize_in_parallel(std::vector<T>& v, size_t n, unsigned threads = 0) {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_copyable_v<T>,
                "resize_in_parallel: for arrays of trivial values");
  constexpr size_t kParallelTouchBytes = size_t{32} << 20, kPiece = size_t{4} << 20;
  v.clear();
  if (v.capacity() < n) {
    std::vector<T>().swap(v);
    v.reserve(n);
    advise_huge_pages(v.data(), n * sizeof(T));
    const size_t bytes = n * sizeof(T);
    if (bytes >= kParallelTouchBytes) {
      // The reserved storage is written as raw bytes before any element is constructed in it:
      // zeros, which the value-initialization below writes again (into pages now in memory).
      auto* raw = reinterpret_cast<unsigned char*>(v.data());
      parallel_for((bytes + kPiece - 1) / kPiece, threads, [&](size_t k) {
        const size_t lo = k * kPiece;
        std::memset(raw + lo, 0, std::min(kPiece, bytes - lo));
      });
    }
  }
  v.resize(n);
}

}  // namespace gtadoc
