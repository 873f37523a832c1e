// Internal structures of the GPU engine (host-includable: no device code here): the device
// context, the loaded shard (grammar uploaded once in struct-of-arrays / CSR form, with the
// level schedules of the static DAG), the per-query state, and the traversal entry points that
// the engine (gpu_engine.cu) strings together. Not a public API.
//
// Vocabulary of the engine:
//  * unit: an inner rule (ids 0 .. inner-1, = rule id) or a document segment of the root
//    (ids inner .. inner+D-1). Every body position belongs to exactly one unit; boundaries to none.
//  * item: what a query counts. Word tasks: the distinct normalized words present in the shard,
//    numbered in normalized-id order. Sequence tasks: the distinct n-grams of local windows
//    ("gids"), each an array of n word items.
//  * own entries of a unit: (item, count) pairs of the unit's own body (terminal words, or local
//    n-gram windows); duplicates of an item within a unit are allowed, every consumer reduces.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/types.h"
#include "formats/grammar.h"
#include "worker/device/device_buffer.cuh"
#include "worker/device_records.h"
#include "worker/engine.h"
#include "worker/plan/level_schedule.h"
#include "worker/plan/selector.h"
#include "worker/plan/shard_layout.h"
#include "worker/plan/thread_pool.h"
#include "worker/plan/vocab.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc::gpu {

// The plan layer's vocabulary (worker/plan/): symbol encoding, vocabulary, selector.
using plan::kBoundaryCode;
using plan::kNoItem;
using plan::kNoUnit;
using plan::kRuleFlag;
using plan::SelectorEstimate;
using plan::TraversalChoice;
using plan::Vocab;

/// Workload classes of per-rule kernels, by body length (worker/plan/level_schedule.h).
using plan::kThreadMaxBody;
using plan::kWarpMaxBody;
using plan::LevelSchedule;
inline constexpr int kRuleBlock = 256;  ///< threads of the block-per-rule kernels

/// The device, its stream and its memory pool; shared by the engine and every shard it loaded
/// (a shard may outlive the engine object).
struct DownloadStaging;  // download.cpp: pinned slots and streams for large downloads

/// Sets how the calling thread's current device makes host threads wait for it
/// (GTADOC_CUDA_WAIT: spin, yield or block), before or after its primary context starts. Every
/// thread that waits (query, load lanes, staging, shuffle) shares the host's cores with the
/// shards' reads, which a spinning wait takes a core from.
void apply_wait_policy();

struct DeviceContext {
  explicit DeviceContext(int device);
  void activate() const;  ///< cudaSetDevice(device) on the calling thread
  int device;
  Stream stream;
  MemoryPool pool;
  struct StagingDeleter {
    void operator()(DownloadStaging* p) const noexcept;
  };
  /// Created by the first large download (download.cpp), kept for the next ones.
  mutable std::unique_ptr<DownloadStaging, StagingDeleter> staging;
  /// Host threads (and pinned slots) of the staging: 0 = one per usable CPU, at most 16.
  unsigned staging_threads = 0;
  /// Host threads for load-time work (the shard layout), started by the first load. The pool
  /// runs one job at a time: hold host_mutex while the returned Exec is in use (shards of one
  /// context may be loaded from several threads).
  plan::Exec host_exec();
  std::mutex host_mutex;

 private:
  std::unique_ptr<plan::ThreadPool> host_pool_;
};

/// One range of a copy between host and device memory.
struct HostCopy {
  void* dst;
  const void* src;
  size_t bytes;
};
/// Copies ranges of device memory (written on ctx.stream) to host memory and waits: large
/// ranges go, chunk by chunk, through pinned staging slots on several host threads, all ranges
/// in one job (download.cpp).
void download_host(const DeviceContext& ctx, std::span<const HostCopy> copies);
/// Copies ranges of host memory into device memory (allocated on ctx.stream) and waits, the
/// same way.
void upload_host(const DeviceContext& ctx, std::span<const HostCopy> copies);

/// Per-unit (item, count) rows in CSR form on the device, entries in unit order.
struct UnitCsr {
  const uint64_t* off = nullptr;   ///< units + 1 offsets
  const uint32_t* unit = nullptr;  ///< entry -> unit
  const uint32_t* item = nullptr;
  const uint32_t* cnt = nullptr;  ///< nullptr: every count is 1
};

/// The vocabulary of one normalization with its device copies (the remap every kernel uses).
struct PreparedVocab {
  Vocab vocab;
  DeviceBuffer<uint32_t> lnorm;      ///< device copy of vocab.lnorm
  DeviceBuffer<uint32_t> item_word;  ///< device copy of vocab.item_word
};

