// GPU engine against the CPU engine (and, for grammars small enough to expand, a brute-force
// count): every task x traversal x normalization x n on generated grammars — random DAGs, deep
// chains, one huge rule, many tiny rules, n-grams crossing many rules, tiny and identical
// documents — and at the sizes where the engine's work split changes (bodies and level widths
// around a warp, 32, and a block of rules, 1024). Records are compared as sorted (key, count)
// lists, so no order is assumed. Compiles without CUDA; skips at run time without a GPU.
#include <gtest/gtest.h>

#include "tests/testutil/brute_force.h"
#include "tests/testutil/engine_cases.h"
#include "tests/testutil/record_diff.h"

#include "worker/engine.h"
#include "worker/plan/shard_layout.h"

#ifdef GTADOC_HAVE_GPU_ENGINE

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "formats/dictionary.h"
#include "formats/grammar.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc::gpu_testing {
namespace {

using Row = std::pair<std::vector<uint32_t>, uint64_t>;
using Rows = std::vector<Row>;

/// Words with case variants, words --alnum trims or drops entirely, and bytes >= 0x80.
Dictionary make_dictionary() {
  std::vector<std::string> w = {"the",
                                "The",
                                "THE",
                                "the,",
                                "(the)",
                                "dog",
                                "Dog",
                                "DOG!",
                                "ran",
                                "over",
                                "Over",
                                "hill",
                                "hill.",
                                "a",
                                "A",
                                "b2",
                                "B2",
                                "--",
                                "...",
                                "!",
                                "?",
                                "\xc3\xa9t\xc3\xa9",
                                "\xc3\x89T\xc3\xa9",
                                "\xfe",
                                "\xfe?",
                                "x-y",
                                "'z'",
                                "z",
                                "Q",
                                "q",
                                "\x02",
                                "c\x02",
                                "fox",
                                "FOX",
                                "fox;",
                                "jump",
                                "jumped",
                                "-",
                                "7",
                                "8"};
  std::sort(w.begin(), w.end());
  w.erase(std::unique(w.begin(), w.end()), w.end());
  Dictionary d;
  for (const auto& s : w) d.push_back(s);
  return d;
}

/// Raw grammars: rule(body) returns a symbol referring to a new inner rule.
class Builder {
 public:
  explicit Builder(uint32_t num_words) : V_(num_words), bodies_(1) {}
  Symbol rule(std::vector<Symbol> body) {
    bodies_.push_back(std::move(body));
    return V_ + static_cast<Symbol>(bodies_.size() - 1);
  }
  uint32_t rules() const { return static_cast<uint32_t>(bodies_.size() - 1); }
  ShardGrammar finish(const std::vector<std::vector<Symbol>>& docs, DocId first_doc = 0) const {
    RawGrammar raw;
    raw.offsets = {0};
    for (size_t d = 0; d < docs.size(); ++d) {
      if (d > 0) raw.symbols.push_back(boundary_symbol(static_cast<uint32_t>(d - 1)));
      raw.symbols.insert(raw.symbols.end(), docs[d].begin(), docs[d].end());
    }
    raw.offsets.push_back(raw.symbols.size());
    for (size_t r = 1; r < bodies_.size(); ++r) {
      raw.symbols.insert(raw.symbols.end(), bodies_[r].begin(), bodies_[r].end());
      raw.offsets.push_back(raw.symbols.size());
    }
    return finalize_grammar(V_, first_doc, static_cast<uint32_t>(docs.size()), raw);
  }

 private:
  uint32_t V_;
  std::vector<std::vector<Symbol>> bodies_;
};

struct RandomShape {
  uint32_t rules = 40;
  uint32_t max_body = 5;
  uint32_t docs = 7;
  uint32_t max_doc = 14;
  double p_rule = 0.5;
  DocId first_doc = 0;
};

/// Random DAG; rules nothing uses are inserted into random documents so all are reachable.
ShardGrammar random_grammar(const RandomShape& shape, uint32_t V, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coin(0, 1);
  Builder b(V);
  std::vector<Symbol> made;
  std::vector<bool> used;
  auto symbol = [&]() -> Symbol {
    if (!made.empty() && coin(rng) < shape.p_rule) {
      const size_t i = rng() % made.size();
      used[i] = true;
      return made[i];
    }
    return static_cast<Symbol>(rng() % V);
  };
  for (uint32_t r = 0; r < shape.rules; ++r) {
    std::vector<Symbol> body(1 + rng() % shape.max_body);
    for (auto& s : body) s = symbol();
    made.push_back(b.rule(body));
    used.push_back(false);
  }
  std::vector<std::vector<Symbol>> docs(shape.docs);
  for (auto& d : docs) {
    d.resize(rng() % (shape.max_doc + 1));
    for (auto& s : d) s = symbol();
  }
  for (size_t r = 0; r < made.size(); ++r)
    if (!used[r] && !docs.empty()) {
      auto& d = docs[rng() % docs.size()];
      d.insert(d.begin() + static_cast<std::ptrdiff_t>(rng() % (d.size() + 1)), made[r]);
    }
  return b.finish(docs, shape.first_doc);
}

/// The brute-force records (tests/testutil/brute_force.h) as sorted rows.
Rows brute_force_rows(const ShardGrammar& g, const Normalization& norm, const QueryOptions& q) {
  const testutil::BruteForceRecords records = testutil::brute_force(g, norm, q);
  return Rows(records.begin(), records.end());
}

/// Sorted rows of a batch; adds a failure for a bad shape, a zero count or a duplicate key.
Rows canonical(const RecordBatch& b, uint32_t width, const std::string& who) {
  Rows rows;
  EXPECT_EQ(b.width, width) << who;
  if (b.keys.size() != b.counts.size() * width) {
    ADD_FAILURE() << who << ": " << b.keys.size() << " key values for " << b.counts.size()
                  << " records of width " << width;
    return rows;
  }
  rows.reserve(b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    rows.emplace_back(
        std::vector<uint32_t>(b.keys.begin() + i * width, b.keys.begin() + (i + 1) * width),
        b.counts[i]);
    if (b.counts[i] == 0) ADD_FAILURE() << who << ": zero count";
  }
  std::sort(rows.begin(), rows.end());
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i].first == rows[i - 1].first) {
      ADD_FAILURE() << who << ": duplicate key";
      break;
    }
  return rows;
}

