// The GPU engine (host code: no kernels here): loads shards into device memory (GpuShard) and runs
// a query as init (the normalization remap uploaded as device arrays, head/tail buffers for
// sequence tasks, the traversal selector) followed by the traversal plan (worker/plan/
// traversal_plan.h) over the GPU operators. Out-of-memory never
// aborts a query: a failed bottom-up table build falls back to top-down, per-document work is
// retried in smaller batches of documents, global sequence-count in smaller pieces of the shard,
// and only when a single document (or position range of one symbol) does not fit is a ResourceError
// raised. run_batch traverses a rank's shards as one merged device DAG (gpu_batch.cu), cached per
// set of shards until a call passes another set; a batch that does not fit runs as two halves
// (recursively, down to single shards on their own DAGs), and the set is remembered as too big.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/cpus.h"
#include "common/error.h"
#include "common/parallel.h"
#include "common/settings.h"
#include "common/timer.h"
#include "worker/engine.h"
#include "worker/gpu/gpu_internal.h"
#include "worker/plan/thread_pool.h"
#include "worker/plan/traversal_plan.h"
#include "worker/records.h"

namespace gtadoc {
namespace gpu {
namespace {

int visible_devices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no device: not an error here
    return 0;
  }
  return n;
}

/// Bytes one query may allocate beyond what is resident (GTADOC_GPU_QUERY_MEMORY_LIMIT; unset =
/// up to the whole device). Lets operators share a GPU, and tests force the fallbacks.
uint64_t query_memory_limit() {
  return settings::bytes_if_set("GTADOC_GPU_QUERY_MEMORY_LIMIT").value_or(MemoryPool::kNoLimit);
}

/// Bytes the engine's pool may hold at once, resident shards and queries together
/// (gpu_memory_limit(), worker/engine.h: --gpu-memory-limit, else GTADOC_GPU_MEMORY_LIMIT; unset =
/// the whole device), taken when the engine is made. A load past its share (load_memory_limit)
/// fails as on a full device: the caller runs what is loaded and goes on, or splits the shard.
/// Tests use it to force those paths.
uint64_t engine_memory_limit() {
  const uint64_t cap = gpu_memory_limit();
  return cap != 0 ? cap : MemoryPool::kNoLimit;
}

/// Bytes the resident shards may take: a third of the engine's memory (`engine_limit`, or the
/// device's), the rest left to the queries' workspace. Loads that fill the whole memory
/// leave a query none: a rank streaming more shards than fit ran its batch out of memory, and
/// with half, the n-gram queries of the memory-capped pipeline check still did (they need over
/// twice a shard's resident bytes).
uint64_t load_memory_limit(uint64_t engine_limit) {
  uint64_t cap = engine_limit;
  if (cap == MemoryPool::kNoLimit) {
    size_t free_b = 0, total_b = 0;
    CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    cap = total_b;
  }
  return cap / 3;
}

/// Freed device memory the pool keeps between queries (beyond the resident shards), so the next
/// query's allocations are cheap; the rest goes back to the driver for NCCL and others.
constexpr uint64_t kKeepBetweenQueries = uint64_t{512} << 20;

/// A query's scope on the pool: applies its memory limit (and the engine's), and when the query is
/// over (after its buffers are gone, on success or error) waits for the stream and trims the pool.
class QueryScope {
 public:
  QueryScope(DeviceContext& ctx, uint64_t query_limit, uint64_t engine_limit) : ctx_(ctx) {
    MemoryPool& pool = ctx_.pool;
    pool.reset_peak();
    const uint64_t mine =
        query_limit == MemoryPool::kNoLimit ? MemoryPool::kNoLimit : pool.in_use() + query_limit;
    pool.set_limit(std::min(mine, engine_limit));
  }
  ~QueryScope() {
    ctx_.pool.set_limit(MemoryPool::kNoLimit);
    if (cudaStreamSynchronize(ctx_.stream.get()) == cudaSuccess) {
      ctx_.pool.trim(kKeepBetweenQueries);
    } else {
      (void)cudaGetLastError();  // already reported by the failing call
    }
  }
  QueryScope(const QueryScope&) = delete;
  QueryScope& operator=(const QueryScope&) = delete;