/// Sequence tasks: normalized lengths and k = n - 1 head and tail words of every inner rule.
struct PreparedSeq {
  DeviceBuffer<uint64_t> slen;
  DeviceBuffer<uint32_t> head, tail;
};

/// Per-shard preparations that depend only on the shard and the query's normalization (and n):
/// computed by the first query that needs them, reused by the next ones (the DAG is static).
/// Keys: 0 = identity normalization, else Normalization::cache_key; hand-made normalizations
/// (cache_key 0) are never cached. The device-memory maps (vocab, seq) hold at most kMaxEntries
/// (a full map drops the entry with the smallest key first); estimates are a few numbers per
/// (normalization, n), at most 4 x 8 entries.
struct QueryCache {
  static constexpr size_t kMaxEntries = 8;
  std::map<uint32_t, std::shared_ptr<const PreparedVocab>> vocab;
  std::map<uint64_t, std::shared_ptr<const PreparedSeq>> seq;  ///< key << 8 | k
  std::map<uint64_t, SelectorEstimate> estimates;              ///< key << 8 | k (0: word tasks)
  /// n -> the positions per piece that fitted a global sequence count (absent: the whole shard)
  std::map<uint32_t, uint64_t> seq_piece;
  void clear() {
    vocab.clear();
    seq.clear();
    estimates.clear();
    seq_piece.clear();
  }
};

class GpuShard final : public LoadedShard {
 public:
  /// `layout`: the grammar's shard layout built ahead (prepare_shard), or null to build it here.
  /// The grammar is moved in only once everything else is loaded: when the constructor throws
  /// (out of GPU memory), `grammar` is unchanged and the caller may split it and retry.
  /// The layout's arrays the shard keeps on the host are moved out of it.
  /// `keep_symbols`: the grammar keeps its rule bodies on the host (Engine::keep_host_grammars);
  /// else their memory goes to the next shard's read.
  /// `bodies_unchecked`: the grammar had only its frame checked (PreparedShard): its bodies are
  /// checked on the device (bodies_valid_on_device), and a grammar that fails gets the InputError
  /// validate_grammar gives, naming this.
  GpuShard(ShardGrammar& grammar, std::shared_ptr<plan::ShardLayout> layout,
           std::shared_ptr<DeviceContext> ctx, bool keep_symbols = false,
           const std::optional<std::string>& bodies_unchecked = std::nullopt);
  /// An empty shard to be filled by merge_shards (a batch: one merged DAG of several shards).
  explicit GpuShard(std::shared_ptr<DeviceContext> ctx);
  const ShardGrammar& grammar() const override { return g; }
  /// Global id of (merged) document d.
  DocId doc_id(uint32_t d) const { return h_doc_ids.empty() ? g.first_doc + d : h_doc_ids[d]; }
  /// Host copy of ch_item (the selector's; a batch downloads it on first use).
  const std::vector<uint32_t>& host_children() const;
  /// Moves the shard, loaded through a load lane's context, to `to` (a context of the same
  /// device, the engine's): every buffer's accounting and free go to `to`'s pool and stream.
  /// Call after the load (which synchronized the lane's stream) and before any query.
  void rehome(std::shared_ptr<DeviceContext> to);

  uint32_t num_inner_levels() const { return static_cast<uint32_t>(levels.size()); }
  UnitCsr children() const {
    return {ch_off.data(), ch_unit.data(), ch_item.data(), ch_cnt.data()};
  }
  UnitCsr terms() const { return {tm_off.data(), tm_unit.data(), tm_item.data(), tm_cnt.data()}; }

  std::shared_ptr<DeviceContext> ctx;  // declared first: destroyed after every buffer
  /// Unique per loaded shard in the process (batch cache keys; addresses may be reused).
  uint64_t serial = 0;
  uint32_t batch_shards = 1;  ///< shards merged into this one (1: a loaded shard)
  /// A loaded shard: its grammar without the symbols (on the device, re-encoded as `body`); its
  /// local_words are the shard's vocabulary (local word index -> global word id, ascending). A
  /// batch: local_words (the union of its shards'), num_words, num_docs, first_doc (of its first
  /// document), level_offsets (inner levels only) and rule_length (inner rules) only.
  ShardGrammar g;
  uint32_t inner = 0;  ///< rules other than the root
  uint32_t num_docs = 0;
  uint32_t units = 0;               ///< inner + num_docs
  uint64_t S = 0;                   ///< symbols of all bodies

