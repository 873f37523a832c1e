// The parallel merge of a few sorted runs that both the owner's reduce (merge_sorted_runs in
// cluster/reduce.cpp: ranks' reduced slices) and the count-ordered row exchange (merge_row_runs
// in cluster/rows/rank_rows.cpp: ranks' ordered rows) use.
//
// The order is cut into `pieces` at evenly spaced positions of the longest run (its values are
// the pivots); piece p holds, from every run, the positions not below pivot p and below pivot
// p + 1. Pieces are disjoint and ordered, so merging each piece on its own (a tournament over
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

/// Calls visit(position) for every position of piece p, in merged order: a tournament of
/// losers over the runs' heads, so each position costs ceil(log2(runs)) comparisons (a binary
/// heap's pop and push cost about twice that). Of equal positions, the earlier run's comes first.
template <typename Less, typename Visit>
void merge_piece(const RunPieces& r, size_t p, const Less& less, Visit&& visit) {
  std::vector<uint64_t> at, end;  // the live runs' heads and ends
  for (size_t k = 0; k < r.runs.size(); ++k) {
    if (r.at[p][k] < r.at[p + 1][k]) {
      at.push_back(r.at[p][k]);
      end.push_back(r.at[p + 1][k]);
    }
  }
  const size_t k = at.size();
  if (k == 0) return;
  if (k == 1) {
    for (uint64_t i = at[0]; i < end[0]; ++i) visit(i);
    return;
  }
  size_t leaves = 1;
  while (leaves < k) leaves <<= 1;
  // Whether run a's head comes before run b's (an exhausted run, or a padding leaf, never does).
  auto first = [&](size_t a, size_t b) {
    if (b >= k || at[b] == end[b]) return true;
    if (a >= k || at[a] == end[a]) return false;
    return a < b ? !less(at[b], at[a]) : less(at[a], at[b]);
  };
  // loser[n] for the inner nodes 1..leaves-1: the run that lost the match there.
  std::vector<size_t> loser(leaves), winner(2 * leaves);
  for (size_t i = 0; i < leaves; ++i) winner[leaves + i] = i;
  for (size_t n = leaves - 1; n >= 1; --n) {
    const size_t a = winner[2 * n], b = winner[2 * n + 1];
    const bool a_first = first(a, b);
    winner[n] = a_first ? a : b;
    loser[n] = a_first ? b : a;
  }
  size_t w = winner[1];
  while (w < k && at[w] < end[w]) {
    visit(at[w]++);
    for (size_t n = (leaves + w) >> 1; n >= 1; n >>= 1)  // replay w's matches up to the root
      if (first(loser[n], w)) std::swap(loser[n], w);
  }
}

}  // namespace gtadoc
