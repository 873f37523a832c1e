// Plan of a batched pass over several shards: the shards' DAGs become one merged DAG
// whose roots are the shards' documents, so one level-synchronous traversal (one launch per
// height level, one set of per-level tables, one download) serves them all. Pure host logic,
// independent of any engine; the GPU engine (worker/gpu/gpu_batch.cu) builds its merged device
// DAG from it with device-to-device copies of the resident shards (nothing is re-uploaded).
//
// Merged numbering (the same invariants as one shard's, formats/grammar.h):
//  * inner rules level-major: level h holds shard 0's level-h rules, then shard 1's, ... so every
//    level is one contiguous id range (merged level_offsets) and a child's id is smaller than
//    its parent's (its level is lower). Within a shard and level the order is kept, so the map
//    of a shard's rule ids is increasing.
//  * units (rules, then document segments) in that order: all inner rules, then the documents of
//    shard 0, shard 1, ... in the order given.
//  * words: the union of the shards' local vocabularies, ascending (a shard's map is increasing).
// Any array stored per unit in unit order (bodies, CSR rows) is a concatenation of "blocks": a
// run of consecutive units of one shard that stays consecutive in the merged order (one shard's
// rules of one level, or one shard's documents).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "common/parallel.h"
#include "common/parallel_resize.h"
#include "common/types.h"

namespace gtadoc {

/// What the plan needs to know about one shard.
struct BatchShardShape {
  /// Inner levels: level h holds the inner rules [level_offsets[h], level_offsets[h + 1]);
  /// level_offsets.back() = inner rules (the root excluded). May be {0} (no inner rule).
  std::span<const uint32_t> level_offsets;
  uint32_t num_docs = 0;
  DocId first_doc = 0;
  std::span<const WordId> local_words;  ///< the shard's distinct words, ascending
};

/// A run of `count` consecutive units of shard `shard`, from `src_unit`, placed at `dst_unit`.
struct BatchBlock {
  uint32_t shard = 0;
  uint32_t src_unit = 0;
  uint32_t dst_unit = 0;
  uint32_t count = 0;
};

/// A range of an array stored per unit: [src, src + len) of shard `shard` goes to [dst, dst+len);
/// units of the range move by `unit_delta` (dst_unit - src_unit of its block).
struct BatchSegment {
  uint64_t dst = 0, src = 0, len = 0;
  uint32_t shard = 0;
  int64_t unit_delta = 0;
};

struct BatchPlan {
  uint32_t shards = 0;
  std::vector<uint32_t> level_offsets;  ///< merged inner levels (H + 1 entries, H = max depth)
  uint32_t inner = 0;                   ///< merged inner rules
  uint32_t num_docs = 0;
  uint32_t units() const { return inner + num_docs; }

  /// rule_map[rule_base[i] + r] = merged id of shard i's inner rule r.
  std::vector<uint64_t> rule_base;
  std::vector<uint32_t> rule_map;
  std::vector<uint32_t> doc_base;  ///< merged index of shard i's first document

  std::vector<BatchBlock> blocks;  ///< in merged unit order, covering every unit once

  std::vector<DocId> doc_ids;   ///< merged document -> global document id
  bool docs_contiguous = true;  ///< doc_ids[d] == doc_ids[0] + d for every d

  std::vector<WordId> words;        ///< union of the local vocabularies, ascending
  std::vector<uint64_t> word_base;  ///< word_map[word_base[i] + w] = merged index of local w
  std::vector<uint32_t> word_map;

  /// Source shard and unit of merged unit u (binary search over the blocks).
  BatchBlock block_of(uint32_t u) const;
};

/// The merged numbering of `shards` (in the order given). Throws Error on inconsistent shapes.
BatchPlan plan_batch(std::span<const BatchShardShape> shards);

/// Where each block's range of a per-unit array goes: `range(b)` is block b's range [first, end)
/// in its shard's array (for a unit range: the offset of its first unit and the offset after its
/// last). Returns one segment per non-empty block and fills `block_start` (blocks + 1 entries)
/// with each block's start in the merged array, the last entry its size. For arrays whose merged
/// per-unit offsets are derived elsewhere (on the device): no pass over the units.
template <class Range>
std::vector<BatchSegment> plan_block_segments(const BatchPlan& plan, Range&& range,
                                              std::vector<uint64_t>& block_start) {
  const size_t n = plan.blocks.size();
  block_start.assign(n + 1, 0);
  std::vector<BatchSegment> segs;
  segs.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const BatchBlock& b = plan.blocks[i];
    const auto [src, end] = range(b);
    GTADOC_EXPECTS(src <= end, "batch plan: a block's range decreases");
    if (end > src)
      segs.push_back({block_start[i], src, end - src, b.shard,
                      static_cast<int64_t>(b.dst_unit) - static_cast<int64_t>(b.src_unit)});
    block_start[i + 1] = block_start[i] + (end - src);
  }
  return segs;
}

/// Placement of an array stored per unit in unit order: `offsets[i]` are shard i's per-unit
/// offsets into its array (units_i + 1 entries, non-decreasing; a unit's range may include
/// trailing entries no unit owns, e.g. boundaries after a document). Returns one segment per
/// non-empty block and fills `merged_offsets` (units + 1 entries, on huge pages first touched on
/// every core, filled block by block on every core) with the merged offsets.
std::vector<BatchSegment> plan_segments(const BatchPlan& plan,
                                        std::span<const std::span<const uint64_t>> offsets,
                                        std::vector<uint64_t>& merged_offsets);

/// values[i][u] of every shard, placed at the merged unit of (i, u): the gather of a per-unit
/// host array (units = false: per inner rule only, in merged inner-rule order). On huge pages
/// first touched on every core, filled block by block on every core: batches have hundreds of
/// millions of units.
template <class T>
std::vector<T> gather_units(const BatchPlan& plan, std::span<const std::span<const T>> values,
                            bool units) {
  std::vector<T> out;
  resize_in_parallel(out, units ? plan.units() : plan.inner);
  parallel_for(plan.blocks.size(), 0, [&](size_t i) {
    const BatchBlock& b = plan.blocks[i];
    if (!units && b.dst_unit >= plan.inner) return;
    std::copy_n(values[b.shard].begin() + b.src_unit, b.count, out.begin() + b.dst_unit);
  });
  return out;
}

}  // namespace gtadoc
