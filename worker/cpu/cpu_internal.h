// Internal structures of the CPU engine: the loaded shard (bags of children and words per
// "unit" = inner rule or document segment), the per-query state (vocabulary restricted to the
// shard, item space, head/tail buffers) and the traversal entry points. Not a public API.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "formats/grammar.h"
#include "worker/engine.h"
#include "worker/plan/csr.h"
#include "worker/plan/radix_sort.h"
#include "worker/plan/selector.h"
#include "worker/plan/shard_layout.h"
#include "worker/plan/thread_pool.h"
#include "worker/plan/vocab.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc::cpu {

// The plan layer's vocabulary (worker/plan/), used unqualified by the operators.
using plan::build_csr;
using plan::Csr;
using plan::CsrView;
using plan::Exec;
using plan::kBoundaryCode;
using plan::kNoItem;
using plan::kRuleFlag;
using plan::ThreadPool;
using plan::TraversalChoice;
using plan::Vocab;

/// A unit's (item, count) pairs packed as item << 32 | count: sorted by item (plan::sort_ids)
/// and appended to `items`/`cnts` with the counts of equal items summed. `tmp` is scratch.
template <class Items, class Cnts>
void append_summed(std::vector<uint64_t>& packed, std::vector<uint64_t>& tmp, Items& items,
                   Cnts& cnts) {
  plan::sort_ids(packed, tmp, 32);
  for (size_t a = 0; a < packed.size();) {
    const uint32_t item = static_cast<uint32_t>(packed[a] >> 32);
    uint64_t c = 0;
    size_t b = a;
    for (; b < packed.size() && static_cast<uint32_t>(packed[b] >> 32) == item; ++b)
      c += static_cast<uint32_t>(packed[b]);
    items.push_back(item);
    cnts.push_back(static_cast<uint32_t>(c));
    a = b;
  }
}

/// Concatenates per-thread batches into one.
RecordBatch concat_batches(std::vector<RecordBatch>& parts, uint32_t width);

// ------------------------------------------------------------------------------ loaded shard

/// A shard loaded by the CPU engine: the plan layer's layout (units, bags, root uses, heights)
/// plus the parent lists the top-down weights need. Multiplicities are u32.
class CpuShard final : public LoadedShard, public plan::ShardLayout {
 public:
  /// `grammar` must outlive the shard (LazyShard owns both).
  CpuShard(const ShardGrammar& grammar, const Exec& ex);
  const ShardGrammar& grammar() const override { return g; }

  /// Inner rules of height h: [level_begin(h), level_end(h)); h < num_inner_levels.
  uint32_t num_inner_levels() const { return num_inner == 0 ? 0 : g.num_levels() - 1; }
  uint32_t level_begin(uint32_t h) const { return g.level_offsets[h]; }
  uint32_t level_end(uint32_t h) const { return g.level_offsets[h + 1]; }

  const ShardGrammar& g;
  Csr<uint32_t> parents;  ///< per inner rule: distinct inner parents, with uses
};

// ------------------------------------------------------------------------------ query state

/// Head/tail buffers of the inner rules for n-grams (k = n - 1 words each).
struct SeqInfo {
  uint32_t n = 0, k = 0;
  std::vector<uint64_t> len;         ///< inner rule -> normalized expanded length
  std::vector<uint32_t> head, tail;  ///< inner rule r: [r*k, r*k + min(len, k)) items
  std::vector<uint64_t> stream_len;  ///< per unit: words in its local stream (window bound)
  uint64_t local_windows(uint64_t u) const { return stream_len[u] >= n ? stream_len[u] - k : 0; }
};

/// What the traversals count: items (words, or interned n-grams of `width` words) and every
/// unit's own items (terminal words, or local n-gram windows), items ascending in each row.
struct ItemSpace {
  uint32_t width = 1;
  uint64_t count = 0;          ///< items are 0 .. count-1
  std::vector<uint32_t> keys;  ///< n-grams: item*width .. -> word items
  Csr<uint32_t> own_store;     ///< storage when own is not a view of the shard
  CsrView<uint32_t> own;
};

struct Query {
  const CpuShard& s;
  const QueryOptions& q;
  Exec ex;
  unsigned budget_share = 1;  ///< shards traversed at once: each gets this share of the budget
  /// Records this shard's per-document traversal is expected to emit (0: unknown), from the
  /// shards run before it: its threads' batches reserve their shares up front instead of
  /// growing by doubling, each doubling a copy into fresh memory.
  uint64_t expected_records = 0;
  Vocab vocab;
  SeqInfo seq;
  ItemSpace items;

  DocSlot doc_slot() const { return gtadoc::doc_slot(q); }
  bool per_doc() const { return doc_slot() != DocSlot::kNone; }
  uint32_t key_width() const { return items.width + (per_doc() ? 1 : 0); }
  /// Writes the record key of (item, global doc) to dst (key_width() values).
  void write_key(uint32_t* dst, uint32_t item, DocId doc) const;
  /// Starts loading what write_key reads for `item` (an n-gram's words), ahead of it.
  void prefetch_key(uint32_t item) const {
    if (items.width > 1) __builtin_prefetch(items.keys.data() + size_t{item} * items.width);
  }
  void emit(RecordBatch& b, uint32_t item, DocId doc, uint64_t count) const {
    b.make_room(key_width());
    size_t at = b.keys.size();
    b.keys.resize(at + key_width());
    write_key(b.keys.data() + at, item, doc);
    b.counts.push_back(count);
  }
};

// word_items.cpp
/// Word tasks: items = vocabulary items, own = terminal bags remapped.
void build_word_items(Query& Q);

// sequences.cpp
/// Normalized lengths and head/tail buffers of every inner rule (Q.seq).
void build_heads_tails(Query& Q);
/// Global sequence-count, top-down: Σ weight(unit) × local windows, straight into hash tables.
RecordBatch sequence_count_topdown(Query& Q, const std::vector<uint64_t>& weights);
/// Interns every local window: items = distinct n-grams, own = per-unit window counts.
void intern_windows(Query& Q);

// topdown.cpp
/// weight[r] = occurrences of inner rule r in the expanded root (Σ over parents, by levels).
std::vector<uint64_t> rule_weights(const CpuShard& s, const Exec& ex);
RecordBatch topdown_global(Query& Q, const std::vector<uint64_t>& weights);
RecordBatch topdown_per_doc(Query& Q);

// bottomup.cpp
/// Per inner rule, every item of its expansion with its count (one Csr per height level).
struct RuleTables {
  std::vector<Csr<uint64_t>> levels;
};
RuleTables build_rule_tables(Query& Q);
RecordBatch bottomup_global(Query& Q, const RuleTables& t);
RecordBatch bottomup_per_doc(Query& Q, const RuleTables& t);

// selector.cpp
/// Chooses a traversal for Q (after its vocabulary and build_heads_tails; items may be unset).
TraversalChoice select_traversal(const Query& Q);
/// Memory budget for bottom-up tables (bytes): a quarter of physical memory, or
/// GTADOC_CPU_TABLE_BUDGET (bytes) when set.
uint64_t table_memory_budget();

/// word-count / sort top-down straight over the stored grammar (worker/cpu/direct.cpp).
RecordBatch word_count_direct(const ShardGrammar& g, const Normalization& norm);

}  // namespace gtadoc::cpu
