// Records: the (key, count) pairs an engine emits and the cluster shuffles, in struct-of-arrays
// form. A key is `width` consecutive u32 values (see KeyLayout in worker/query.h). An engine's
// output for one shard holds every key at most once (locally aggregated); merging batches sums
// the counts of equal keys.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gtadoc {

struct RecordBatch {
  uint32_t width = 1;
  std::vector<uint32_t> keys;    ///< size() * width values, row-major
  std::vector<uint64_t> counts;  ///< one per record

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

}  // namespace gtadoc