 private:
  DeviceContext& ctx_;
};

/// Device memory a query can still use: free memory plus what the pool holds unused.
uint64_t available_device_bytes(const DeviceContext& ctx) {
  size_t free_b = 0, total_b = 0;
  CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  cudaMemPool_t mp;
  CUDA_TRY(cudaDeviceGetDefaultMemPool(&mp, ctx.device));
  uint64_t reserved = 0, used = 0;
  CUDA_TRY(cudaMemPoolGetAttribute(mp, cudaMemPoolAttrReservedMemCurrent, &reserved));
  CUDA_TRY(cudaMemPoolGetAttribute(mp, cudaMemPoolAttrUsedMemCurrent, &used));
  uint64_t avail = free_b + (reserved > used ? reserved - used : 0);
  const MemoryPool& pool = ctx.pool;
  if (pool.limit() != MemoryPool::kNoLimit)
    avail = std::min(avail, pool.limit() > pool.in_use() ? pool.limit() - pool.in_use() : 0);
  return avail;
}

/// Runs f(d0, d1) over every document in batches, halving the batch after an out-of-memory.
template <class F>
RecordBatch for_document_batches(Query& Q, uint32_t width, F&& f) {
  const uint32_t D = Q.s.num_docs;
  std::vector<RecordBatch> parts;
  uint32_t batch = D, d = 0;
  while (d < D) {
    const uint32_t d1 = d + std::min(batch, D - d);
    try {
      parts.push_back(f(d, d1));
      d = d1;
    } catch (const ResourceError& e) {
      if (d1 - d <= 1)
        throw ResourceError("gpu engine: GPU memory exhausted by document " +
                            std::to_string(Q.s.doc_id(d)) + " alone (" + e.what() +
                            "); use --engine cpu or a GPU with more memory");
      batch = (d1 - d) / 2;
      spdlog::warn("gpu engine: out of GPU memory on documents {}..{}; retrying in batches of {}",
                   Q.s.doc_id(d), Q.s.doc_id(d1 - 1) + 1, batch);
    }
  }
  return merge_batches(parts, width, false);
}

/// Global sequence-count top-down, in position pieces when the whole shard does not fit. The
/// shard remembers the piece size that fitted: a resident shard's later queries start from it
/// instead of running out of memory (and warning) the same way each time.
RecordBatch global_sequence_count(Query& Q) {
  const DeviceBuffer<uint64_t> weights = rule_weights(Q);
  const WindowIndex idx = index_windows(Q, weights.data());
  std::vector<RecordBatch> parts;
  const uint64_t S = Q.s.S;
  // As many pieces as the size that fitted needs, of equal sizes.
  const auto fitted = Q.s.cache.seq_piece.find(Q.n);
  const uint64_t fit = fitted == Q.s.cache.seq_piece.end() ? S : fitted->second;  // >= 1
  const uint64_t count = fit >= S ? 1 : (S + fit - 1) / fit;
  const uint64_t piece = (S + count - 1) / count;
  std::deque<std::pair<uint64_t, uint64_t>> todo;
  for (uint64_t p = 0;; p += piece) {
    todo.push_back({p, std::min(S, p + piece)});
    if (p + piece >= S) break;
  }
  if (todo.size() > 1)
    spdlog::debug("gpu engine: sequence count in {} pieces of {} symbols (what fitted before)",
                  todo.size(), piece);
  while (!todo.empty()) {
    const auto [p0, p1] = todo.front();
    todo.pop_front();
    try {
      parts.push_back(sequence_count_topdown(Q, idx, weights.data(), p0, p1));
    } catch (const ResourceError& e) {
      if (p1 - p0 <= 1)
        throw ResourceError(std::string("gpu engine: GPU memory exhausted by the n-grams of a "
                                        "single symbol (") +
                            e.what() + "); use --engine cpu or a GPU with more memory");
      const uint64_t mid = p0 + (p1 - p0) / 2;
      spdlog::warn("gpu engine: out of GPU memory on symbols {}..{}; splitting", p0, p1);
      // The larger half: both are tried, and one that fails lowers it again.
      uint64_t& fits = Q.s.cache.seq_piece.try_emplace(Q.n, S).first->second;
      fits = std::min(fits, p1 - mid);
      todo.push_front({mid, p1});
      todo.push_front({p0, mid});
    }
  }
  return merge_batches(parts, Q.n, parts.size() > 1);
}

/// The GPU engine's operators for plan::run_traversal: per-document work in batches of documents
/// and bottom-up tables that fall back to top-down when they do not fit.
struct Operators {
  Query& Q;
  OwnSet own;
  std::unique_ptr<RuleTables> tables;
  uint32_t width() const { return Q.key_spec().width(); }
  RecordBatch sequence_count_topdown() { return global_sequence_count(Q); }
  void prepare_items() { own = is_sequence_task(Q.q.task) ? intern_windows(Q) : word_own_set(Q); }
  bool build_tables() {
    try {
      tables = std::make_unique<RuleTables>(build_rule_tables(Q, own));
      return true;
    } catch (const ResourceError& e) {
      spdlog::warn("gpu engine: bottom-up tables do not fit in GPU memory ({}); using top-down",
                   e.what());
      return false;
    }
  }
  RecordBatch topdown_global() {
    const DeviceBuffer<uint64_t> weights = rule_weights(Q);
    return gpu::topdown_global(Q, own, weights);
  }
  RecordBatch bottomup_global() { return gpu::bottomup_global(Q, own, *tables); }
  RecordBatch topdown_per_doc() {
    return for_document_batches(
        Q, width(), [&](uint32_t d0, uint32_t d1) { return gpu::topdown_per_doc(Q, own, d0, d1); });
  }
  RecordBatch bottomup_per_doc() {
    return for_document_batches(Q, width(), [&](uint32_t d0, uint32_t d1) {
      return gpu::bottomup_per_doc(Q, own, *tables, d0, d1);
    });
  }
};

double phase_clock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

PhaseLog::PhaseLog(cudaStream_t stream) : stream_(stream) {
  static const bool on = settings::flag("GTADOC_GPU_PHASES");
  enabled_ = on;
  if (enabled_) last_ = phase_clock();
}

void PhaseLog::mark(const char* phase) {
  CUDA_TRY(cudaStreamSynchronize(stream_));
  const double t = phase_clock();
  auto it =
      std::find_if(totals_.begin(), totals_.end(), [&](const auto& p) { return p.first == phase; });
  if (it == totals_.end()) {
    totals_.emplace_back(phase, 0.0);
    it = totals_.end() - 1;
  }
  it->second += t - last_;
  last_ = t;
}

std::string PhaseLog::summary() const {
  std::string out;
  for (const auto& [name, s] : totals_) out += fmt::format(" {}={:.3f}ms", name, s * 1e3);
  for (const std::string& n : notes_) out += "; " + n;
  return out;
}

namespace {

class GpuEngine final : public Engine {
 public:
  explicit GpuEngine(int device) : ctx_(std::make_shared<DeviceContext>(device)) {}