/// "" when equal, else the first differences (tests/testutil/record_diff.h).
std::string difference(const Rows& want, const Rows& got) {
  if (want == got) return "";
  return testutil::record_diff(testutil::BruteForceRecords(want.begin(), want.end()),
                               testutil::BruteForceRecords(got.begin(), got.end()));
}

using testutil::TaskCase;
constexpr auto& kTasks = testutil::kTaskCases;

struct Matrix {
  std::vector<uint32_t> ns{2, 3, 5, 8};
  std::vector<std::pair<bool, bool>> norms{
      {false, false}, {true, false}, {false, true}, {true, true}};
  std::vector<Traversal> traversals{Traversal::kAuto, Traversal::kTopDown, Traversal::kBottomUp};
  bool brute = true;  ///< also compare with the brute force (small expansions only)
};

using testutil::ScopedEnv;

class GpuEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no CUDA device visible";
  }
  Engine& gpu() {
    if (!gpu_) gpu_ = make_gpu_engine(0);
    return *gpu_;
  }
  Engine& cpu() {
    if (!cpu_) cpu_ = make_cpu_engine(2);
    return *cpu_;
  }
  /// Every task (default n) of `gpu_engine` on `gs` equal to the CPU engine's on `cs`.
  void expect_every_task_as_cpu(Engine& gpu_engine, LoadedShard& gs, LoadedShard& cs,
                                const Normalization& norm) {
    for (const TaskCase& tc : kTasks) {
      QueryOptions q;
      q.task = tc.task;
      q.per_doc = tc.per_doc;
      ShardRunStats stats;
      const uint32_t width = key_layout(q).width;
      EXPECT_EQ(difference(canonical(cpu().run(cs, q, norm, stats), width, "cpu"),
                           canonical(gpu_engine.run(gs, q, norm, stats), width, "gpu")),
                "")
          << task_name(tc.task);
    }
  }
  WordId word(const char* s) const {
    const WordId w = dict.find(s);
    EXPECT_LT(w, dict.size()) << s;
    return w;
  }

  /// GPU == CPU (== brute force) for every configuration of `m`. Returns the GPU runs done.
  int check(const ShardGrammar& g, const Matrix& m = {}) {
    auto cpu_shard = cpu().load(ShardGrammar(g));
    auto gpu_shard = gpu().load(ShardGrammar(g));
    EXPECT_EQ(gpu_shard->grammar().num_docs, g.num_docs);
    int runs = 0, failures = 0;
    for (auto [lower, alnum] : m.norms) {
      const Normalization norm = normalize_dictionary(dict, lower, alnum);
      for (const TaskCase& tc : kTasks) {
        const std::vector<uint32_t> ns =
            is_sequence_task(tc.task) ? m.ns : std::vector<uint32_t>{3};
        for (uint32_t n : ns) {
          QueryOptions q;
          q.task = tc.task;
          q.per_doc = tc.per_doc;
          q.n = n;
          q.lowercase = lower;
          q.alnum = alnum;
          const uint32_t width = key_layout(q).width;
          std::ostringstream what;
          what << task_name(tc.task) << (tc.per_doc ? " --per-doc" : "") << " n=" << n
               << " lowercase=" << lower << " alnum=" << alnum;
          ShardRunStats cstats;
          const Rows want = canonical(cpu().run(*cpu_shard, q, norm, cstats), width, "cpu");
          if (m.brute) {
            const std::string d = difference(brute_force_rows(g, norm, q), want);
            if (!d.empty()) {
              ADD_FAILURE() << what.str() << ": cpu engine vs brute force: " << d;
              ++failures;
            }
          }
          for (Traversal t : m.traversals) {
            q.traversal = t;
            ShardRunStats stats;
            RecordBatch got;
            try {
              got = gpu().run(*gpu_shard, q, norm, stats);
            } catch (const std::exception& e) {
              ADD_FAILURE() << what.str() << " traversal=" << traversal_name(t) << ": threw "
                            << e.what();
              if (++failures > 12) return runs;
              continue;
            }
            ++runs;
            const std::string d = difference(want, canonical(got, width, "gpu"));
            if (!d.empty()) {
              ADD_FAILURE() << what.str() << " traversal=" << traversal_name(t) << ": " << d;
              if (++failures > 12) return runs;
            }
            if (t == Traversal::kAuto) {
              EXPECT_FALSE(stats.selector_reason.empty()) << what.str();
            } else {
              EXPECT_EQ(stats.traversal, t) << what.str();
              EXPECT_TRUE(stats.selector_reason.empty()) << what.str();
            }
            EXPECT_GE(stats.init_s, 0);
            EXPECT_GE(stats.traversal_s, 0);
          }
        }
      }
    }
    return runs;
  }

  Dictionary dict = make_dictionary();
  uint32_t V = dict.size();
  std::unique_ptr<Engine> gpu_, cpu_;
};