  DeviceBuffer<uint32_t> body;        ///< S re-encoded symbols
  DeviceBuffer<uint32_t> sym_unit;    ///< S: unit of each position (kNoUnit at boundaries)
  DeviceBuffer<uint64_t> unit_begin;  ///< units: absolute body range of each unit
  DeviceBuffer<uint64_t> unit_end;
  DeviceBuffer<uint64_t> ch_off;  ///< children: distinct child rules per unit, with uses
  DeviceBuffer<uint32_t> ch_unit, ch_item, ch_cnt;
  DeviceBuffer<uint64_t> tm_off;  ///< terms: distinct local words per unit, with uses
  DeviceBuffer<uint32_t> tm_unit, tm_item, tm_cnt;
  DeviceBuffer<uint64_t> root_uses;   ///< inner: occurrences in the root (all segments)
  DeviceBuffer<uint32_t> level_of;    ///< inner: height
  DeviceBuffer<uint32_t> sched;       ///< inner rules grouped by level and class
  DeviceBuffer<uint32_t> top_rules;   ///< rules with root_uses > 0
  std::vector<LevelSchedule> levels;  ///< inner levels, by height

  /// Batches whose documents are not one contiguous id range: merged document -> global id.
  DeviceBuffer<uint32_t> doc_ids;
  std::vector<DocId> h_doc_ids;

  // Host copies for the selector and for sizing.
  std::vector<uint64_t> h_ch_off, h_tm_off;
  mutable std::vector<uint32_t> h_ch_item;  ///< see host_children()
  mutable bool have_h_ch_item = false;
  std::vector<uint64_t> h_body_len;  ///< units: body symbols
  std::string load_phases;  ///< GTADOC_GPU_PHASES=1: the load's phase times ("name=ms ...")

  /// Reused preparations of earlier queries (mutable: queries are serialized by the engine).
  mutable QueryCache cache;
};

/// Sets s.levels, s.sched and s.level_of from the inner levels `level_offsets` (H + 1 entries)
/// and s.h_body_len: the static level schedule grouped by workload class, built here unless
/// `prepared` (built ahead from the same lengths and levels) is given, on up to `threads` threads
/// (0: every CPU; for a batch's merged levels).
void build_level_schedule(GpuShard& s, const std::vector<uint32_t>& level_offsets,
                          plan::LevelSchedules* prepared = nullptr, unsigned threads = 1);

// device_bags.cu
/// Builds s.ch_*, s.tm_* (rows, units, items, counts), s.root_uses, s.top_rules and the host
/// copies s.h_ch_off, s.h_tm_off on the device from s.body and s.sym_unit (uploaded and derived
/// first), as the host layout would (worker/plan/shard_layout.h): `num_local` is the shard's
/// vocabulary size, `positions` the symbols inside units. False, with nothing built, when a
/// boundary lies inside a unit or a unit uses a rule of its own id or greater (or the root);
/// ResourceError when out of memory.
bool build_bags_on_device(GpuShard& s, uint32_t num_local, uint64_t positions);

// device_checks.cu
/// Whether the bodies of `g`, loaded into `s` with its bags built on the device (true from
/// build_bags_on_device) and its levels (build_level_schedule), meet the conditions formats/
/// grammar.h lists for a frame-checked grammar: every rule's stored uses (`rule_uses`, the inner
/// rules') and length (`rule_length`, every rule's, uploaded) and level, the root's length and
/// level, and every local word used. Waits for the stream.
bool bodies_valid_on_device(const GpuShard& s, const ShardGrammar& g,
                            const DeviceBuffer<uint64_t>& rule_length,
                            const DeviceBuffer<uint32_t>& rule_uses);

// gpu_batch.cu
/// One merged device DAG of `shards` (worker/plan/batch_plan.h), built with device-to-device copies
/// of their resident arrays (nothing is uploaded again but small maps). Throws ResourceError when
/// it does not fit. With GTADOC_GPU_PHASES=1, `timings` gets the build's phases ("plan=..ms ...").
std::unique_ptr<GpuShard> merge_shards(const std::vector<const GpuShard*>& shards,
                                       std::string* timings = nullptr);

/// The shard's vocabulary for `norm` (from the cache, or built and uploaded; `built`: built
/// ahead for this shard and normalization, taken).
std::shared_ptr<const PreparedVocab> prepared_vocab(const GpuShard& s, const Normalization& norm,
                                                    MemoryPool& pool, plan::Vocab* built = nullptr);