  std::string name() const override { return "gpu"; }
  void keep_host_grammars(bool on) override { keep_host_grammars_ = on; }

  std::unique_ptr<LoadedShard> load(ShardGrammar grammar) override {
    PreparedShard prepared{std::move(grammar), nullptr, {}};
    return load_prepared(prepared);
  }

  std::unique_ptr<LoadedShard> load_prepared(PreparedShard& prepared) override {
    std::lock_guard<std::mutex> lock(mu_);
    ctx_->activate();
    struct LimitScope {
      MemoryPool& pool;
      ~LimitScope() { pool.set_limit(MemoryPool::kNoLimit); }
    } limit{ctx_->pool};
    ctx_->pool.set_limit(load_memory_limit(memory_limit_));
    auto shard = load_on(ctx_, prepared, keep_host_grammars_);
    PhaseLog phases(ctx_->stream.get());
    ctx_->pool.trim(kKeepBetweenQueries);  // the load's sort buffers are no longer needed
    log_load(*shard, phases);
    return shard;
  }

  unsigned load_lanes() const override { return lanes_wanted_; }

  /// Loads on the load lanes, each shard on one lane (a context of its own: a stream, a pool
  /// account, pinned staging), so one shard's upload, bag build and synchronizations overlap
  /// another's; then moves the loaded shards to the engine's context. A load of one shard is a
  /// chain of small kernels and copies with synchronizations between them: alone it leaves the
  /// GPU mostly idle.
  std::vector<LoadOutcome> load_prepared_many(std::span<PreparedShard> shards) override {
    const unsigned n_lanes =
        static_cast<unsigned>(std::min<size_t>(lanes_wanted_, shards.size()));
    if (n_lanes <= 1) return Engine::load_prepared_many(shards);
    std::lock_guard<std::mutex> load_lock(load_mu_);
    start_lanes(n_lanes);
    std::vector<std::unique_ptr<GpuShard>> loaded(shards.size());
    std::vector<LoadOutcome> out(shards.size());
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    // Resident shards (the engine's pool) and the lanes' loads share one bound: each lane may
    // take an equal share of what the bound leaves, so that lanes loading at the same moment
    // cannot together pass it. A shard larger than its lane's share fails here and is loaded
    // on its own afterwards (load_prepared), against the whole bound.
    const uint64_t cap = load_memory_limit(memory_limit_);
    uint64_t used = ctx_->pool.in_use();
    for (unsigned t = 0; t < n_lanes; ++t) used += lanes_[t]->pool.in_use();
    const uint64_t share = cap > used ? (cap - used) / n_lanes : 0;
    lane_pool_->run([&](unsigned t) {
      if (t >= n_lanes) return;
      DeviceContext& lane = *lanes_[t];
      lane.activate();
      const uint64_t lane_bound = lane.pool.in_use() + share;
      for (size_t i = next++; i < shards.size() && !failed; i = next++) {
        lane.pool.set_limit(lane_bound);
        try {
          loaded[i] = load_on(lanes_[t], shards[i], keep_host_grammars_);
        } catch (...) {
          out[i].error = std::current_exception();
          failed = true;
        }
        lane.pool.set_limit(MemoryPool::kNoLimit);
      }
    });
    std::lock_guard<std::mutex> lock(mu_);
    ctx_->activate();
    for (size_t i = 0; i < shards.size(); ++i) {
      if (!loaded[i]) continue;
      loaded[i]->rehome(ctx_);
      PhaseLog phases(ctx_->stream.get());
      log_load(*loaded[i], phases);
      out[i].shard = std::move(loaded[i]);
    }
    ctx_->pool.trim(kKeepBetweenQueries);  // the loads' sort buffers are no longer needed
    return out;
  }