TEST_F(GpuEngineTest, RandomDags) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    RandomShape shape;
    shape.rules = 15 + 12 * static_cast<uint32_t>(seed);
    shape.max_body = 2 + static_cast<uint32_t>(seed % 5);
    shape.docs = 3 + static_cast<uint32_t>(seed * 3 % 11);
    shape.p_rule = 0.25 + 0.1 * static_cast<double>(seed % 5);
    shape.first_doc = seed % 2 ? 0 : 777 * static_cast<DocId>(seed);
    EXPECT_GT(check(random_grammar(shape, V, seed)), 0);
  }
}

TEST_F(GpuEngineTest, DeepChainOf200NestedRules) {
  Builder b(V);
  Symbol prev = b.rule({word("the"), word("dog")});
  std::vector<Symbol> chain{prev};
  for (int i = 1; i < 200; ++i) {
    // Words around the nested rule; some levels add only punctuation (dropped by --alnum).
    const Symbol left = i % 9 == 0 ? word("--") : word(i % 2 ? "ran" : "Over");
    const Symbol right = i % 7 == 0 ? word("...") : word(i % 3 ? "hill." : "FOX");
    prev = b.rule({left, prev, right});
    chain.push_back(prev);
  }
  const std::vector<std::vector<Symbol>> docs = {{chain[199]},
                                                 {word("a"), chain[120], chain[160], word("A")},
                                                 {chain[0], chain[0], chain[1]},
                                                 {},
                                                 {chain[199], chain[198], word("!")}};
  const ShardGrammar g = b.finish(docs, 11);
  EXPECT_EQ(dag_depth(g), 200u);
  check(g);
}

TEST_F(GpuEngineTest, OneHugeRuleOf100kSymbols) {
  std::mt19937_64 rng(17);
  Builder b(V);
  const Symbol small = b.rule({word("fox"), word("jump")});
  const Symbol dropped = b.rule({word("!"), word("--")});
  const Symbol mid = b.rule({small, word("the"), small, dropped, word("hill")});
  std::vector<Symbol> body;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t x = rng() % 12;
    body.push_back(x == 0 ? small : x == 1 ? dropped : x == 2 ? mid : Symbol(rng() % V));
  }
  const Symbol huge = b.rule(body);
  std::vector<Symbol> long_doc;
  for (int i = 0; i < 20000; ++i) long_doc.push_back(i % 6 == 0 ? mid : Symbol(rng() % V));
  const std::vector<std::vector<Symbol>> docs = {
      {huge, word("the"), huge}, long_doc, {dropped}, {huge}, {small, huge, small}};
  Matrix m;
  m.ns = {2, 5, 8};
  m.norms = {{false, false}, {true, true}};
  m.brute = false;
  check(b.finish(docs, 3), m);
}

/// A shard whose bodies take several staging slots (2 MiB each): loaded through every way a
/// load's host arrays may reach the GPU (GTADOC_GPU_UPLOAD), each answering every task as the
/// CPU engine.
TEST_F(GpuEngineTest, EveryUploadWayLoadsTheSameShard) {
  std::mt19937_64 rng(23);
  Builder b(V);
  const Symbol small = b.rule({word("fox"), word("jump")});
  std::vector<Symbol> body;
  for (int i = 0; i < 1400000; ++i) body.push_back(i % 9 == 0 ? small : Symbol(rng() % V));
  const Symbol huge = b.rule(body);
  const std::vector<std::vector<Symbol>> docs = {{huge, word("the")}, {small, huge}, {small}};
  const ShardGrammar g = b.finish(docs, 3);
  ASSERT_GT(g.symbols.size() * sizeof(uint32_t), size_t{4} << 20);  // more than two slots
  auto cs = cpu().load(ShardGrammar(g));
  const Normalization none;
  for (const char* way : {"staged", "double", "registered", "pageable"}) {
    SCOPED_TRACE(way);
    ScopedEnv env("GTADOC_GPU_UPLOAD", way);
    auto gs = gpu().load(ShardGrammar(g));
    expect_every_task_as_cpu(gpu(), *gs, *cs, none);
  }
}

TEST_F(GpuEngineTest, ManyTinyRules) {
  RandomShape shape;
  shape.rules = 4000;
  shape.max_body = 2;
  shape.docs = 50;
  shape.max_doc = 25;
  shape.p_rule = 0.75;
  Matrix m;
  m.ns = {2, 3, 8};
  check(random_grammar(shape, V, 99), m);
}

TEST_F(GpuEngineTest, NgramsSpanningManyRules) {
  Builder b(V);
  std::vector<Symbol> one;
  for (const char* w : {"the", "dog", "ran", "over", "a", "hill", "fox", "jump"})
    one.push_back(b.rule({word(w)}));
  const Symbol p1 = b.rule({word("--"), word("!")});
  const Symbol p2 = b.rule({p1, word("...")});
  const Symbol p3 = b.rule({p2, p1});
  const Symbol x = b.rule({one[0], p3, one[1]});
  const Symbol y = b.rule({x, p2, one[2], p1, one[3]});
  const Symbol z = b.rule({one[4], y, p3, y, one[5]});
  const Symbol zz = b.rule({z, p3, z});
  const std::vector<std::vector<Symbol>> docs = {
      {z},
      {p3, one[6], p2, one[7], p1},
      {one[0], one[1], one[2], one[3], one[4], one[5], one[6], one[7], one[0]},
      {zz, p3, zz},
      {p1, p2, p3}};
  check(b.finish(docs, 4));
}

