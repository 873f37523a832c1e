// Sorting and scanning helpers for the row stages: a parallel comparison sort (libstdc++'s
// multiway mergesort on OpenMP threads) that falls back to std::sort for small inputs or one
// thread, and the run boundaries of a sorted key array. Results never depend on `threads`
// (comparators used here are total orders).
#pragma once

#include <algorithm>
#include <cstdint>
#include <parallel/algorithm>
#include <vector>

#include "common/parallel.h"
#include "common/parallel_resize.h"

namespace gtadoc {

template <typename It, typename Less>
void parallel_sort(It begin, It end, Less less, unsigned threads) {
  constexpr std::ptrdiff_t kParallelFrom = 1 << 14;
  if (threads > 1 && end - begin >= kParallelFrom)
    __gnu_parallel::sort(begin, end, less, __gnu_parallel::multiway_mergesort_tag(threads));
  else
    std::sort(begin, end, less);
}

/// Runs f(lo, hi) over [0, n) split into contiguous blocks of at least `grain` elements, on up
/// to `threads` threads (one atomic step per block, not per element).
template <typename F>
void parallel_blocks(uint64_t n, unsigned threads, F&& f, uint64_t grain = 1 << 14) {
  const uint64_t blocks = std::max<uint64_t>(1, std::min<uint64_t>(n / grain, threads * 8ull));
  parallel_for(blocks, threads, [&](size_t b) { f(n * b / blocks, n * (b + 1) / blocks); });
}

/// Start positions of the runs of equal elements in [0, n) under `same(i, i - 1)`, plus n at
/// the end (so run k is [starts[k], starts[k + 1])). Empty input gives {0}.
template <typename Same>
std::vector<uint64_t> run_starts(uint64_t n, Same same, unsigned threads) {
  const unsigned chunks = static_cast<unsigned>(std::clamp<uint64_t>(n >> 16, 1, threads * 4u));
  std::vector<std::vector<uint64_t>> part(chunks);
  parallel_for(chunks, threads, [&](size_t c) {
    const uint64_t lo = n * c / chunks, hi = n * (c + 1) / chunks;
    part[c].reserve(hi - lo);  // address space only: pages are touched as starts are found
    for (uint64_t i = lo; i < hi; ++i)
      if (i == 0 || !same(i, i - 1)) part[c].push_back(i);
  });
  std::vector<uint64_t> at(chunks + 1, 0);  // where each chunk's starts go
  for (unsigned c = 0; c < chunks; ++c) at[c + 1] = at[c] + part[c].size();
  std::vector<uint64_t> starts;
  resize_in_parallel(starts, at[chunks] + 1, threads);
  parallel_for(chunks, threads, [&](size_t c) {
    std::copy(part[c].begin(), part[c].end(), starts.begin() + static_cast<ptrdiff_t>(at[c]));
    std::vector<uint64_t>().swap(part[c]);
  });
  starts.back() = n;
  return starts;
}

/// Exclusive prefix sum in place; returns the total.
inline uint64_t exclusive_scan_in_place(std::vector<uint64_t>& v) {
  uint64_t sum = 0;
  for (auto& x : v) {
    const uint64_t c = x;
    x = sum;
    sum += c;
  }
  return sum;
}

}  // namespace gtadoc