  /// A normalized query's vocabularies (plan::build_vocab: a sort of the shard's normalized word
  /// ids) on host threads, several shards at once, then uploaded in turn; query() finds them in
  /// the shards' caches. The identity's is a copy of the shard's words: built when needed.
  void prepare_vocabularies(std::span<LoadedShard* const> shards, const Normalization& norm,
                            unsigned threads) override {
    if (norm.identity || norm.cache_key == 0 || shards.size() < 2) return;
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<GpuShard*> todo;
    for (LoadedShard* sh : shards) {
      GpuShard& s = own_shard(*sh);
      if (s.cache.vocab.count(norm.cache_key) == 0) todo.push_back(&s);
    }
    if (todo.size() < 2) return;
    std::vector<plan::Vocab> built(todo.size());
    parallel_for(todo.size(), threads == 0 ? usable_cpus() : threads,
                 [&](size_t i) { built[i] = plan::build_vocab(todo[i]->g.local_words, norm); });
    ctx_->activate();
    for (size_t i = 0; i < todo.size(); ++i)
      (void)prepared_vocab(*todo[i], norm, ctx_->pool, &built[i]);
  }

  /// The traversal selector's estimates of a per-document query, several shards at once on host
  /// threads (each is a host pass over the shard's DAG, ~5 ms on 32 MiB of text: 14 shards took
  /// 0.06-0.1 s one after the other); query() then finds them in the shards' caches.
  /// GTADOC_GPU_PREPARE=0 leaves them to query() (for comparisons).
  void prepare_shards(std::span<LoadedShard* const> shards, const QueryOptions& q,
                      const Normalization& norm, unsigned threads) override {
    if (q.traversal != Traversal::kAuto || doc_slot(q) == DocSlot::kNone || shards.size() < 2)
      return;
    if (!settings::flag("GTADOC_GPU_PREPARE")) return;
    if (!norm.identity && norm.cache_key == 0) return;  // a hand-made normalization: no cache
    check_sequence_length(q);
    const bool seq = is_sequence_task(q.task);
    const uint64_t k = seq ? q.n - 1 : 0;
    const uint64_t norm_key = norm.identity ? 0 : norm.cache_key;
    const uint64_t key = norm_key << 8 | k;  // as query() keys them
    std::vector<GpuShard*> todo;
    std::vector<uint64_t> vocab_sizes;
    std::lock_guard<std::mutex> lock(mu_);
    ctx_->activate();
    for (LoadedShard* sh : shards) {
      GpuShard& s = own_shard(*sh);
      if (s.cache.estimates.count(key) != 0) continue;
      vocab_sizes.push_back(seq ? 0 : prepared_vocab(s, norm, ctx_->pool)->vocab.size());
      (void)s.host_children();  // a batch downloads it here, on the engine's thread
      todo.push_back(&s);
    }
    if (todo.size() < 2) return;
    std::vector<SelectorEstimate> est(todo.size());
    parallel_for(todo.size(), threads == 0 ? usable_cpus() : threads,
                 [&](size_t i) { est[i] = estimate_traversals(*todo[i], seq, k, vocab_sizes[i]); });
    for (size_t i = 0; i < todo.size(); ++i) todo[i]->cache.estimates[key] = est[i];
  }