TEST_F(GpuEngineTest, TinyDocumentsAndNLongerThanDocuments) {
  Builder b(V);
  const Symbol two = b.rule({word("the"), word("dog")});
  const Symbol three = b.rule({two, word("ran")});
  const std::vector<std::vector<Symbol>> docs = {{},
                                                 {word("a")},
                                                 {word("a"), word("c\x02")},
                                                 {two},
                                                 {three},
                                                 {word("--")},
                                                 {word("!"), word("the"), word("...")},
                                                 {three, word("-")},
                                                 {},
                                                 {word("Q"), word("q")}};
  check(b.finish(docs, 5));
}

TEST_F(GpuEngineTest, AllIdenticalDocuments) {
  Builder b(V);
  const Symbol r1 = b.rule({word("the"), word("Dog"), word("ran")});
  const Symbol r2 = b.rule({r1, word("over"), r1, word("hill.")});
  const Symbol r3 = b.rule({r2, r2, word("the")});
  const std::vector<std::vector<Symbol>> docs(33, std::vector<Symbol>{r3, word("DOG!")});
  check(b.finish(docs, 100));
}

TEST_F(GpuEngineTest, EmptyAndDegenerateShards) {
  Builder b(V);
  check(b.finish({{}}));
  check(b.finish({{}, {}, {}}, 42));
  check(b.finish({{word("--"), word("!")}, {word("...")}}));  // empty under --alnum
  check(b.finish({{word("the"), word("dog"), word("The"), word("DOG!")}, {word("a")}}, 9));
}

/// Bodies of lengths around the thread / warp / block class limits (32 and 1024), with heads
/// or tails that must be searched past long runs of words --alnum drops.
TEST_F(GpuEngineTest, BodyLengthsAtWorkloadClassBoundaries) {
  std::mt19937_64 rng(5);
  Builder b(V);
  const Symbol pair = b.rule({word("fox"), word("Over")});
  const Symbol empty_under_alnum = b.rule({word("..."), word("?")});
  const Symbol quad = b.rule({pair, word("a"), pair});  // 5 words: > 2k for small n
  const std::vector<WordId> punct = {word("--"), word("..."), word("!"), word("?"), word("-")};
  std::vector<std::vector<Symbol>> docs;
  for (uint32_t len : {1u, 2u, 31u, 32u, 33u, 63u, 64u, 65u, 1023u, 1024u, 1025u, 2049u}) {
    std::vector<Symbol> mixed(len), head_late(len), tail_early(len);
    for (uint32_t i = 0; i < len; ++i) {
      const uint64_t x = rng() % 8;
      mixed[i] = x == 0 ? pair : x == 1 ? empty_under_alnum : x == 2 ? quad : Symbol(rng() % V);
      // Only dropped words except near the end (head) / near the start (tail).
      const bool keep_late = i + 3 >= len, keep_early = i < 3;
      head_late[i] = keep_late ? (i % 2 ? quad : word("jump")) : punct[i % punct.size()];
      tail_early[i] = keep_early ? (i % 2 ? pair : word("B2"))
                                 : (i % 3 ? empty_under_alnum : Symbol(punct[i % 5]));
    }
    const Symbol m1 = b.rule(mixed), m2 = b.rule(head_late), m3 = b.rule(tail_early);
    docs.push_back({word("the"), m1, word("dog"), m2, m3, word("hill")});
    docs.push_back({m3, m2, m1});
  }
  Matrix m;
  m.brute = true;
  check(b.finish(docs, 1), m);
}

/// Levels holding 31/32/33 and 1023/1024/1025 rules, and as many documents.
TEST_F(GpuEngineTest, LevelWidthsAtWarpAndBlockBoundaries) {
  for (uint32_t width : {31u, 32u, 33u, 1023u, 1024u, 1025u}) {
    SCOPED_TRACE(::testing::Message() << "width " << width);
    std::mt19937_64 rng(width);
    Builder b(V);
    std::vector<Symbol> leaves, mids;
    for (uint32_t i = 0; i < width; ++i)
      leaves.push_back(b.rule({Symbol(rng() % V), Symbol(rng() % V)}));
    for (uint32_t i = 0; i < width; ++i)
      mids.push_back(b.rule({leaves[i], Symbol(rng() % V), leaves[(i * 7 + 1) % width]}));
    const uint32_t ndocs = width <= 33 ? width : 33;
    std::vector<std::vector<Symbol>> docs(ndocs);
    for (uint32_t i = 0; i < width; ++i) docs[i % ndocs].push_back(mids[i]);
    for (auto& d : docs) d.push_back(Symbol(rng() % V));
    Matrix m;
    m.ns = {2, 5};
    m.norms = {{false, false}, {true, true}};
    check(b.finish(docs, width), m);
  }
}

