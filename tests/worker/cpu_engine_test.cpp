// CPU engine against the brute force (expand + std::map): every task x traversal x
// normalization x n x threads, on random DAGs and adversarial grammars.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

#include "cluster/reduce.h"
#include "common/error.h"
#include "tests/testutil/scoped_env.h"
#include "tests/worker/cpu_test_util.h"

namespace gtadoc::testing_cpu {
namespace {

class CpuEngineTest : public ::testing::Test {
 protected:
  Dictionary dict = test_dictionary();
  uint32_t V = dict.size();
  std::vector<WordId> punct = punctuation_words(dict);
  WordId word(const char* s) const { return dict.find(s); }
};

TEST_F(CpuEngineTest, RandomDags) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    RandomSpec spec;
    spec.rules = 10 + 10 * static_cast<uint32_t>(seed);
    spec.first_doc = seed % 2 ? 0 : 1000 * static_cast<DocId>(seed);
    spec.p_rule = 0.3 + 0.1 * static_cast<double>(seed % 4);
    EXPECT_GT(run_matrix(random_grammar(spec, V, seed), dict), 0);
  }
}

TEST_F(CpuEngineTest, DeepChainOf200Rules) {
  RawBuilder b(V);
  uint32_t prev = b.add({word("the"), word("cat")});
  std::vector<uint32_t> chain{prev};
  for (int i = 1; i < 200; ++i) {
    // Alternate words around the nested rule; every tenth level only punctuation (dropped).
    Symbol left = i % 10 == 0 ? word("--") : word(i % 2 ? "sat" : "On");
    Symbol right = i % 7 == 0 ? word("...") : word(i % 3 ? "mat." : "DOG");
    prev = b.add({left, b.rule(prev), right});
    chain.push_back(prev);
  }
  std::vector<std::vector<Symbol>> docs = {
      {b.rule(chain[199])},
      {word("a"), b.rule(chain[100]), b.rule(chain[150]), word("A")},
      {b.rule(chain[0]), b.rule(chain[0])},
      {},
      {b.rule(chain[199]), b.rule(chain[198])}};
  ShardGrammar g = b.finalize(docs, 7);
  EXPECT_EQ(dag_depth(g), 200u);
  run_matrix(g, dict);
}

TEST_F(CpuEngineTest, OneVeryLongRuleAndLongSegment) {
  std::mt19937_64 rng(11);
  RawBuilder b(V);
  uint32_t small = b.add({word("cat"), word("sat")});
  uint32_t tiny = b.add({word("!")});
  std::vector<Symbol> longbody;
  for (int i = 0; i < 6000; ++i) {
    uint64_t x = rng() % 10;
    longbody.push_back(x == 0 ? b.rule(small) : x == 1 ? b.rule(tiny) : Symbol(rng() % V));
  }
  uint32_t big = b.add(longbody);
  std::vector<Symbol> longdoc;
  for (int i = 0; i < 5000; ++i) longdoc.push_back(i % 5 == 0 ? b.rule(small) : Symbol(rng() % V));
  std::vector<std::vector<Symbol>> docs = {
      {b.rule(big), word("the"), b.rule(big)}, longdoc, {b.rule(tiny)}, {b.rule(big)}};
  MatrixOptions opt;
  opt.ns = {2, 5, 8};
  run_matrix(b.finalize(docs), dict, opt);
}

TEST_F(CpuEngineTest, ManyTinyRules) {
  RandomSpec spec;
  spec.rules = 3000;
  spec.max_body = 2;
  spec.docs = 40;
  spec.max_doc = 30;
  spec.p_rule = 0.7;
  MatrixOptions opt;
  opt.ns = {2, 3, 8};
  run_matrix(random_grammar(spec, V, 99), dict, opt);
}