/// Own entries of every unit (see the file comment) and the size of their item space.
struct OwnSet {
  UnitCsr csr;
  /// Host copy of csr.off: a view of the shard's own (its lifetime) or of h_off_store. Never a
  /// copy of the shard's: copying its 2-3 M offsets cost word-count 2 ms of its 4.6 (H200, 450 MB).
  std::span<const uint64_t> h_off;
  uint64_t items = 0;
  // storage when the set is not a view of the shard's arrays (a moved vector keeps its buffer)
  std::vector<uint64_t> h_off_store;
  DeviceBuffer<uint64_t> off_store;
  DeviceBuffer<uint32_t> unit_store, item_store, cnt_store;
  uint64_t entries() const { return h_off.empty() ? 0 : h_off.back(); }
};

/// How an item becomes record key values (trivially copyable, passed to kernels).
struct KeySpec {
  uint32_t n = 1;                       ///< words per item
  const uint32_t* gid_items = nullptr;  ///< n word items per n-gram id (sequence tasks)
  const uint32_t* item_word = nullptr;  ///< word item -> normalized word id
  DocSlot slot = DocSlot::kNone;
  DocId first_doc = 0;
  const uint32_t* doc_ids = nullptr;  ///< when set: local document -> global id (batches)
  uint32_t width() const { return n + (slot == DocSlot::kNone ? 0 : 1); }
};

/// Phase timings for profiling without a profiler (GTADOC_GPU_PHASES=1): each mark waits for
/// the stream and adds the time since the previous mark to the phase's total; the engine logs
/// the totals per query. Off by default (the waits cost time); marks are then free.
class PhaseLog {
 public:
  explicit PhaseLog(cudaStream_t stream);
  bool enabled() const { return enabled_; }
  void mark(const char* phase);
  std::string summary() const;  ///< "phase=ms ..." in first-seen order, then the notes
  void note(std::string text) { notes_.push_back(std::move(text)); }

 private:
  cudaStream_t stream_;
  bool enabled_ = false;
  double last_ = 0;
  std::vector<std::pair<std::string, double>> totals_;
  std::vector<std::string> notes_;
};

/// Where a query's records go while the engine keeps them on the device (Engine::keep_records):
/// the device arrays of every batch the traversals emit, in order.
struct RecordSink {
  struct Part {
    DeviceBuffer<uint32_t> keys;
    DeviceBuffer<uint64_t> counts;
    uint64_t n = 0;
    uint32_t width = 0;
  };
  std::vector<Part> parts;
  /// Records spilled to the host (Engine::spill_records), older than every part above.
  std::vector<RecordBatch> spilled;
};

struct Query {
  Query(const GpuShard& shard, const QueryOptions& options)
      : s(shard),
        q(options),
        pool(shard.ctx->pool),
        stream(shard.ctx->stream.get()),
        phases(shard.ctx->stream.get()) {}
  const GpuShard& s;
  const QueryOptions& q;
  MemoryPool& pool;
  cudaStream_t stream;
  PhaseLog phases;
  RecordSink* sink = nullptr;  ///< set: records stay on the device (hand_over_records)
  void mark(const char* phase) {
    if (phases.enabled()) phases.mark(phase);
  }

  std::shared_ptr<const PreparedVocab> pv;  ///< the normalization's vocabulary
  const Vocab& vocab() const { return pv->vocab; }
  const uint32_t* lnorm = nullptr;      ///< device: local word -> item
  const uint32_t* item_word = nullptr;  ///< device: item -> normalized word id

  // Sequence tasks (k = n - 1 words of head and tail per inner rule).
  uint32_t n = 0, k = 0;
  std::shared_ptr<const PreparedSeq> ps;
  const uint64_t* slen = nullptr;  ///< device, inner: normalized expanded length
  const uint32_t *head = nullptr, *tail = nullptr;
  DeviceBuffer<uint32_t> gid_items;  ///< interned n-grams: n word items each

  DocSlot slot() const { return doc_slot(q); }
  KeySpec key_spec() const;
};

// ------------------------------------------------------------------ traversal entry points

// word_items.cu
/// Word tasks: own entries = terminal words, normalized (a view of the shard's terms when the
/// normalization is the identity, else a filtered copy without dropped words).
OwnSet word_own_set(Query& Q);

// topdown.cu
/// weight[r] = occurrences of inner rule r in the expanded root, level by level from the top.
DeviceBuffer<uint64_t> rule_weights(Query& Q);
/// Σ weight(unit) x own entries, for the whole shard.
RecordBatch topdown_global(Query& Q, const OwnSet& own, const DeviceBuffer<uint64_t>& weights);
/// Per document in [d0, d1): (doc, rule, weight) triples propagated level by level.
RecordBatch topdown_per_doc(Query& Q, const OwnSet& own, uint32_t d0, uint32_t d1);

