// The GPU engine's batched pass (Engine::run_batch): several resident shards traversed
// as one merged DAG must give the records of the shards run one by one (compared after summing
// equal keys: the batch may already merge keys across shards), for every task, traversal and
// normalization; with shards of different depths, flat and degenerate shards, documents out of
// id order, sets changing between calls (the cached batch is rebuilt), and memory limits that
// force the fallback to smaller batches. Compiles without CUDA; skips at run time without a GPU.
#include <gtest/gtest.h>

#include "tests/testutil/engine_cases.h"

#include "worker/engine.h"

#ifdef GTADOC_HAVE_GPU_ENGINE

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "formats/dictionary.h"
#include "formats/grammar.h"
#include "tests/testutil/grammars.h"
#include "tests/testutil/record_diff.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc::gpu_batch_testing {
namespace {

using Rows = std::map<std::vector<uint32_t>, uint64_t>;

Rows reduced(const RecordBatch& b, uint32_t width) {
  Rows r;
  EXPECT_EQ(b.width, width);
  EXPECT_EQ(b.keys.size(), b.counts.size() * width);
  for (size_t i = 0; i < b.size(); ++i) {
    const auto k = b.key(i);
    EXPECT_NE(b.counts[i], 0u);
    r[std::vector<uint32_t>(k.begin(), k.end())] += b.counts[i];
  }
  return r;
}

/// 3 case variants and a punctuated form of 16 words, and punctuation --alnum drops.
Dictionary make_dictionary() {
  std::vector<std::string> w = {"--", "!", "...", "?"};
  for (int i = 0; i < 16; ++i) {
    const std::string s = std::string(1, static_cast<char>('a' + i)) + "x";
    w.push_back(s);
    w.push_back(std::string(1, static_cast<char>('A' + i)) + "x");
    w.push_back(std::string(1, static_cast<char>('A' + i)) + "X");
    w.push_back(s + ".");
  }
  std::sort(w.begin(), w.end());
  Dictionary d;
  for (const auto& s : w) d.push_back(s);
  return d;
}

/// A chain of `depth` nested rules (the deepest DAG of the batch) in `docs` documents.
ShardGrammar chain_shard(uint32_t V, uint32_t depth, uint32_t docs, DocId first_doc) {
  RawGrammar raw;
  for (uint32_t d = 0; d < docs; ++d) {
    if (d > 0) raw.symbols.push_back(boundary_symbol(d - 1));
    raw.symbols.push_back(V + 1 + d % depth);
    raw.symbols.push_back(d % V);
    raw.symbols.push_back(V + 1);
  }
  raw.offsets.push_back(raw.symbols.size());
  for (uint32_t i = 1; i <= depth; ++i) {
    raw.symbols.push_back((i * 7) % V);
    if (i < depth) raw.symbols.push_back(V + i + 1);
    raw.symbols.push_back((i * 3 + 1) % V);
    raw.offsets.push_back(raw.symbols.size());
  }
  return finalize_grammar(V, first_doc, docs, raw);
}

using testutil::TaskCase;
constexpr auto& kTasks = testutil::kTaskCases;

using testutil::ScopedEnv;

class GpuBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no CUDA device visible";
    engine = make_gpu_engine(0);
  }

  /// Shards of different shapes with consecutive document ids: random DAGs of several depths,
  /// a flat shard (no inner rule), a shard with an empty document, one document alone, a chain.
  std::vector<ShardGrammar> make_shards(uint64_t seed) {
    std::vector<ShardGrammar> out;
    DocId first = 5;
    auto add = [&](ShardGrammar g) {
      first += g.num_docs;
      out.push_back(std::move(g));
    };
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 3; ++i) {
      const uint32_t docs = 2 + static_cast<uint32_t>(rng() % 9);
      const uint32_t rules = 20 + static_cast<uint32_t>(rng() % 200);
      add(finalize_grammar(V, first, docs,
                           testutil::random_raw_grammar(V, docs, rules, 30, seed * 10 + i)));
    }
    add(finalize_grammar(V, first, 3, testutil::random_raw_grammar(V, 3, 0, 20, seed * 10 + 5)));
    testutil::RandomGrammarOptions empty;
    empty.empty_doc = 1;
    add(finalize_grammar(V, first, 4,
                         testutil::random_raw_grammar(V, 4, 30, 15, seed * 10 + 6, empty)));
    add(finalize_grammar(V, first, 1, testutil::random_raw_grammar(V, 1, 5, 6, seed * 10 + 7)));
    add(chain_shard(V, 25 + static_cast<uint32_t>(seed % 7), 6, first));
    return out;
  }

  /// run_batch(shards in `order`) == Σ run(shard) for every task x traversal x normalization.
  void check(const std::vector<LoadedShard*>& shards, const std::vector<Traversal>& traversals,
             const std::vector<std::pair<bool, bool>>& norms, uint32_t n) {
    for (auto [lower, alnum] : norms) {
      const Normalization norm = normalize_dictionary(dict, lower, alnum);
      for (const TaskCase& tc : kTasks)
        for (Traversal t : traversals) {
          QueryOptions q;
          q.task = tc.task;
          q.per_doc = tc.per_doc;
          q.n = n;
          q.lowercase = lower;
          q.alnum = alnum;
          q.traversal = t;
          const uint32_t width = key_layout(q).width;
          SCOPED_TRACE(::testing::Message()
                       << task_name(tc.task) << (tc.per_doc ? " per-doc" : "") << " "
                       << traversal_name(t) << " lower " << lower << " alnum " << alnum << " n "
                       << n << " shards " << shards.size());
          Rows want;
          for (LoadedShard* s : shards) {
            ShardRunStats st;
            for (const auto& [k, c] : reduced(engine->run(*s, q, norm, st), width)) want[k] += c;
          }
          std::vector<ShardRunStats> stats;
          const RecordBatch got = engine->run_batch(shards, q, norm, stats, 2);
          EXPECT_EQ(testutil::record_diff(want, reduced(got, width)), "");
          ASSERT_EQ(stats.size(), shards.size());
          for (const ShardRunStats& st : stats) {
            EXPECT_GE(st.init_s, 0);
            EXPECT_GE(st.traversal_s, 0);
            if (t == Traversal::kAuto) {
              EXPECT_FALSE(st.selector_reason.empty());
            } else {
              EXPECT_EQ(st.traversal, t);
            }
          }
          if (HasFailure()) return;
        }
    }
  }

  std::vector<std::unique_ptr<LoadedShard>> load(const std::vector<ShardGrammar>& gs) {
    std::vector<std::unique_ptr<LoadedShard>> out;
    for (const ShardGrammar& g : gs) out.push_back(engine->load(ShardGrammar(g)));
    return out;
  }
  static std::vector<LoadedShard*> pointers(const std::vector<std::unique_ptr<LoadedShard>>& v) {
    std::vector<LoadedShard*> out;
    for (const auto& p : v) out.push_back(p.get());
    return out;
  }

  Dictionary dict = make_dictionary();
  uint32_t V = dict.size();
  std::unique_ptr<Engine> engine;
};

