// Records: the (key, count) pairs an engine emits and the cluster shuffles, in struct-of-arrays
// form. A key is `width` consecutive u32 values (see KeyLayout in worker/query.h). An engine's
// output for one shard holds every key at most once (locally aggregated); merging batches sums
// the counts of equal keys.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/big_alloc.h"

namespace gtadoc {

/// Record arrays: huge-page backed when large, and resize() does not zero-fill (producers
/// write every element they add), so filling a batch touches its memory once.
using KeyVector = UninitVector<uint32_t>;
using CountVector = UninitVector<uint64_t>;

struct RecordBatch {
  uint32_t width = 1;
  KeyVector keys;      ///< size() * width values, row-major
  CountVector counts;  ///< one per record

  size_t size() const { return counts.size(); }
  std::span<const uint32_t> key(size_t i) const { return {keys.data() + i * width, width}; }
  void push(std::span<const uint32_t> k, uint64_t c) {
    make_room(k.size());
    keys.insert(keys.end(), k.begin(), k.end());
    counts.push_back(c);
  }
  /// Before a record of `key_width` values is appended (the batch's `width` may not be set yet
  /// while it is filled): when full, doubles the capacity, but a batch that reaches
  /// kEarlyHugeRecords goes straight to kHugeRecords, whose arrays are huge-page blocks
  /// (common/big_alloc.h), instead of through the doublings of a few MiB on 4 KiB pages, whose
  /// first touch cost a fault per page (most of the CPU engine's faults in per-document tasks).
  void make_room(size_t key_width) {
    const size_t n = counts.size();
    if (n < counts.capacity()) return;
    const size_t want =
        n < kEarlyHugeRecords ? std::max<size_t>(2 * n, 16) : std::max(2 * n, kHugeRecords);
    counts.reserve(want);
    keys.reserve(want * key_width);
  }
  static constexpr size_t kEarlyHugeRecords = size_t{1} << 15;  ///< 256 KiB of counts
  static constexpr size_t kHugeRecords = size_t{1} << 20;       ///< 8 MiB of counts, 4+ of keys
  void append(const RecordBatch& other) {
    keys.insert(keys.end(), other.keys.begin(), other.keys.end());
    counts.insert(counts.end(), other.counts.begin(), other.counts.end());
  }
};

/// All batches (of width `width`) as one, in order: one allocation and a parallel copy on up to
/// `threads` threads (0 = all). The batches are consumed, each freed once copied.
RecordBatch concatenate(std::vector<RecordBatch>&& batches, uint32_t width, unsigned threads);

/// True when the keys of `b` strictly increase (lexicographic over the `width` values).
bool keys_increasing(const RecordBatch& b);
/// Batches of width `width` whose keys strictly increase (keys_increasing), merged into one whose
/// keys strictly increase, the counts of equal keys summed: in rounds that merge up to 16 batches
/// at once over a heap (two by a two-way merge), so each record is written about log16(batches)
/// times. On one thread. The batches are consumed.
RecordBatch merge_increasing(std::vector<RecordBatch>&& batches, uint32_t width);

}  // namespace gtadoc