// bottomup.cu
/// Per inner rule, the reduced (item, count) table of its expansion.
struct RuleTables {
  std::vector<DeviceBuffer<uint32_t>> items;  ///< per level
  std::vector<DeviceBuffer<uint64_t>> counts;
  DeviceBuffer<const uint32_t*> item_ptr;  ///< inner rule -> its row
  DeviceBuffer<const uint64_t*> count_ptr;
  DeviceBuffer<uint64_t> len;
  uint64_t entries = 0;
};
RuleTables build_rule_tables(Query& Q, const OwnSet& own);
RecordBatch bottomup_global(Query& Q, const OwnSet& own, const RuleTables& t);
RecordBatch bottomup_per_doc(Query& Q, const OwnSet& own, const RuleTables& t, uint32_t d0,
                             uint32_t d1);

// sequences.cu
/// Normalized lengths and head/tail buffers of every inner rule, bottom-up by levels
/// (Q.lnorm and Q.k must be set).
std::shared_ptr<const PreparedSeq> build_heads_tails(const Query& Q);
/// Where the local windows are: each window is counted at the position of its first word;
/// off[p] = windows starting before position p (S + 1 entries, exact prefix sums).
struct WindowIndex {
  DeviceBuffer<uint64_t> nxt;  ///< first position >= q with words or a boundary (S if none)
  DeviceBuffer<uint64_t> off;
  uint64_t windows = 0;
};
/// Counts the local windows of every position (skipping units of zero weight when `weights`).
WindowIndex index_windows(Query& Q, const uint64_t* weights);
/// Global sequence-count: Σ weight(unit) x local windows, for the windows starting at positions
/// [p0, p1) (the whole shard is [0, S); pieces let the engine bound memory).
RecordBatch sequence_count_topdown(Query& Q, const WindowIndex& idx, const uint64_t* weights,
                                   uint64_t p0, uint64_t p1);
/// Interns every local window: items = distinct n-grams (Q.gid_items), own = per-unit windows.
OwnSet intern_windows(Query& Q);

// records.cu
/// Records for every item with a non-zero count in the dense array acc[0 .. items).
RecordBatch emit_dense(Query& Q, const uint64_t* acc, uint64_t items);
/// Records for reduced pairs: key = (row << 32 | item), row = document - d0.
RecordBatch emit_pairs(Query& Q, const uint64_t* keys, const uint64_t* sums, uint64_t n,
                       uint32_t d0);
/// The first n records of device key/count arrays as a host RecordBatch (download_host).
RecordBatch download_records(const DeviceContext& ctx, const DeviceBuffer<uint32_t>& keys,
                             const DeviceBuffer<uint64_t>& counts, uint64_t n, uint32_t width);
/// The end of every traversal: the first n records of device key/count arrays as a host
/// RecordBatch (download_records), or, when the query has a sink, moved into it (an empty batch
/// of that width is returned).
RecordBatch hand_over_records(Query& Q, DeviceBuffer<uint32_t>&& keys,
                              DeviceBuffer<uint64_t>&& counts, uint64_t n, uint32_t width);
/// Concatenates record batches; with `merge`, equal keys across batches are summed.
RecordBatch merge_batches(std::vector<RecordBatch>& parts, uint32_t width, bool merge);

// device_records.cu
/// The records of a sink as one device-resident set (worker/device_records.h); the sink is
/// emptied. `bound`: the pool's bound for the set's reduce and row order (the engine's; the join
/// itself takes what it needs).
std::unique_ptr<DeviceRecords> join_records(std::shared_ptr<DeviceContext> ctx, RecordSink&& sink,
                                            uint32_t width, uint64_t bound);

// selector.cpp
/// The estimates for the query's kind (Q.vocab and Q.k set); global tasks need none.
SelectorEstimate estimate_traversals(const Query& Q);
/// The same from the shard alone (host arrays only, so several shards may be estimated at once
/// on host threads once host_children() has been called): `k` = n - 1 of a sequence task,
/// `vocab_size` = the normalized vocabulary's size for a word task.
SelectorEstimate estimate_traversals(const GpuShard& s, bool seq, uint64_t k, uint64_t vocab_size);
TraversalChoice select_traversal(const Query& Q, const SelectorEstimate& est,
                                 uint64_t free_device_bytes);

}  // namespace gtadoc::gpu
