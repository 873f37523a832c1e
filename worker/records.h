// Records: the (key, count) pairs an engine emits and the cluster shuffles, in struct-of-arrays
// form. A key is `width` consecutive u32 values (see KeyLayout in worker/query.h). An engine's
// output for one shard holds every key at most once (locally aggregated); merging batches sums
// the counts of equal keys.
#pragma once

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
    keys.insert(keys.end(), k.begin(), k.end());
    counts.push_back(c);
  }
  void append(const RecordBatch& other) {
    keys.insert(keys.end(), other.keys.begin(), other.keys.end());
    counts.insert(counts.end(), other.counts.begin(), other.counts.end());
  }
};

/// All batches (of width `width`) as one, in order: one allocation and a parallel copy on up to
/// `threads` threads (0 = all). The batches are consumed.
RecordBatch concatenate(std::vector<RecordBatch>&& batches, uint32_t width, unsigned threads);

/// True when the keys of `b` strictly increase (lexicographic over the `width` values).
bool keys_increasing(const RecordBatch& b);
/// Batches of width `width` whose keys strictly increase (keys_increasing), merged into one whose
/// keys strictly increase, the counts of equal keys summed: in rounds that merge up to 16 batches
/// at once over a heap (two by a two-way merge), so each record is written about log16(batches)
/// times. On one thread. The batches are consumed.
RecordBatch merge_increasing(std::vector<RecordBatch>&& batches, uint32_t width);

}  // namespace gtadoc
