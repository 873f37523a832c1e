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
#include "worker/cpu/thread_pool.h"
#include "worker/engine.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc::cpu {

/// Body symbols re-encoded at load: words become shard-local word indices (< kRuleFlag), rules
/// kRuleFlag | id, boundaries kBoundaryCode.
inline constexpr uint32_t kRuleFlag = 0x80000000u;
inline constexpr uint32_t kBoundaryCode = 0xFFFFFFFFu;
inline constexpr uint32_t kNoItem = 0xFFFFFFFFu;

/// Rows of (item, count) pairs in CSR form; items ascending within a row unless said otherwise.
template <class C>
struct Csr {
  std::vector<uint64_t> off{0};
  std::vector<uint32_t> item;
  std::vector<C> cnt;
  uint64_t rows() const { return off.size() - 1; }
  uint64_t len(uint64_t r) const { return off[r + 1] - off[r]; }
};

/// Non-owning view of a Csr (so identity queries reuse load-time arrays).
template <class C>
struct CsrView {
  const uint64_t* off = nullptr;
  const uint32_t* item = nullptr;
  const C* cnt = nullptr;
  uint64_t len(uint64_t r) const { return off[r + 1] - off[r]; }
  static CsrView of(const Csr<C>& c) { return {c.off.data(), c.item.data(), c.cnt.data()}; }
};

/// Builds a Csr with `rows` rows in parallel: fn(tid, row, items, counts) appends row's pairs.
template <class C, class Fn>
Csr<C> build_csr(const Exec& ex, uint64_t rows, uint64_t grain, Fn&& fn) {
  Csr<C> out;
  out.off.assign(rows + 1, 0);
  if (ex.threads <= 1 || rows <= grain) {
    for (uint64_t r = 0; r < rows; ++r) {
      fn(0u, r, out.item, out.cnt);
      out.off[r + 1] = out.item.size();
    }
    return out;
  }
  struct Chunk {
    uint64_t lo, hi, start;
  };
  struct Buf {
    std::vector<uint32_t> item;
    std::vector<C> cnt;
    std::vector<Chunk> chunks;
  };
  std::vector<Buf> bufs(ex.threads);
  ex.parallel_for(0, rows, grain, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    Buf& b = bufs[tid];
    b.chunks.push_back({lo, hi, b.item.size()});
    for (uint64_t r = lo; r < hi; ++r) {
      uint64_t before = b.item.size();
      fn(tid, r, b.item, b.cnt);
      out.off[r + 1] = b.item.size() - before;
    }
  });
  for (uint64_t r = 0; r < rows; ++r) out.off[r + 1] += out.off[r];
  out.item.resize(out.off[rows]);
  out.cnt.resize(out.off[rows]);
  ex.on_all([&](unsigned tid) {
    for (const Chunk& c : bufs[tid].chunks) {
      uint64_t n = out.off[c.hi] - out.off[c.lo];
      std::copy_n(bufs[tid].item.begin() + c.start, n, out.item.begin() + out.off[c.lo]);
      std::copy_n(bufs[tid].cnt.begin() + c.start, n, out.cnt.begin() + out.off[c.lo]);
    }
    std::vector<uint32_t>().swap(bufs[tid].item);
    std::vector<C>().swap(bufs[tid].cnt);
  });
  return out;
}

/// Concatenates per-thread batches into one.
RecordBatch concat_batches(std::vector<RecordBatch>& parts, uint32_t width);

// ------------------------------------------------------------------------------ loaded shard

/// A shard loaded by the CPU engine. Units 0 .. num_inner-1 are the inner rules (every rule but
/// the root); unit num_inner + d is document d's root segment. Multiplicities are u32.
class CpuShard final : public LoadedShard {
 public:
  CpuShard(ShardGrammar grammar, const Exec& ex);
  const ShardGrammar& grammar() const override { return g; }