TEST_F(GpuEngineTest, ManyDocumentsSharingADeepDag) {
  // 300 documents reach one 40-level DAG of 2^40 words: counts need 64 bits, and the per-doc
  // traversals must merge triples instead of enumerating paths.
  Builder b(V);
  Symbol prev = b.rule({word("the"), word("dog")});
  for (int i = 0; i < 40; ++i) prev = b.rule({prev, Symbol(i % V), prev});
  std::vector<std::vector<Symbol>> docs(300, std::vector<Symbol>{prev});
  docs[7] = {word("a"), prev, word("a")};
  Matrix m;
  m.ns = {2, 8};
  m.norms = {{false, false}, {false, true}};
  m.brute = false;
  check(b.finish(docs, 2), m);
}

/// Small but covering every kernel variant (thread, warp and block rules; both traversals; all
/// tasks): the case scripts/device-check.sh runs under compute-sanitizer.
TEST_F(GpuEngineTest, SmallMixedClasses) {
  std::mt19937_64 rng(77);
  Builder b(V);
  const Symbol small = b.rule({word("the"), word("--"), word("fox")});
  std::vector<Symbol> warp_body, block_body;
  for (int i = 0; i < 40; ++i) warp_body.push_back(i % 5 == 0 ? small : Symbol(rng() % V));
  const Symbol warp_rule = b.rule(warp_body);
  for (int i = 0; i < 1100; ++i)
    block_body.push_back(i % 7 == 0 ? small : i % 11 == 0 ? warp_rule : Symbol(rng() % V));
  const Symbol block_rule = b.rule(block_body);
  const std::vector<std::vector<Symbol>> docs = {
      {small, block_rule}, {warp_rule, word("a"), small}, {}, {block_rule, warp_rule}};
  Matrix m;
  m.ns = {2, 3};
  m.norms = {{false, false}, {true, true}};
  m.traversals = {Traversal::kTopDown, Traversal::kBottomUp};
  check(b.finish(docs, 6), m);
}

/// Not a timed test (disabled by default): a larger random shard, every task on both engines,
/// results compared and times printed. Run with --gtest_also_run_disabled_tests.
TEST_F(GpuEngineTest, DISABLED_LargeShardProbe) {
  // A text-like DAG: 10 levels of 30k rules over a 50k-word vocabulary (mixed case), rules
  // using rules of the level below; 3000 documents of 300 symbols each.
  std::vector<std::string> words;
  for (int i = 0; i < 50000; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, i % 3 ? "w%05d" : "W%05d", i);
    words.push_back(buf);
  }
  std::sort(words.begin(), words.end());
  Dictionary big;
  for (const auto& w : words) big.push_back(w);
  const uint32_t BV = big.size();
  std::mt19937_64 rng(1234);
  Builder b(BV);
  std::vector<std::vector<Symbol>> layers(1);
  for (int l = 0; l < 10; ++l) {
    std::vector<Symbol> layer;
    for (int i = 0; i < 30000; ++i) {
      std::vector<Symbol> body(2 + rng() % 3);
      for (auto& x : body)
        x = (l > 0 && rng() % 2) ? layers.back()[rng() % layers.back().size()] : Symbol(rng() % BV);
      layer.push_back(b.rule(body));
    }
    layers.push_back(std::move(layer));
  }
  std::vector<std::vector<Symbol>> docs(3000);
  for (auto& d : docs)
    for (int i = 0; i < 300; ++i) {
      const auto& layer = layers[1 + rng() % 10];
      d.push_back(rng() % 2 ? layer[rng() % layer.size()] : Symbol(rng() % BV));
    }
  const ShardGrammar g = b.finish(docs, 0);
  auto cpu_engine = make_cpu_engine(0);
  auto cs = cpu_engine->load(ShardGrammar(g));
  auto gs = gpu().load(ShardGrammar(g));
  const Normalization norm = normalize_dictionary(big, true, true);
  for (const TaskCase& tc : kTasks)
    for (Traversal t : {Traversal::kAuto, Traversal::kTopDown, Traversal::kBottomUp}) {
      QueryOptions q;
      q.task = tc.task;
      q.per_doc = tc.per_doc;
      q.lowercase = q.alnum = true;
      q.traversal = t;
      const uint32_t width = key_layout(q).width;
      ShardRunStats c, s;
      const Rows want = canonical(cpu_engine->run(*cs, q, norm, c), width, "cpu");
      const Rows got = canonical(gpu().run(*gs, q, norm, s), width, "gpu");
      EXPECT_EQ(difference(want, got), "") << task_name(tc.task) << " " << traversal_name(t);
      std::printf(
          "%-22s %-8s %-9s rows %9zu  cpu %-9s %8.3f s  gpu %-9s init %7.3f s trav %7.3f s\n",
          task_name(tc.task), tc.per_doc ? "per-doc" : "", traversal_name(t), got.size(),
          traversal_name(c.traversal), c.init_s + c.traversal_s, traversal_name(s.traversal),
          s.init_s, s.traversal_s);
    }
}

TEST_F(GpuEngineTest, StatsSelectorAndForcedTraversal) {
  auto shard = gpu().load(random_grammar({}, V, 3));
  const Normalization norm = normalize_dictionary(dict, false, false);
  QueryOptions q;
  q.task = Task::kWordCount;
  ShardRunStats stats;
  gpu().run(*shard, q, norm, stats);
  EXPECT_EQ(stats.traversal, Traversal::kTopDown);
  EXPECT_NE(stats.selector_reason.find("global"), std::string::npos) << stats.selector_reason;
  q.traversal = Traversal::kBottomUp;
  gpu().run(*shard, q, norm, stats);
  EXPECT_EQ(stats.traversal, Traversal::kBottomUp);
  EXPECT_TRUE(stats.selector_reason.empty());
  q.task = Task::kTermVector;
  q.traversal = Traversal::kAuto;
  gpu().run(*shard, q, norm, stats);
  EXPECT_NE(stats.selector_reason.find("per-document"), std::string::npos) << stats.selector_reason;
}