  RecordBatch run(LoadedShard& shard, const QueryOptions& q, const Normalization& norm,
                  ShardRunStats& stats) override {
    GpuShard& s = own_shard(shard);
    check_sequence_length(q);
    std::lock_guard<std::mutex> lock(mu_);  // one query at a time on the stream and pool
    ctx_->activate();
    QueryScope scope(*ctx_, query_memory_limit(), memory_limit_);
    return query(s, q, norm, stats);
  }

  RecordBatch run_batch(std::span<LoadedShard* const> shards, const QueryOptions& q,
                        const Normalization& norm, std::vector<ShardRunStats>& stats,
                        unsigned threads) override {
    std::vector<GpuShard*> list;
    list.reserve(shards.size());
    for (LoadedShard* sh : shards) {
      GTADOC_EXPECTS(sh != nullptr, "gpu engine: null shard in a batch");
      list.push_back(&own_shard(*sh));
    }
    check_sequence_length(q);
    stats.assign(shards.size(), ShardRunStats{});
    const uint32_t width = key_layout(q).width;
    if (list.empty()) {
      RecordBatch empty;
      empty.width = width;
      return empty;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ctx_->activate();
    used_.clear();
    RecordBatch out = run_group(list, 0, list.size(), q, norm, stats, threads);
    // Batches of sets not used by this call are dropped: the resident set changed.
    for (auto it = batches_.begin(); it != batches_.end();)
      it = used_.count(it->first) ? std::next(it) : batches_.erase(it);
    out.width = width;
    return out;
  }

  void keep_records(bool on) override {
    std::lock_guard<std::mutex> lock(mu_);
    keep_ = on;
    if (!on) {
      ctx_->activate();
      sink_.parts.clear();
      sink_.spilled.clear();
    }
  }

  bool spill_records() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (sink_.parts.empty()) return false;
    ctx_->activate();
    for (RecordSink::Part& p : sink_.parts)
      sink_.spilled.push_back(download_records(*ctx_, p.keys, p.counts, p.n, p.width));
    spdlog::info("gpu engine: {} parts of records moved to host memory to make room",
                 sink_.parts.size());
    sink_.parts.clear();
    ctx_->stream.synchronize();
    ctx_->pool.trim(kKeepBetweenQueries);
    return true;
  }

  std::unique_ptr<DeviceRecords> take_records(uint32_t width) override {
    std::lock_guard<std::mutex> lock(mu_);
    keep_ = false;
    std::unique_ptr<DeviceRecords> out = join_records(ctx_, std::move(sink_), width, memory_limit_);
    sink_.parts.clear();
    return out;
  }

