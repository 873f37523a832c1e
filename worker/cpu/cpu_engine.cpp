// The CPU engine: loads shards (CpuShard), and runs a query as init (vocabulary, head/tail
// buffers, selector) followed by the traversal plan (worker/plan/traversal_plan.h) over the CPU
// operators.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/parallel.h"
#include "worker/cpu/cpu_internal.h"
#include "worker/engine.h"
#include "worker/plan/traversal_plan.h"

namespace gtadoc {
namespace cpu {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A loaded shard whose full load-time structures (CpuShard) are built on the first query that
/// needs them; global word tasks run on the stored grammar directly and never need them. The
/// grammar stays where it is when they are built: grammar() is the same object from the load on
/// (a resident session's search indexes hold it and read it while queries run).
class LazyShard final : public LoadedShard {
 public:
  explicit LazyShard(ShardGrammar g) : raw_(std::make_unique<ShardGrammar>(std::move(g))) {}
  /// The grammar's arrays go to the next shard's read (a streamed query drops each shard when
  /// its batch is done).
  ~LazyShard() override {
    full_.reset();
    recycle_grammar(std::move(*raw_));
  }
  LazyShard(const LazyShard&) = delete;
  LazyShard& operator=(const LazyShard&) = delete;
  const ShardGrammar& grammar() const override { return *raw_; }
  CpuShard& full(const Exec& ex) {
    if (!full_) full_ = std::make_unique<CpuShard>(*raw_, ex);
    return *full_;
  }
  bool built() const { return full_ != nullptr; }

 private:
  std::unique_ptr<ShardGrammar> raw_;  ///< never changed while the shard lives
  std::unique_ptr<CpuShard> full_;     ///< refers to *raw_
};

/// Global word tasks traversed top-down run on the stored grammar (word_count_direct): no
/// shard layout.
bool needs_no_layout(const QueryOptions& q) {
  const bool word_task = q.task == Task::kWordCount || q.task == Task::kSort;
  return word_task && q.traversal != Traversal::kBottomUp;
}

/// The CPU engine's operators for plan::run_traversal.
struct Operators {
  Query& Q;
  RuleTables tables;
  RecordBatch sequence_count_topdown() {
    return cpu::sequence_count_topdown(Q, rule_weights(Q.s, Q.ex));
  }
  void prepare_items() {
    if (is_sequence_task(Q.q.task)) {
      intern_windows(Q);
    } else {
      build_word_items(Q);
    }
  }
  bool build_tables() {
    tables = build_rule_tables(Q);
    return true;
  }
  RecordBatch topdown_global() { return cpu::topdown_global(Q, rule_weights(Q.s, Q.ex)); }
  RecordBatch topdown_per_doc() { return cpu::topdown_per_doc(Q); }
  RecordBatch bottomup_global() { return cpu::bottomup_global(Q, tables); }
  RecordBatch bottomup_per_doc() { return cpu::bottomup_per_doc(Q, tables); }
};

class CpuEngine final : public Engine {
 public:
  explicit CpuEngine(unsigned threads) : threads_(threads) {}

  std::string name() const override { return "cpu"; }

  std::unique_ptr<LoadedShard> load(ShardGrammar grammar) override {
    return std::make_unique<LazyShard>(std::move(grammar));
  }

  void prepare_shards(std::span<LoadedShard* const> shards, const QueryOptions& q,
                      const Normalization& /*norm*/, unsigned threads) override {
    if (needs_no_layout(q)) return;
    std::lock_guard<std::mutex> lock(mu_);  // built() may change beside (prepare_in_background)
    std::vector<LazyShard*> todo;
    for (LoadedShard* shard : shards) {
      auto* lazy = dynamic_cast<LazyShard*>(shard);
      if (lazy != nullptr && !lazy->built()) todo.push_back(lazy);
    }
    if (todo.size() < 2) return;  // one shard builds on every thread when it runs
    // A shard's layout scales to a few threads only (measured: docs/PERFORMANCE.md): several shards
    // at once, two threads each (one pool per shard in flight).
    const unsigned total = thread_count(threads);
    const unsigned per = std::min(2u, total);
    const unsigned at_once =
        static_cast<unsigned>(std::min<size_t>(todo.size(), std::max(1u, total / per)));
    std::atomic<size_t> next{0};
    on_slots(at_once, per, [&](size_t, const Exec& ex) {
      for (size_t i = next++; i < todo.size(); i = next++) todo[i]->full(ex);
    });
  }