TEST_F(GpuEngineTest, RejectsBadN) {
  auto shard = gpu().load(random_grammar({}, V, 4));
  const Normalization norm = normalize_dictionary(dict, false, false);
  QueryOptions q;
  q.task = Task::kRankedInvertedIndex;
  ShardRunStats stats;
  for (uint32_t n : {0u, 1u, 9u}) {
    q.n = n;
    EXPECT_THROW(gpu().run(*shard, q, norm, stats), UsageError);
  }
}

TEST_F(GpuEngineTest, DefaultNormalizationAndRepeatedQueries) {
  const ShardGrammar g = random_grammar({}, V, 8);
  auto gs = gpu().load(ShardGrammar(g));
  auto cs = cpu().load(ShardGrammar(g));
  const Normalization none;  // identity without an explicit remap
  for (int round = 0; round < 3; ++round) expect_every_task_as_cpu(gpu(), *gs, *cs, none);
}

/// The bags a load builds on the device (the default) and those the host builds
/// (GTADOC_GPU_HOST_BAGS=1) answer every task as the CPU engine does.
TEST_F(GpuEngineTest, HostAndDeviceBagsAgree) {
  for (bool lower : {false, true}) {
    const Normalization norm = normalize_dictionary(dict, lower, false);
    for (uint64_t seed = 41; seed <= 44; ++seed) {
      const ShardGrammar g = random_grammar({}, V, seed);
      auto cs = cpu().load(ShardGrammar(g));
      auto device = gpu().load(ShardGrammar(g));
      std::unique_ptr<LoadedShard> host;
      {
        ScopedEnv env("GTADOC_GPU_HOST_BAGS", "1");
        host = gpu().load(ShardGrammar(g));
      }
      expect_every_task_as_cpu(gpu(), *device, *cs, norm);
      expect_every_task_as_cpu(gpu(), *host, *cs, norm);
    }
  }
}

TEST_F(GpuEngineTest, SeveralShardsAndShardOutlivingEngine) {
  const ShardGrammar g1 = random_grammar({}, V, 21), g2 = random_grammar({}, V, 22);
  auto engine = make_gpu_engine(0);
  auto s1 = engine->load(ShardGrammar(g1));
  auto s2 = engine->load(ShardGrammar(g2));
  const Normalization norm = normalize_dictionary(dict, true, true);
  QueryOptions q;
  q.task = Task::kSequenceCount;
  q.per_doc = true;
  q.lowercase = q.alnum = true;
  ShardRunStats stats;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(difference(brute_force_rows(g1, norm, q),
                         canonical(engine->run(*s1, q, norm, stats), 4, "gpu")),
              "");
    EXPECT_EQ(difference(brute_force_rows(g2, norm, q),
                         canonical(engine->run(*s2, q, norm, stats), 4, "gpu")),
              "");
  }
  EXPECT_THROW(cpu().run(*s1, q, norm, stats), Error);  // a GPU shard on the CPU engine
  engine.reset();                                       // shards keep the device context alive
  s1.reset();
  s2.reset();
}

/// Shards loaded side by side on the load lanes (Engine::load_prepared_many), their normalized
/// vocabularies built ahead (prepare_vocabularies), answer every task as the CPU engine does,
/// alone and merged into one batch, and outlive the engine and its lanes;
/// a load that runs out of memory leaves its prepared shard unchanged, and a shard not tried
/// after it too.
TEST_F(GpuEngineTest, LoadLanesSideBySideAsOneByOne) {
  ScopedEnv lanes("GTADOC_GPU_LOAD_LANES", "3");
  auto engine = make_gpu_engine(0);
  ASSERT_EQ(engine->load_lanes(), 3u);
  std::vector<ShardGrammar> grammars;
  std::vector<PreparedShard> prepared;
  for (uint64_t seed = 51; seed <= 57; ++seed) {
    grammars.push_back(random_grammar({}, V, seed));
    grammars.back().first_doc = static_cast<DocId>(1000 * (seed - 51));  // a batch's documents
    if (seed % 2 == 0) {
      prepared.push_back(prepare_shard("gpu", ShardGrammar(grammars.back()), 2));
    } else {
      prepared.push_back(PreparedShard{ShardGrammar(grammars.back()), nullptr, {}});
    }
  }
  std::vector<Engine::LoadOutcome> got = engine->load_prepared_many(prepared);
  ASSERT_EQ(got.size(), grammars.size());
  const Normalization norm = normalize_dictionary(dict, true, false);
  std::vector<LoadedShard*> ptrs;
  RecordBatch cpu_all;
  std::vector<RecordBatch> cpu_parts;
  QueryOptions q;
  q.task = Task::kInvertedIndex;
  q.lowercase = true;
  ShardRunStats stats;
  std::vector<LoadedShard*> loaded_ptrs;
  for (const auto& o : got) loaded_ptrs.push_back(o.shard.get());
  ASSERT_NE(norm.cache_key, 0u);
  engine->prepare_vocabularies(loaded_ptrs, norm, 3);  // built ahead, found by the queries
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].shard) << i;
    EXPECT_FALSE(got[i].error);
    auto cs = cpu().load(ShardGrammar(grammars[i]));
    expect_every_task_as_cpu(*engine, *got[i].shard, *cs, norm);
    cpu_parts.push_back(cpu().run(*cs, q, norm, stats));
    ptrs.push_back(got[i].shard.get());
  }
  std::vector<ShardRunStats> batch_stats;
  const uint32_t width = key_layout(q).width;
  EXPECT_EQ(difference(canonical(concatenate(std::move(cpu_parts), width, 1), width, "cpu"),
                       canonical(engine->run_batch(ptrs, q, norm, batch_stats, 1), width, "gpu")),
            "");
  engine.reset();  // the lanes go with it; the shards were moved to the engine's own context
  got.clear();

  // Out of memory (no shard fits): every shard that did not load is
  // handed back as prepared, the first failure carrying a ResourceError.
  ScopedEnv cap("GTADOC_GPU_MEMORY_LIMIT", "3072");  // a load may take a third: 1 KiB
  auto small = make_gpu_engine(0);
  std::vector<PreparedShard> again;
  for (const ShardGrammar& g : grammars)
    again.push_back(PreparedShard{ShardGrammar(g), nullptr, {}});
  got = small->load_prepared_many(again);
  size_t failed = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].shard) continue;
    EXPECT_EQ(again[i].grammar.symbols, grammars[i].symbols) << i;
    EXPECT_EQ(again[i].grammar.num_docs, grammars[i].num_docs) << i;
    if (got[i].error) {
      ++failed;
      EXPECT_THROW(std::rethrow_exception(got[i].error), ResourceError);
    }
  }
  EXPECT_GT(failed, 0u);
}