 private:
  GpuShard& own_shard(LoadedShard& shard) const {
    auto* s = dynamic_cast<GpuShard*>(&shard);
    GTADOC_EXPECTS(s != nullptr && s->ctx == ctx_ && s->batch_shards == 1,
                   "gpu engine: the shard was loaded by another engine");
    return *s;
  }

  using BatchKey = std::vector<uint64_t>;

  /// Shards [b, e) of `list` in one pass (their merged DAG, cached per set), or, when that does
  /// not fit in device memory, as two halves (recursively; one shard runs on its own DAG).
  RecordBatch run_group(const std::vector<GpuShard*>& list, size_t b, size_t e,
                        const QueryOptions& q, const Normalization& norm,
                        std::vector<ShardRunStats>& stats, unsigned threads) {
    if (e - b == 1) {
      QueryScope scope(*ctx_, query_memory_limit(), memory_limit_);
      return query(*list[b], q, norm, stats[b]);
    }
    BatchKey key;
    uint64_t symbols = 0;
    for (size_t i = b; i < e; ++i) {
      key.push_back(list[i]->serial);
      symbols += list[i]->S;
    }
    if (!too_big_.count(key)) {
      try {
        QueryScope scope(*ctx_, query_memory_limit(), memory_limit_);
        Timer build_timer;
        auto it = batches_.find(key);
        if (it == batches_.end()) {
          std::vector<const GpuShard*> members(list.begin() + static_cast<std::ptrdiff_t>(b),
                                               list.begin() + static_cast<std::ptrdiff_t>(e));
          std::string timings;
          it = batches_.emplace(key, merge_shards(members, &timings)).first;
          spdlog::debug("gpu engine: batch of {} shards merged in {:.3f}s ({} symbols, {} MiB)",
                        e - b, build_timer.seconds(), it->second->S, ctx_->pool.in_use() >> 20);
          if (!timings.empty())
            spdlog::warn("gpu phases: batch of {} shards merged, {} symbols:{}", e - b,
                         it->second->S, timings);
        }
        const double build_s = build_timer.seconds();
        used_.insert(key);
        ShardRunStats st;
        RecordBatch out = query(*it->second, q, norm, st);
        // One pass for all: its time is shared out by the shards' sizes.
        for (size_t i = b; i < e; ++i) {
          const double share = symbols == 0
                                   ? 1.0 / static_cast<double>(e - b)
                                   : static_cast<double>(list[i]->S) / static_cast<double>(symbols);
          stats[i].init_s = (st.init_s + build_s) * share;
          stats[i].traversal_s = st.traversal_s * share;
          stats[i].traversal = st.traversal;
          stats[i].selector_reason = st.selector_reason;
        }
        return out;
      } catch (const ResourceError& err) {
        batches_.erase(key);
        if (too_big_.size() >= 64) too_big_.clear();
        too_big_.insert(key);
        spdlog::warn(
            "gpu engine: a batch of {} shards does not fit in GPU memory ({}); running "
            "it in halves",
            e - b, err.what());
      }
    }
    const size_t mid = b + (e - b) / 2;
    std::vector<RecordBatch> parts;
    parts.push_back(run_group(list, b, mid, q, norm, stats, threads));
    parts.push_back(run_group(list, mid, e, q, norm, stats, threads));
    return concatenate(std::move(parts), key_layout(q).width, threads);
  }

