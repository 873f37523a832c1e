// Merging sorted runs of one-value keys (word ids) by counting instead of comparing.
//
// The runs' key span [lo, hi] is walked in blocks of kBlock keys. For each block every run's
// records below the block's end are added into a dense array of the block's counts (in cache)
// and marked in a bitmap; the bitmap's set bits then give the block's keys in increasing order.
// A record costs one sequential read and one add in cache, where a tournament or heap over k
// runs costs log2(k) unpredictable comparisons; the span costs one bitmap word per 64 keys and
// one cursor check per run and block, so counting is used only where that stays small next to
// the records (pays()). The result is the merge's exactly: every distinct key once, in order,
// with the sum of its counts (a count of 0 included).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace gtadoc {

/// One sorted run (keys non-decreasing) of one-value records.
struct CountRun {
  const uint32_t* keys;
  const uint64_t* counts;
  size_t n;
};

struct CountMerge {
  static constexpr uint32_t kBlockBits = 15;  ///< 32 Ki keys: 256 KiB of counts, in L2
  static constexpr uint64_t kBlock = uint64_t{1} << kBlockBits;

  /// Whether counting costs less than comparing for `records` records in `runs` non-empty runs
  /// over the keys [lo, hi]: the span's bitmap words and the cursor checks at most twice the
  /// records, and at least two runs (one run needs no merge).
  static bool pays(uint64_t records, size_t runs, uint32_t lo, uint32_t hi) {
    if (runs < 2 || hi < lo) return false;
    const uint64_t span = uint64_t{hi} - lo + 1;
    const uint64_t blocks = (span >> kBlockBits) + 1;
    return span / 64 + blocks * runs <= 2 * records;
  }

  /// The smallest and largest key of non-empty runs, as {lo, hi} (lo > hi when all are empty).
  static std::pair<uint32_t, uint32_t> span_of(std::span<const CountRun> runs) {
    uint32_t lo = UINT32_MAX, hi = 0;
    for (const CountRun& r : runs) {
      if (r.n == 0) continue;
      lo = std::min(lo, r.keys[0]);
      hi = std::max(hi, r.keys[r.n - 1]);
    }
    return {lo, hi};
  }

  /// Merges `runs` (holding `records` records) by counting when that pays, calling emit as
  /// merge() does; returns false, having done nothing, when it does not.
  template <class Emit>
  static bool merge_if_it_pays(std::span<const CountRun> runs, uint64_t records, Emit&& emit) {
    const auto [lo, hi] = span_of(runs);
    if (!pays(records, runs.size(), lo, hi)) return false;
    merge(runs, lo, hi, std::forward<Emit>(emit));
    return true;
  }

  /// Calls emit(key, count) once for every distinct key of `runs` (each sorted, keys in
  /// [lo, hi]), in increasing key order, with the sum of the key's counts. The block's scratch
  /// is the calling thread's, reused across calls.
  template <class Emit>
  static void merge(std::span<const CountRun> runs, uint32_t lo, uint32_t hi, Emit&& emit) {
    thread_local std::vector<uint64_t> counts(kBlock, 0);
    thread_local std::vector<uint64_t> bits(kBlock / 64, 0);
    std::vector<size_t> at(runs.size(), 0);
    for (uint64_t base = lo; base <= hi; base += kBlock) {
      const uint64_t end = std::min<uint64_t>(base + kBlock, uint64_t{hi} + 1);
      for (size_t r = 0; r < runs.size(); ++r) {
        const CountRun& run = runs[r];
        size_t i = at[r];
        for (; i < run.n && run.keys[i] < end; ++i) {
          const uint32_t off = static_cast<uint32_t>(run.keys[i] - base);
          counts[off] += run.counts[i];
          bits[off >> 6] |= uint64_t{1} << (off & 63);
        }
        at[r] = i;
      }
      const size_t words = static_cast<size_t>((end - base + 63) / 64);
      for (size_t w = 0; w < words; ++w) {
        for (uint64_t b = bits[w]; b != 0; b &= b - 1) {
          const uint32_t off = static_cast<uint32_t>(w * 64 + std::countr_zero(b));
          emit(static_cast<uint32_t>(base + off), counts[off]);
          counts[off] = 0;
        }
        bits[w] = 0;
      }
    }
  }
};

}  // namespace gtadoc