/// prepare_shards computes the selector's estimates of several shards at once on host threads;
/// every shard must then run the traversal it would have chosen alone, with the same estimates
/// (the reason text carries them) and the same records, for cached normalizations.
TEST_F(GpuEngineTest, ShardsPreparedTogetherChooseAndCountAsAlone) {
  for (bool lower : {false, true}) {
    const Normalization norm = normalize_dictionary(dict, lower, false);
    for (Task task : {Task::kInvertedIndex, Task::kTermVector, Task::kRankedInvertedIndex,
                      Task::kSequenceCount}) {
      SCOPED_TRACE(std::string(task_name(task)) + (lower ? " --lowercase" : ""));
      QueryOptions q;
      q.task = task;
      q.per_doc = true;
      q.n = 3;
      q.lowercase = lower;
      auto plain = make_gpu_engine(0);
      auto prepared = make_gpu_engine(0);
      std::vector<std::unique_ptr<LoadedShard>> a, b;
      for (uint64_t seed = 31; seed <= 35; ++seed) {
        a.push_back(plain->load(random_grammar({}, V, seed)));
        b.push_back(prepared->load(random_grammar({}, V, seed)));
      }
      std::vector<LoadedShard*> ptrs;
      for (auto& l : b) ptrs.push_back(l.get());
      prepared->prepare_shards(ptrs, q, norm, 3);
      prepared->prepare_shards(ptrs, q, norm, 3);  // again: everything is cached
      const uint32_t width = key_layout(q).width;
      for (size_t i = 0; i < a.size(); ++i) {
        ShardRunStats sa, sb;
        const Rows want = canonical(plain->run(*a[i], q, norm, sa), width, "alone");
        const Rows got = canonical(prepared->run(*b[i], q, norm, sb), width, "prepared");
        EXPECT_EQ(difference(want, got), "") << "shard " << i;
        EXPECT_EQ(sa.traversal, sb.traversal) << "shard " << i;
        EXPECT_EQ(sa.selector_reason, sb.selector_reason) << "shard " << i;
      }
    }
  }
}

/// Per-shard preparations (vocabulary, heads/tails, selector estimates) are reused across
/// queries: alternating normalizations and n on one loaded shard must give every answer exactly,
/// including a hand-made normalization (never cached) between cached ones.
TEST_F(GpuEngineTest, CachedPreparationsAcrossNormalizationsAndN) {
  const ShardGrammar g = random_grammar({}, V, 41);
  auto gs = gpu().load(ShardGrammar(g));
  const Normalization norms[] = {
      normalize_dictionary(dict, false, false), normalize_dictionary(dict, true, false),
      normalize_dictionary(dict, false, true), normalize_dictionary(dict, true, true)};
  Normalization hand = normalize_dictionary(dict, true, true);
  hand.cache_key = 0;  // a hand-made remap: the engine must not reuse anything keyed by it
  for (int round = 0; round < 2; ++round)
    for (uint32_t n : {2u, 3u, 5u})
      for (int ni = 0; ni < 5; ++ni) {
        const Normalization& norm = ni < 4 ? norms[ni] : hand;
        for (const TaskCase& tc : kTasks) {
          QueryOptions q;
          q.task = tc.task;
          q.per_doc = tc.per_doc;
          q.n = n;
          q.lowercase = ni == 1 || ni == 3 || ni == 4;
          q.alnum = ni >= 2;
          const uint32_t width = key_layout(q).width;
          ShardRunStats stats;
          SCOPED_TRACE(::testing::Message()
                       << task_name(tc.task) << " n " << n << " norm " << ni << " round " << round);
          EXPECT_EQ(difference(brute_force_rows(g, norm, q),
                               canonical(gpu().run(*gs, q, norm, stats), width, "gpu")),
                    "");
        }
      }
}