TEST_F(CpuEngineTest, NgramsSpanningManyRules) {
  // Rules of one word, and rules that only hold punctuation (empty under --alnum), nested so
  // that one n-gram crosses many rule boundaries.
  RawBuilder b(V);
  std::vector<uint32_t> one;
  for (const char* w : {"the", "cat", "sat", "on", "a", "mat", "dog", "run"})
    one.push_back(b.add({word(w)}));
  uint32_t p1 = b.add({word("--"), word("!")});
  uint32_t p2 = b.add({b.rule(p1), word("...")});
  uint32_t p3 = b.add({b.rule(p2), b.rule(p1)});
  uint32_t x = b.add({b.rule(one[0]), b.rule(p3), b.rule(one[1])});
  uint32_t y = b.add({b.rule(x), b.rule(p2), b.rule(one[2]), b.rule(p1), b.rule(one[3])});
  uint32_t z = b.add({b.rule(one[4]), b.rule(y), b.rule(p3), b.rule(y), b.rule(one[5])});
  std::vector<std::vector<Symbol>> docs = {
      {b.rule(z)},
      {b.rule(p3), b.rule(one[6]), b.rule(p2), b.rule(one[7]), b.rule(p1)},
      {b.rule(one[0]), b.rule(one[1]), b.rule(one[2]), b.rule(one[3]), b.rule(one[4]),
       b.rule(one[5]), b.rule(one[6]), b.rule(one[7]), b.rule(one[0])},
      {b.rule(z), b.rule(p3), b.rule(z)}};
  run_matrix(b.finalize(docs, 3), dict);
}

TEST_F(CpuEngineTest, TinyDocumentsAndNLargerThanDocuments) {
  RawBuilder b(V);
  uint32_t two = b.add({word("the"), word("cat")});
  uint32_t three = b.add({b.rule(two), word("sat")});
  std::vector<std::vector<Symbol>> docs = {{},
                                           {word("a")},
                                           {word("a"), word("b\x01")},
                                           {b.rule(two)},
                                           {b.rule(three)},
                                           {word("--")},
                                           {word("!"), word("the"), word("...")},
                                           {b.rule(three), word("-")},
                                           {}};
  run_matrix(b.finalize(docs, 5), dict);
}

TEST_F(CpuEngineTest, AllIdenticalDocuments) {
  RawBuilder b(V);
  uint32_t r1 = b.add({word("the"), word("Cat"), word("sat")});
  uint32_t r2 = b.add({b.rule(r1), word("on"), b.rule(r1), word("mat.")});
  uint32_t r3 = b.add({b.rule(r2), b.rule(r2), word("the")});
  std::vector<std::vector<Symbol>> docs(20, std::vector<Symbol>{b.rule(r3), word("DOG")});
  run_matrix(b.finalize(docs), dict);
}

TEST_F(CpuEngineTest, EmptyShards) {
  RawBuilder b(V);
  run_matrix(b.finalize({{}}), dict);
  run_matrix(b.finalize({{}, {}, {}}, 42), dict);
  // Only dropped words: empty under --alnum.
  run_matrix(b.finalize({{word("--"), word("!")}, {word("...")}}), dict);
}

TEST_F(CpuEngineTest, RootWithoutRules) {
  RawBuilder b(V);
  run_matrix(b.finalize({{word("the"), word("cat"), word("The"), word("cat!")}, {word("a")}}, 9),
             dict);
}

TEST_F(CpuEngineTest, StatsAndForcedTraversal) {
  auto engine = make_cpu_engine(1);
  auto shard = engine->load(random_grammar({}, V, 3));
  Normalization norm = normalize_dictionary(dict, false, false);
  QueryOptions q;
  q.task = Task::kWordCount;
  ShardRunStats stats;
  engine->run(*shard, q, norm, stats);
  EXPECT_EQ(stats.traversal, Traversal::kTopDown);
  EXPECT_NE(stats.selector_reason.find("global"), std::string::npos);
  q.traversal = Traversal::kBottomUp;
  engine->run(*shard, q, norm, stats);
  EXPECT_EQ(stats.traversal, Traversal::kBottomUp);
  EXPECT_TRUE(stats.selector_reason.empty());
  q.task = Task::kInvertedIndex;
  q.traversal = Traversal::kAuto;
  engine->run(*shard, q, norm, stats);
  EXPECT_NE(stats.selector_reason.find("per-document"), std::string::npos);
}