TEST_F(GpuBatchTest, EveryTaskTraversalAndNormalization) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const auto loaded = load(make_shards(seed));
    check(pointers(loaded), {Traversal::kAuto, Traversal::kTopDown, Traversal::kBottomUp},
          {{false, false}, {true, false}, {true, true}}, 2 + static_cast<uint32_t>(seed));
    if (HasFailure()) return;
  }
}

TEST_F(GpuBatchTest, LongNgramsAndDocumentsOutOfIdOrder) {
  const auto loaded = load(make_shards(7));
  std::vector<LoadedShard*> order = pointers(loaded);
  std::reverse(order.begin(), order.end());
  std::swap(order[1], order[4]);
  check(order, {Traversal::kTopDown, Traversal::kBottomUp}, {{false, false}, {false, true}}, 8);
}

TEST_F(GpuBatchTest, SetsChangingBetweenCallsAndDegenerateBatches) {
  const auto loaded = load(make_shards(11));
  const auto more = load(make_shards(12));
  const std::vector<LoadedShard*> all = pointers(loaded);
  const std::vector<std::pair<bool, bool>> plain{{false, false}};
  const std::vector<Traversal> td{Traversal::kTopDown};
  check(all, td, plain, 3);
  // A shard dropped, another added; then the first set again; one shard; two flat ones.
  std::vector<LoadedShard*> changed(all.begin() + 1, all.end());
  changed.push_back(more[2].get());
  check(changed, td, plain, 3);
  check(all, td, plain, 3);
  check({all[2]}, td, plain, 3);
  check({all[3], more[3].get()}, {Traversal::kAuto, Traversal::kBottomUp}, plain, 2);
  // A shard dropped from memory while a batch containing it is cached: the next sets still work.
  auto extra = engine->load(make_shards(13)[0]);
  check({all[0], extra.get()}, td, plain, 2);
  extra.reset();
  check({all[0], all[1]}, td, plain, 2);
  // No shard: an empty batch of the task's width.
  std::vector<ShardRunStats> stats;
  QueryOptions q;
  q.task = Task::kTermVector;
  const RecordBatch none = engine->run_batch({}, q, Normalization{}, stats, 1);
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.width, 2u);
  EXPECT_TRUE(stats.empty());
  // Bad n and foreign shards are refused.
  q.task = Task::kSequenceCount;
  q.n = 9;
  EXPECT_THROW(engine->run_batch(all, q, Normalization{}, stats, 1), UsageError);
  auto cpu = make_cpu_engine(1);
  auto cpu_shard = cpu->load(make_shards(14)[0]);
  q.n = 3;
  std::vector<LoadedShard*> mixed{all[0], cpu_shard.get()};
  EXPECT_THROW(engine->run_batch(mixed, q, Normalization{}, stats, 1), Error);
}