  void prepare_in_background(LoadedShard& shard) override {
    LazyShard& lazy = lazy_of(shard);
    std::lock_guard<std::mutex> lock(mu_);
    if (!lazy.built()) lazy.full(Exec{nullptr, 1});
  }

  RecordBatch run(LoadedShard& shard, const QueryOptions& q, const Normalization& norm,
                  ShardRunStats& stats) override {
    LazyShard& lazy = lazy_of(shard);
    check_sequence_length(q);
    std::lock_guard<std::mutex> lock(mu_);  // one query at a time shares the pool
    return run_with(lazy, q, norm, stats, exec_for(q.threads), 1);
  }

  /// Several shards at once: the query's threads split into slots, each slot taking the next
  /// shard (one thread per slot once there are as many shards as threads). A shard is small
  /// work next to the whole; spreading the threads over shards keeps every one busy where a
  /// shard's own passes would not (the stored-grammar word count is one thread per shard). Each
  /// slot's per-document tables get its share of the table budget, so that the shards in flight
  /// together stay within it.
  RecordBatch run_batch(std::span<LoadedShard* const> shards, const QueryOptions& q,
                        const Normalization& norm, std::vector<ShardRunStats>& stats,
                        unsigned threads) override {
    check_sequence_length(q);
    for (LoadedShard* shard : shards) lazy_of(*shard);  // every shard is this engine's
    const unsigned total = thread_count(q.threads);
    if (shards.size() < 2 || total < 2) return Engine::run_batch(shards, q, norm, stats, threads);
    std::lock_guard<std::mutex> lock(mu_);
    const unsigned slots = static_cast<unsigned>(std::min<size_t>(shards.size(), total));
    const unsigned per = std::max(1u, total / slots);
    stats.assign(shards.size(), ShardRunStats{});
    const uint32_t width = key_layout(q).width;
    std::vector<std::vector<RecordBatch>> parts(slots);
    std::atomic<size_t> next{0};
    on_slots(slots, per, [&](size_t slot, const Exec& ex) {
      std::vector<RecordBatch>& mine = parts[slot];
      bool increasing = true;
      RecordRate rate;
      for (size_t i = next++; i < shards.size(); i = next++) {
        mine.push_back(run_with(lazy_of(*shards[i]), q, norm, stats[i], ex, slots, &rate));
        increasing = increasing && keys_increasing(mine.back());
      }
      // A slot's shards whose records come in key order (the word tasks') leave it merged: the
      // reduce then meets one sorted run per slot, not a run per shard to sort. Others are
      // copied once, below, with every slot's.
      if (increasing && mine.size() > 1) {
        RecordBatch merged = merge_increasing(std::move(mine), width);
        mine.clear();
        mine.push_back(std::move(merged));
      }
    });
    std::vector<RecordBatch> all;
    for (std::vector<RecordBatch>& mine : parts)
      for (RecordBatch& b : mine) all.push_back(std::move(b));
    return concatenate(std::move(all), width, total);
  }

 private:
  /// Runs f(slot, ex) for `slots` slots side by side, each on its own `per` threads (a pool per
  /// slot when per > 1).
  template <class F>
  static void on_slots(unsigned slots, unsigned per, F&& f) {
    std::vector<std::unique_ptr<ThreadPool>> pools(slots);
    for (auto& pool : pools)
      if (per > 1) pool = std::make_unique<ThreadPool>(per);
    parallel_for(slots, slots, [&](size_t slot) {
      f(slot, Exec{pools[slot].get(), pools[slot] ? per : 1});
    });
  }