  uint64_t num_units() const { return static_cast<uint64_t>(num_inner) + num_docs; }
  /// Absolute [begin, end) of a unit's body in `body`.
  std::pair<uint64_t, uint64_t> unit_body(uint64_t u) const {
    if (u < num_inner) return {g.rule_offsets[u], g.rule_offsets[u + 1]};
    return g.doc_segment(static_cast<uint32_t>(u - num_inner));
  }
  /// Inner rules of height h: [level_begin(h), level_end(h)); h < num_inner_levels.
  uint32_t num_inner_levels() const { return num_inner == 0 ? 0 : g.num_levels() - 1; }
  uint32_t level_begin(uint32_t h) const { return g.level_offsets[h]; }
  uint32_t level_end(uint32_t h) const { return g.level_offsets[h + 1]; }

  ShardGrammar g;
  uint32_t num_inner = 0;  ///< rules other than the root
  uint32_t num_docs = 0;
  std::vector<WordId> local_words;  ///< shard-local word index -> global word id (ascending)
  std::vector<uint32_t> body;       ///< g.symbols re-encoded (see kRuleFlag)
  std::vector<uint32_t> level_of;   ///< inner rule -> height
  Csr<uint32_t> children;           ///< per unit: distinct inner rules in its body, with uses
  Csr<uint32_t> terms;              ///< per unit: distinct local words in its body, with uses
  Csr<uint32_t> parents;            ///< per inner rule: distinct inner parents, with uses
  std::vector<uint64_t> root_uses;  ///< per inner rule: occurrences in the root
};

// ------------------------------------------------------------------------------ query state

/// The query's normalization restricted to the words this shard uses. Items are compact ids of
/// the distinct normalized words present, in byte order.
struct Vocab {
  std::vector<uint32_t> lnorm;    ///< local word -> item, or kNoItem when dropped
  std::vector<WordId> item_word;  ///< item -> normalized global word id
  bool identity = true;           ///< lnorm[i] == i
  uint32_t size() const { return static_cast<uint32_t>(item_word.size()); }
};

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

enum class DocSlot { kNone, kFirst, kLast };

struct Query {
  const CpuShard& s;
  const QueryOptions& q;
  Exec ex;
  Vocab vocab;
  SeqInfo seq;
  ItemSpace items;

  DocSlot doc_slot() const;
  bool per_doc() const { return doc_slot() != DocSlot::kNone; }
  uint32_t key_width() const { return items.width + (per_doc() ? 1 : 0); }
  /// Writes the record key of (item, global doc) to dst (key_width() values).
  void write_key(uint32_t* dst, uint32_t item, DocId doc) const;
  void emit(RecordBatch& b, uint32_t item, DocId doc, uint64_t count) const {
    size_t at = b.keys.size();
    b.keys.resize(at + key_width());
    write_key(b.keys.data() + at, item, doc);
    b.counts.push_back(count);
  }
};

// vocab.cpp
Vocab build_vocab(const CpuShard& s, const Normalization& norm, const Exec& ex);
/// Word tasks: items = vocabulary items, own = terminal bags remapped.
void build_word_items(Query& Q);

// sequences.cpp
void build_seq_info(Query& Q);
/// Global sequence-count, top-down: Σ weight(unit) × local windows, straight into hash tables.
RecordBatch sequence_count_topdown(Query& Q, const std::vector<uint64_t>& weights);
/// Interns every local window: items = distinct n-grams, own = per-unit window counts.
void intern_ngrams(Query& Q);

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
struct TraversalChoice {
  Traversal traversal = Traversal::kTopDown;
  std::string reason;
};
/// Chooses a traversal for Q (after build_vocab/build_seq_info; own items may be unset).
TraversalChoice select_traversal(const Query& Q);
/// Memory budget for bottom-up tables (bytes): a quarter of physical memory, or
/// GTADOC_CPU_TABLE_BUDGET (bytes) when set.
uint64_t table_memory_budget();

/// word-count / sort top-down straight over the stored grammar (worker/cpu/direct.cpp).
RecordBatch word_count_direct(const ShardGrammar& g, const Normalization& norm);

}  // namespace gtadoc::cpu