/// Memory limits small enough that the merged DAG of all shards does not fit: the engine runs
/// halves (down to single shards) and the result stays exact, or fails with a clean error.
TEST_F(GpuBatchTest, OutOfMemoryFallsBackToSmallerBatches) {
  std::vector<ShardGrammar> gs;
  DocId first = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    gs.push_back(
        finalize_grammar(V, first, 6, testutil::random_raw_grammar(V, 6, 3000, 400, 900 + i)));
    first += 6;
  }
  auto& sinks = spdlog::default_logger()->sinks();
  int exact = 0, split = 0, refused = 0;
  for (const TaskCase& tc : {TaskCase{Task::kWordCount}, TaskCase{Task::kInvertedIndex},
                             TaskCase{Task::kSequenceCount, true}}) {
    QueryOptions q;
    q.task = tc.task;
    q.per_doc = tc.per_doc;
    q.traversal = Traversal::kTopDown;
    const uint32_t width = key_layout(q).width;
    const Normalization norm;
    Rows want;
    {
      auto loaded = load(gs);
      for (auto& s : loaded) {
        ShardRunStats st;
        for (const auto& [k, c] : reduced(engine->run(*s, q, norm, st), width)) want[k] += c;
      }
    }
    for (uint64_t limit : {uint64_t{1} << 24, uint64_t{1} << 22, uint64_t{1} << 21,
                           uint64_t{1} << 20, uint64_t{1} << 18, uint64_t{1} << 12}) {
      SCOPED_TRACE(::testing::Message() << task_name(tc.task) << " limit " << limit);
      ScopedEnv env("GTADOC_GPU_QUERY_MEMORY_LIMIT", std::to_string(limit));
      engine = make_gpu_engine(0);
      auto loaded = load(gs);
      auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
      sinks.push_back(ring);
      try {
        for (int round = 0; round < 2; ++round) {  // the second call reuses what fitted
          std::vector<ShardRunStats> stats;
          const RecordBatch got = engine->run_batch(pointers(loaded), q, norm, stats, 2);
          EXPECT_EQ(testutil::record_diff(want, reduced(got, width)), "");
          EXPECT_EQ(stats.size(), loaded.size());
        }
        ++exact;
      } catch (const ResourceError& e) {
        EXPECT_NE(std::string(e.what()).find("memory"), std::string::npos) << e.what();
        ++refused;
      }
      sinks.erase(std::remove(sinks.begin(), sinks.end(), ring), sinks.end());
      for (const std::string& line : ring->last_formatted())
        if (line.find("in halves") != std::string::npos) {
          ++split;
          break;
        }
    }
  }
  EXPECT_GT(exact, 0);
  EXPECT_GT(split, 0) << "no limit forced a smaller batch";
  std::printf("memory limits: %d exact, %d with smaller batches, %d refused\n", exact, split,
              refused);
}

}  // namespace
}  // namespace gtadoc::gpu_batch_testing

#else  // no GPU engine in this build

TEST(GpuBatchTest, NotBuilt) {
  EXPECT_FALSE(gtadoc::gpu_available());
  GTEST_SKIP() << "built without CUDA";
}

#endif