  /// One query on one DAG (a loaded shard or a batch); the caller holds the lock and the scope.
  RecordBatch query(GpuShard& shard, const QueryOptions& q, const Normalization& norm,
                    ShardRunStats& stats) {
    GpuShard* s = &shard;
    const bool seq = is_sequence_task(q.task);
    Timer init_timer;
    Query Q(*s, q);
    Q.sink = keep_ ? &sink_ : nullptr;
    Q.pv = prepared_vocab(*s, norm, Q.pool);
    Q.lnorm = Q.pv->lnorm.data();
    Q.item_word = Q.pv->item_word.data();
    const uint64_t norm_key = norm.identity ? 0 : norm.cache_key;
    const bool cacheable = norm.identity || norm.cache_key != 0;
    if (seq) {
      Q.n = q.n;
      Q.k = q.n - 1;
      const uint64_t key = norm_key << 8 | Q.k;
      auto it = cacheable ? s->cache.seq.find(key) : s->cache.seq.end();
      if (it != s->cache.seq.end()) {
        Q.ps = it->second;
      } else {
        Q.ps = build_heads_tails(Q);
        if (cacheable) {
          if (s->cache.seq.size() >= QueryCache::kMaxEntries)
            s->cache.seq.erase(s->cache.seq.begin());
          s->cache.seq[key] = Q.ps;
        }
      }
      Q.slen = Q.ps->slen.data();
      Q.head = Q.ps->head.data();
      Q.tail = Q.ps->tail.data();
    }
    TraversalChoice choice;
    if (q.traversal == Traversal::kAuto) {
      SelectorEstimate est;
      if (Q.slot() != DocSlot::kNone) {
        const uint64_t key = norm_key << 8 | Q.k;
        auto it = cacheable ? s->cache.estimates.find(key) : s->cache.estimates.end();
        if (it != s->cache.estimates.end()) {
          est = it->second;
        } else {
          est = estimate_traversals(Q);
          if (cacheable) s->cache.estimates[key] = est;
        }
      }
      choice = select_traversal(Q, est, available_device_bytes(*ctx_));
      spdlog::info("gpu engine: {} on {} of docs {}..{}: {} ({})", task_name(q.task),
                   s->batch_shards > 1 ? fmt::format("a batch of {} shards", s->batch_shards)
                                       : std::string("shard"),
                   s->doc_id(0), s->doc_id(s->num_docs - 1) + 1, traversal_name(choice.traversal),
                   choice.reason);
    } else {
      choice.traversal = q.traversal;
    }
    ctx_->stream.synchronize();
    stats.init_s = init_timer.seconds();

    Q.mark("init");
    Timer traversal_timer;
    Traversal used = choice.traversal;
    RecordBatch out = traverse(Q, used);
    ctx_->stream.synchronize();
    Q.mark("rest");
    if (Q.phases.enabled())
      spdlog::warn("gpu phases: {} {} {} shard(s), docs {}..{}:{}", task_name(q.task),
                   traversal_name(used), s->batch_shards, s->doc_id(0),
                   s->doc_id(s->num_docs - 1) + 1, Q.phases.summary());
    out.width = key_layout(q).width;
    stats.traversal = used;
    stats.selector_reason = choice.reason;
    stats.traversal_s = traversal_timer.seconds();
    spdlog::debug("gpu engine: {} {} records, init {:.3f}s, traversal {:.3f}s, peak {} MiB",
                  task_name(q.task), out.size(), stats.init_s, stats.traversal_s,
                  ctx_->pool.peak() >> 20);
    return out;
  }

  /// Runs the traversal `used` (updated when memory forces top-down instead of bottom-up).
  static RecordBatch traverse(Query& Q, Traversal& used) {
    Operators ops{Q, {}, {}};
    return plan::run_traversal(Q.q, used, ops);
  }

  /// One shard loaded on `ctx` (the engine's or a lane's), its pool's limit set by the caller.
  static std::unique_ptr<GpuShard> load_on(const std::shared_ptr<DeviceContext>& ctx,
                                           PreparedShard& prepared, bool keep_symbols) {
    const uint64_t symbols = prepared.grammar.symbols.size();
    try {
      auto shard = std::make_unique<GpuShard>(prepared.grammar, prepared.layout, ctx, keep_symbols,
                                              prepared.bodies_unchecked);  // synchronizes
      prepared.layout.reset();
      prepared.bodies_unchecked.reset();
      return shard;
    } catch (const ResourceError& e) {
      throw ResourceError("gpu engine: not enough GPU memory to load a shard of " +
                          std::to_string(symbols) + " symbols (" + e.what() +
                          "; resident shards may take a third of the GPU's memory, the rest is "
                          "the queries': use more GPUs or --engine cpu)");
    }
  }

