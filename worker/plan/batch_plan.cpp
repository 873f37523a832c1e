// The merged numbering of a batch of shards (see batch_plan.h).
#include "worker/plan/batch_plan.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>

#include "common/error.h"
#include "common/parallel.h"
#include "common/parallel_resize.h"
#include "worker/plan/id_set.h"

namespace gtadoc {

BatchBlock BatchPlan::block_of(uint32_t u) const {
  GTADOC_EXPECTS(u < units(), "BatchPlan::block_of: unit out of range");
  auto it = std::upper_bound(blocks.begin(), blocks.end(), u,
                             [](uint32_t x, const BatchBlock& b) { return x < b.dst_unit; });
  const BatchBlock& b = *(it - 1);
  return {b.shard, b.src_unit + (u - b.dst_unit), u, 1};
}

BatchPlan plan_batch(std::span<const BatchShardShape> shards) {
  BatchPlan p;
  p.shards = static_cast<uint32_t>(shards.size());
  uint32_t H = 0;
  uint64_t inner = 0, docs = 0, rules_total = 0;
  for (const BatchShardShape& s : shards) {
    GTADOC_EXPECTS(!s.level_offsets.empty() && s.level_offsets.front() == 0,
                   "batch plan: bad level offsets");
    for (size_t h = 1; h < s.level_offsets.size(); ++h)
      GTADOC_EXPECTS(s.level_offsets[h - 1] <= s.level_offsets[h], "batch plan: bad level offsets");
    H = std::max(H, static_cast<uint32_t>(s.level_offsets.size() - 1));
    inner += s.level_offsets.back();
    docs += s.num_docs;
    rules_total += s.level_offsets.back();
  }
  // Batches of hundreds of shards: the per-shard passes below run side by side.
  std::atomic<bool> sorted{true};
  parallel_for(shards.size(), 0, [&](size_t i) {
    if (!std::is_sorted(shards[i].local_words.begin(), shards[i].local_words.end())) sorted = false;
  });
  GTADOC_EXPECTS(sorted.load(), "batch plan: local words not ascending");
  GTADOC_EXPECTS(inner + docs < std::numeric_limits<uint32_t>::max() / 2,
                 "batch plan: too many rules and documents in one batch");
  p.inner = static_cast<uint32_t>(inner);
  p.num_docs = static_cast<uint32_t>(docs);

  // Levels, level-major; the rule maps.
  auto count = [&](const BatchShardShape& s, uint32_t h) -> uint32_t {
    return h + 1 < s.level_offsets.size() ? s.level_offsets[h + 1] - s.level_offsets[h] : 0;
  };
  p.level_offsets.assign(H + 1, 0);
  p.rule_base.resize(shards.size());
  resize_in_parallel(p.rule_map, rules_total);
  for (size_t i = 0, at = 0; i < shards.size(); ++i) {
    p.rule_base[i] = at;
    at += shards[i].level_offsets.back();
  }
  uint32_t next = 0;
  for (uint32_t h = 0; h < H; ++h) {
    p.level_offsets[h] = next;
    for (uint32_t i = 0; i < p.shards; ++i) {
      const uint32_t c = count(shards[i], h);
      if (c == 0) continue;
      p.blocks.push_back({i, shards[i].level_offsets[h], next, c});
      next += c;
    }
  }
  p.level_offsets[H] = next;
  parallel_for(p.blocks.size(), 0, [&](size_t k) {
    const BatchBlock& b = p.blocks[k];
    for (uint32_t j = 0; j < b.count; ++j)
      p.rule_map[p.rule_base[b.shard] + b.src_unit + j] = b.dst_unit + j;
  });
  GTADOC_EXPECTS(next == p.inner, "batch plan: levels do not cover the rules");

  // Documents, shard after shard.
  p.doc_base.resize(shards.size());
  p.doc_ids.reserve(p.num_docs);
  for (uint32_t i = 0; i < p.shards; ++i) {
    const BatchShardShape& s = shards[i];
    p.doc_base[i] = static_cast<uint32_t>(p.doc_ids.size());
    if (s.num_docs > 0)
      p.blocks.push_back({i, s.level_offsets.back(), p.inner + p.doc_base[i], s.num_docs});
    for (uint32_t d = 0; d < s.num_docs; ++d) p.doc_ids.push_back(s.first_doc + d);
  }
  for (size_t d = 1; d < p.doc_ids.size() && p.docs_contiguous; ++d)
    p.docs_contiguous = p.doc_ids[d] == p.doc_ids[0] + d;

  // Words: the union (a bitmap over the ids, ranked), and each shard's increasing map into it:
  // O(words + largest id / 64), no sort.
  size_t total_words = 0;
  WordId top = 0;
  for (const BatchShardShape& s : shards) {
    total_words += s.local_words.size();
    if (!s.local_words.empty()) top = std::max(top, s.local_words.back());
  }
  const uint64_t bound = total_words == 0 ? 0 : uint64_t{top} + 1;
  plan::RankedIdSet words(bound);
  // Ranges of the bitmap's 64-bit words side by side, each taking from every shard the ids that
  // fall in it (a binary search, then a walk): no two threads write one bitmap word, so the
  // stores need no atomics (hundreds of millions of ids, shared by many shards).
  const uint64_t bitmap_words = (bound + 63) / 64;
  const uint64_t parts = std::clamp<uint64_t>(bitmap_words / 1024, 1, 256);
  parallel_for(parts, 0, [&](size_t k) {
    const uint64_t lo = bitmap_words * k / parts * 64, hi = bitmap_words * (k + 1) / parts * 64;
    for (const BatchShardShape& s : shards) {
      auto it = std::lower_bound(s.local_words.begin(), s.local_words.end(), lo);
      for (; it != s.local_words.end() && *it < hi; ++it) words.insert(*it);
    }
  });
  words.rank();
  p.words = words.members(0);
  p.word_base.resize(shards.size());
  resize_in_parallel(p.word_map, total_words);  // the shards' local words: ~10^8 in a batch
  for (size_t i = 0, at = 0; i < shards.size(); ++i) {
    p.word_base[i] = at;
    at += shards[i].local_words.size();
  }
  parallel_for(shards.size(), 0, [&](size_t i) {
    uint64_t at = p.word_base[i];
    for (WordId w : shards[i].local_words) p.word_map[at++] = words.rank_of(w);
  });
  return p;
}

std::vector<BatchSegment> plan_segments(const BatchPlan& plan,
                                        std::span<const std::span<const uint64_t>> offsets,
                                        std::vector<uint64_t>& merged_offsets) {
  GTADOC_EXPECTS(offsets.size() == plan.shards, "plan_segments: one offset array per shard");
  // Where each block's range starts in the merged array (one pass over the blocks), then the
  // merged offsets of the blocks' units filled side by side: a batch of hundreds of shards has
  // hundreds of millions of units.
  std::vector<uint64_t> start;
  const std::vector<BatchSegment> segs = plan_block_segments(
      plan,
      [&](const BatchBlock& b) {
        const std::span<const uint64_t> off = offsets[b.shard];
        GTADOC_EXPECTS(uint64_t{b.src_unit} + b.count < off.size(),
                       "plan_segments: offsets shorter than the shard's units");
        return std::pair<uint64_t, uint64_t>{off[b.src_unit], off[b.src_unit + b.count]};
      },
      start);
  resize_in_parallel(merged_offsets, uint64_t{plan.units()} + 1);
  parallel_for(plan.blocks.size(), 0, [&](size_t i) {
    const BatchBlock& b = plan.blocks[i];
    const std::span<const uint64_t> off = offsets[b.shard];
    const uint64_t src = off[b.src_unit];
    for (uint32_t k = 0; k < b.count; ++k) {
      GTADOC_EXPECTS(off[b.src_unit + k] <= off[b.src_unit + k + 1],
                     "plan_segments: decreasing offsets");
      merged_offsets[b.dst_unit + k] = start[i] + (off[b.src_unit + k] - src);
    }
  });
  merged_offsets[plan.units()] = start.back();
  return segs;
}

}  // namespace gtadoc