  static LazyShard& lazy_of(LoadedShard& shard) {
    auto* lazy = dynamic_cast<LazyShard*>(&shard);
    GTADOC_EXPECTS(lazy != nullptr, "cpu engine: the shard was loaded by another engine");
    return *lazy;
  }

  /// Records per word of text of the shards a slot ran last: the next shard's expected records.
  struct RecordRate {
    double per_word = 0;
  };

  /// One shard's query on the threads of `ex`; `share`: shards running at once (each gets that
  /// share of the table budget); `rate`, when given, sizes the shard's record arrays from the
  /// shards before it and is updated from this one. The caller holds mu_ (or owns `ex` and the
  /// shard alone).
  RecordBatch run_with(LazyShard& lazy, const QueryOptions& q, const Normalization& norm,
                       ShardRunStats& stats, const Exec& ex, unsigned share,
                       RecordRate* rate = nullptr) {
    const bool seq = is_sequence_task(q.task);
    const auto t0 = std::chrono::steady_clock::now();
    if (needs_no_layout(q)) {
      stats.traversal = Traversal::kTopDown;
      stats.selector_reason = q.traversal == Traversal::kAuto
                                  ? "global task: one top-down pass over the rules, no tables"
                                  : "";
      stats.init_s = 0;
      RecordBatch out = word_count_direct(lazy.grammar(), norm);
      stats.traversal_s = seconds_since(t0);
      return out;
    }
    CpuShard* s = &lazy.full(ex);
    Query Q{*s, q, ex, share, 0, {}, {}, {}};
    const double words =
        s->g.rule_length.empty() ? 0.0 : static_cast<double>(s->g.rule_length[s->g.root()]);
    if (rate != nullptr && rate->per_word > 0)  // an eighth more than the rate gives
      Q.expected_records = static_cast<uint64_t>(rate->per_word * words * 1.125);
    Q.vocab = plan::build_vocab(s->local_words, norm);
    if (seq) build_heads_tails(Q);
    TraversalChoice choice;
    if (q.traversal == Traversal::kAuto) {
      choice = select_traversal(Q);
      spdlog::info("cpu engine: {} on shard of docs {}..{}: {} ({})", task_name(q.task),
                   s->g.first_doc, s->g.first_doc + s->num_docs, traversal_name(choice.traversal),
                   choice.reason);
    } else {
      choice.traversal = q.traversal;
    }
    stats.selector_reason = choice.reason;
    stats.init_s = seconds_since(t0);

    const auto t1 = std::chrono::steady_clock::now();
    Operators ops{Q, {}};
    RecordBatch out = plan::run_traversal(q, choice.traversal, ops);
    out.width = Q.key_width();
    if (rate != nullptr && words > 0) rate->per_word = static_cast<double>(out.size()) / words;
    stats.traversal = choice.traversal;
    stats.traversal_s = seconds_since(t1);
    spdlog::debug("cpu engine: {} {} records, init {:.3f}s, traversal {:.3f}s ({} threads)",
                  task_name(q.task), out.size(), stats.init_s, stats.traversal_s, Q.ex.threads);
    return out;
  }

  /// Threads for a query: the query's own setting, else the engine's, else the hardware's.
  unsigned thread_count(unsigned requested) const {
    const unsigned n = requested != 0 ? requested : threads_;
    return n != 0 ? n : std::max(1u, std::thread::hardware_concurrency());
  }
  Exec exec_for(unsigned requested) {
    const unsigned n = thread_count(requested);
    if (n <= 1) return Exec{nullptr, 1};
    if (!pool_ || pool_->size() != n) pool_ = std::make_unique<ThreadPool>(n);
    return Exec{pool_.get(), n};
  }

  unsigned threads_;
  std::mutex mu_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace
}  // namespace cpu

std::unique_ptr<Engine> make_cpu_engine(unsigned threads) {
  return std::make_unique<cpu::CpuEngine>(threads);
}

}  // namespace gtadoc
