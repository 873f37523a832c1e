// How the reduce splits an array of n entries over threads: near-equal blocks, and blocks moved
// forward so that no group of equal entries straddles two of them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gtadoc {

/// First index of block t of [0, n) cut into `threads` near-equal blocks (t = threads: n).
inline size_t block_begin(size_t n, unsigned threads, unsigned t) {
  return static_cast<size_t>((static_cast<unsigned __int128>(n) * t) / threads);
}

/// Splits [0, n) into `threads` ranges whose inner boundaries fall where same(i - 1, i) is false.
template <typename Same>
std::vector<size_t> group_aligned_bounds(size_t n, unsigned threads, Same&& same) {
  std::vector<size_t> bounds(threads + 1);
  bounds[0] = 0;
  bounds[threads] = n;
  for (unsigned t = 1; t < threads; ++t) {
    size_t b = std::max(block_begin(n, threads, t), bounds[t - 1]);
    while (b > 0 && b < n && same(b - 1, b)) ++b;
    bounds[t] = b;
  }
  return bounds;
}

}  // namespace gtadoc
