// The parallel merge of a few sorted runs that both the owner's reduce (merge_sorted_runs in
// cluster/reduce.cpp: ranks' reduced slices) and the count-ordered row exchange (merge_row_runs
// in cluster/rows/rank_rows.cpp: ranks' ordered rows) use.
//
// The order is cut into `pieces` at evenly spaced positions of the longest run (its values are
// the pivots); piece p holds, from every run, the positions not below pivot p and below pivot
// p + 1. Pieces are disjoint and ordered, so merging each piece on its own (a small heap over
// the runs) and concatenating the pieces in order is the merge of the runs; no piece depends on
// the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/parallel.h"

namespace gtadoc {

/// Where each run's part of each piece begins: at[p][k] for p = 0..pieces (at[pieces][k] is the
/// run's end). `runs`: [begin, end) positions, each sorted by `less(i, j)` (positions).
struct RunPieces {
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  std::vector<std::vector<uint64_t>> at;
  size_t pieces() const { return at.size() - 1; }
  uint64_t size(size_t p) const {
    uint64_t n = 0;
    for (size_t k = 0; k < runs.size(); ++k) n += at[p + 1][k] - at[p][k];
    return n;
  }
};

/// Cuts the non-empty `runs` into `pieces` (see above), the bounds found in parallel.
template <typename Less>
RunPieces cut_runs(std::vector<std::pair<uint64_t, uint64_t>> runs, size_t pieces, unsigned threads,
                   const Less& less) {
  RunPieces out;
  for (const auto& r : runs)
    if (r.first < r.second) out.runs.push_back(r);
  const auto& run = out.runs;
  pieces = std::max<size_t>(1, pieces);
  out.at.assign(pieces + 1, std::vector<uint64_t>(run.size()));
  if (run.empty()) return out;
  size_t longest = 0;
  for (size_t k = 1; k < run.size(); ++k)
    if (run[k].second - run[k].first > run[longest].second - run[longest].first) longest = k;
  const uint64_t from = run[longest].first, len = run[longest].second - from;
  auto bound = [&](size_t k, size_t p) -> uint64_t {  // first position of run k not below pivot p
    if (p == 0) return run[k].first;
    if (p == pieces) return run[k].second;
    const uint64_t pivot = from + len * p / pieces;
    uint64_t lo = run[k].first, hi = run[k].second;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (less(mid, pivot))
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  };
  parallel_for(pieces + 1, threads, [&](size_t p) {
    for (size_t k = 0; k < run.size(); ++k) out.at[p][k] = bound(k, p);
  });
  return out;
}

/// Calls visit(position) for every position of piece p, in merged order.
template <typename Less, typename Visit>
void merge_piece(const RunPieces& r, size_t p, const Less& less, Visit&& visit) {
  struct Head {
    uint64_t at, end;
  };
  std::vector<Head> heads;
  for (size_t k = 0; k < r.runs.size(); ++k)
    if (r.at[p][k] < r.at[p + 1][k]) heads.push_back({r.at[p][k], r.at[p + 1][k]});
  auto after = [&](const Head& a, const Head& b) { return less(b.at, a.at); };
  std::make_heap(heads.begin(), heads.end(), after);
  while (!heads.empty()) {
    std::pop_heap(heads.begin(), heads.end(), after);
    Head& h = heads.back();
    visit(h.at++);
    if (h.at == h.end)
      heads.pop_back();
    else
      std::push_heap(heads.begin(), heads.end(), after);
  }
}

}  // namespace gtadoc