/// Memory limits force every fallback (tables -> top-down, document batches, pieces of the
/// shard). For every limit the result is either exact or a clean ResourceError.
TEST_F(GpuEngineTest, OutOfMemoryFallsBackOrFailsCleanly) {
  RandomShape shape;
  shape.rules = 300;
  shape.docs = 40;
  shape.max_doc = 30;
  const ShardGrammar g = random_grammar(shape, V, 31);
  auto cs = cpu().load(ShardGrammar(g));
  const Normalization norm = normalize_dictionary(dict, true, false);
  int exact = 0, refused = 0;
  for (const TaskCase& tc : kTasks) {
    for (Traversal t : {Traversal::kTopDown, Traversal::kBottomUp}) {
      QueryOptions q;
      q.task = tc.task;
      q.per_doc = tc.per_doc;
      q.lowercase = true;
      q.traversal = t;
      const uint32_t width = key_layout(q).width;
      ShardRunStats stats;
      const Rows want = canonical(cpu().run(*cs, q, norm, stats), width, "cpu");
      for (uint64_t limit :
           {uint64_t{1} << 24, uint64_t{1} << 20, uint64_t{1} << 18, uint64_t{1} << 16,
            uint64_t{1} << 14, uint64_t{1} << 12, uint64_t{64}}) {
        SCOPED_TRACE(::testing::Message() << task_name(tc.task) << (tc.per_doc ? " per-doc" : "")
                                          << " " << traversal_name(t) << " limit " << limit);
        ScopedEnv env("GTADOC_GPU_QUERY_MEMORY_LIMIT", std::to_string(limit));
        auto engine = make_gpu_engine(0);
        auto gs = engine->load(ShardGrammar(g));
        try {
          const Rows got = canonical(engine->run(*gs, q, norm, stats), width, "gpu");
          EXPECT_EQ(difference(want, got), "");
          ++exact;
          // Again on the same shard: what the first query kept (its preparations, the sequence
          // count's pieces that fitted) serves the second, which answers the same.
          const Rows again = canonical(engine->run(*gs, q, norm, stats), width, "gpu");
          EXPECT_EQ(difference(want, again), "");
        } catch (const ResourceError& e) {
          EXPECT_NE(std::string(e.what()).find("memory"), std::string::npos) << e.what();
          ++refused;
        }
      }
    }
  }
  EXPECT_GT(exact, 0);
  EXPECT_GT(refused, 0);  // the smallest limits cannot hold even the vocabulary
  // Without a limit the engine works again.
  auto engine = make_gpu_engine(0);
  auto gs = engine->load(ShardGrammar(g));
  QueryOptions q;
  q.task = Task::kInvertedIndex;
  q.lowercase = true;
  ShardRunStats stats;
  EXPECT_EQ(difference(canonical(cpu().run(*cs, q, norm, stats), 2, "cpu"),
                       canonical(engine->run(*gs, q, norm, stats), 2, "gpu")),
            "");
}

/// A load that runs out of memory (GTADOC_GPU_MEMORY_LIMIT) leaves the prepared shard as it
/// was, whatever step failed, so the caller can load it again once memory is freed; the load that
/// then succeeds answers as the CPU engine does.
TEST_F(GpuEngineTest, FailedLoadLeavesThePreparedShardWhole) {
  RandomShape shape;
  shape.rules = 2000;
  shape.docs = 60;
  shape.max_doc = 80;
  const ShardGrammar g = random_grammar(shape, V, 47);
  PreparedShard prepared = prepare_shard("gpu", ShardGrammar(g), 2);
  ASSERT_TRUE(prepared.layout);
  const plan::ShardLayout before = *prepared.layout;
  auto same_layout = [&](const plan::ShardLayout& now) {
    return now.body == before.body && now.unit_begin == before.unit_begin &&
           now.unit_end == before.unit_end && now.children.off == before.children.off &&
           now.children.item == before.children.item && now.terms.off == before.terms.off &&
           now.terms.item == before.terms.item && now.root_uses == before.root_uses &&
           now.local_words == before.local_words;
  };
  int failed = 0;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<LoadedShard> gs;
  for (uint64_t limit = 4096; !gs; limit += limit / 8) {
    SCOPED_TRACE(::testing::Message() << "limit " << limit);
    ASSERT_LT(limit, uint64_t{1} << 30);
    ScopedEnv env("GTADOC_GPU_MEMORY_LIMIT", std::to_string(limit));
    engine = make_gpu_engine(0);
    try {
      gs = engine->load_prepared(prepared);
    } catch (const ResourceError& e) {
      ++failed;
      EXPECT_NE(std::string(e.what()).find("memory"), std::string::npos) << e.what();
      ASSERT_TRUE(prepared.layout);
      ASSERT_TRUE(same_layout(*prepared.layout));
      ASSERT_EQ(prepared.grammar.symbols, g.symbols);
    }
  }
  EXPECT_GT(failed, 5);  // the limits walked through every step of the load
  auto cs = cpu().load(ShardGrammar(g));
  expect_every_task_as_cpu(*engine, *gs, *cs, normalize_dictionary(dict, false, false));
}

}  // namespace
}  // namespace gtadoc::gpu_testing

#else  // no GPU engine in this build

TEST(GpuEngineTest, NotBuilt) {
  EXPECT_FALSE(gtadoc::gpu_available());
  GTEST_SKIP() << "built without CUDA";
}

#endif