  static void log_load(const GpuShard& shard, PhaseLog& phases) {
    if (!phases.enabled()) return;
    phases.mark("trim");
    spdlog::warn("gpu load phases: shard of docs {}..{}, {} symbols, {} units:{}{}",
                 shard.g.first_doc, shard.g.first_doc + shard.num_docs, shard.S, shard.units,
                 shard.load_phases, phases.summary());
  }

  /// The load lanes, started by the first load_prepared_many that needs `n`.
  void start_lanes(unsigned n) {
    while (lanes_.size() < n) {
      auto lane = std::make_shared<DeviceContext>(ctx_->device);
      // The lanes' uploads run side by side: a few staging threads each.
      lane->staging_threads = std::max(2u, 16u / lanes_wanted_);
      lanes_.push_back(std::move(lane));
    }
    if (!lane_pool_ || lane_pool_->size() < n) lane_pool_ = std::make_unique<plan::ThreadPool>(n);
  }

  std::shared_ptr<DeviceContext> ctx_;
  const uint64_t memory_limit_ = engine_memory_limit();  ///< the pool's bound (kNoLimit: none)
  bool keep_host_grammars_ = false;  ///< Engine::keep_host_grammars
  std::mutex mu_;
  /// GTADOC_GPU_LOAD_LANES (1-16), else 4.
  const unsigned lanes_wanted_ = static_cast<unsigned>(settings::count("GTADOC_GPU_LOAD_LANES"));
  std::mutex load_mu_;  ///< one load_prepared_many at a time uses the lanes
  std::vector<std::shared_ptr<DeviceContext>> lanes_;
  std::unique_ptr<plan::ThreadPool> lane_pool_;
  bool keep_ = false;  ///< keep_records: queries hand their records to sink_
  RecordSink sink_;
  /// Merged DAGs of the sets of shards run together (keyed by the shards' serials, in order);
  /// kept while later calls use the same sets.
  std::map<BatchKey, std::unique_ptr<GpuShard>> batches_;
  std::set<BatchKey> used_;     ///< sets used by the current run_batch call
  std::set<BatchKey> too_big_;  ///< sets whose batch ran out of memory: run in halves
};

}  // namespace
}  // namespace gpu

bool gpu_available() {
  return gpu::visible_devices() > 0;
}

int gpu_count() {
  return gpu::visible_devices();
}

namespace {

std::mutex& warm_up_mutex() {
  static std::mutex m;
  return m;
}
std::future<void>& warm_up_done() {
  static std::future<void> f;
  return f;
}

}  // namespace

void warm_up_gpu(int local_rank, int devices) {
  if (!settings::flag("GTADOC_GPU_WARMUP")) return;
  std::lock_guard<std::mutex> lock(warm_up_mutex());
  if (warm_up_done().valid()) return;
  warm_up_done() = std::async(std::launch::async, [local_rank, devices] {
    // Errors are not this thread's to report: make_gpu_engine meets them again.
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
      (void)cudaGetLastError();
      return;
    }
    // The primary contexts the engines then use, created side by side.
    std::vector<std::thread> others;
    auto start = [n](int device) {
      if (cudaSetDevice(((device % n) + n) % n) == cudaSuccess) {
        try {
          gpu::apply_wait_policy();  // before the context starts: its first waits are the loads'
        } catch (const Error&) {
        }
        (void)cudaFree(nullptr);
      }
      (void)cudaGetLastError();
    };
    for (int d = 1; d < std::min(devices, n); ++d) others.emplace_back(start, local_rank + d);
    start(local_rank);
    for (std::thread& t : others) t.join();
  });
}

void finish_gpu_warm_up() {
  std::lock_guard<std::mutex> lock(warm_up_mutex());
  if (warm_up_done().valid()) warm_up_done().get();
}

std::unique_ptr<Engine> make_gpu_engine(int device) {
  finish_gpu_warm_up();
  const int count = gpu::visible_devices();
  if (count == 0) throw ResourceError("--engine gpu: no CUDA device is visible");
  const int d = ((device % count) + count) % count;
  return std::make_unique<gpu::GpuEngine>(d);
}

}  // namespace gtadoc