TEST_F(CpuEngineTest, ShardsPreparedTogetherGiveTheSameRecords) {
  // prepare_shards builds every shard's structures several at once (two threads each) before
  // the shards run in turn; the records must be those of shards built at their turn.
  Normalization norm = normalize_dictionary(dict, false, false);
  for (Task task : {Task::kInvertedIndex, Task::kSequenceCount, Task::kWordCount}) {
    SCOPED_TRACE(task_name(task));
    QueryOptions q;
    q.task = task;
    q.n = 3;
    auto plain = make_cpu_engine(3);
    auto prepared = make_cpu_engine(3);
    std::vector<std::unique_ptr<LoadedShard>> a, b;
    DocId first = 0;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      RandomSpec spec;
      spec.rules = 20 + 7 * static_cast<uint32_t>(seed);
      spec.first_doc = first;
      first += spec.docs;
      a.push_back(plain->load(random_grammar(spec, V, seed)));
      b.push_back(prepared->load(random_grammar(spec, V, seed)));
    }
    std::vector<LoadedShard*> ptrs;
    for (auto& l : b) ptrs.push_back(l.get());
    prepared->prepare_shards(ptrs, q, norm, 5);
    prepared->prepare_shards(ptrs, q, norm, 5);  // again: nothing left to build
    for (size_t i = 0; i < a.size(); ++i) {
      ShardRunStats sa, sb;
      RecordBatch want = plain->run(*a[i], q, norm, sa);
      RecordBatch got = prepared->run(*b[i], q, norm, sb);
      reduce_records(want, 1);
      reduce_records(got, 1);
      EXPECT_EQ(want.keys, got.keys) << "shard " << i;
      EXPECT_EQ(want.counts, got.counts) << "shard " << i;
    }
  }
}

TEST_F(CpuEngineTest, SelectorRespectsMemoryBudget) {
  RandomSpec spec;
  spec.rules = 200;
  spec.docs = 50;
  auto engine = make_cpu_engine(1);
  auto shard = engine->load(random_grammar(spec, V, 5));
  Normalization norm = normalize_dictionary(dict, false, false);
  QueryOptions q;
  q.task = Task::kTermVector;
  ShardRunStats stats;
  {
    testutil::ScopedEnv budget("GTADOC_CPU_TABLE_BUDGET", "0");
    engine->run(*shard, q, norm, stats);
  }
  EXPECT_EQ(stats.traversal, Traversal::kTopDown);
  EXPECT_NE(stats.selector_reason.find("budget"), std::string::npos) << stats.selector_reason;
}

TEST_F(CpuEngineTest, SelectorPrefersBottomUpForManyDocsSharingADeepDag) {
  // 500 documents all reaching the same 40-rule DAG (2^40 words) through one symbol: top-down
  // per document re-walks the DAG every time, bottom-up builds the tables once.
  RawBuilder b(V);
  uint32_t prev = b.add({word("the"), word("cat")});
  for (int i = 0; i < 40; ++i) prev = b.add({b.rule(prev), Symbol(i % V), b.rule(prev)});
  std::vector<std::vector<Symbol>> docs(500, std::vector<Symbol>{b.rule(prev)});
  auto engine = make_cpu_engine(1);
  auto shard = engine->load(b.finalize(docs));
  Normalization norm = normalize_dictionary(dict, false, false);
  QueryOptions q;
  q.task = Task::kInvertedIndex;
  ShardRunStats stats;
  RecordBatch r = engine->run(*shard, q, norm, stats);
  EXPECT_EQ(stats.traversal, Traversal::kBottomUp) << stats.selector_reason;
  EXPECT_GT(r.size(), 0u);
}

TEST_F(CpuEngineTest, RejectsBadN) {
  auto engine = make_cpu_engine(1);
  auto shard = engine->load(random_grammar({}, V, 3));
  Normalization norm = normalize_dictionary(dict, false, false);
  QueryOptions q;
  q.task = Task::kSequenceCount;
  ShardRunStats stats;
  for (uint32_t n : {0u, 1u, 9u}) {
    q.n = n;
    EXPECT_THROW(engine->run(*shard, q, norm, stats), UsageError);
  }
}

TEST_F(CpuEngineTest, ThreadCountsAndDefaultNormalization) {
  ShardGrammar g = random_grammar({}, V, 8);
  for (unsigned engine_threads : {0u, 1u, 2u, 5u}) {
    auto engine = make_cpu_engine(engine_threads);
    auto shard = engine->load(ShardGrammar(g));
    EXPECT_EQ(shard->grammar().num_docs, g.num_docs);
    for (unsigned qt : {0u, 1u, 4u}) {
      QueryOptions q;
      q.task = Task::kSequenceCount;
      q.threads = qt;
      Normalization none;  // default: identity without an explicit remap
      ShardRunStats stats;
      RecordBatch r = engine->run(*shard, q, none, stats);
      EXPECT_EQ(record_diff(brute_force(g, none, q), to_map(r, 3)), "");
    }
  }
}

}  // namespace
}  // namespace gtadoc::testing_cpu
