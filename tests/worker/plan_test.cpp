// The plan layer both engines share (worker/plan/): the thread pool, the shard layout against a
// direct reading of the grammar, the vocabulary against a map of the normalization, the selector's
// decisions, and the traversal plan's choice of operators for every task and traversal.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "formats/grammar.h"
#include "tests/testutil/grammars.h"
#include "worker/plan/level_schedule.h"
#include "worker/plan/selector.h"
#include "worker/plan/shard_layout.h"
#include "worker/plan/thread_pool.h"
#include "worker/plan/traversal_plan.h"
#include "worker/plan/vocab.h"

namespace gtadoc::plan {
namespace {

TEST(ThreadPoolTest, ParallelForCoversRangeOnce) {
  ThreadPool pool(4);
  Exec ex{&pool, 4};
  for (uint64_t grain : {1u, 7u, 1000u}) {
    std::vector<std::atomic<int>> hits(10007);
    std::atomic<unsigned> max_tid{0};
    ex.parallel_for(3, 10007, grain, [&](unsigned tid, uint64_t lo, uint64_t hi) {
      unsigned m = max_tid.load();
      while (tid > m && !max_tid.compare_exchange_weak(m, tid)) {
      }
      for (uint64_t i = lo; i < hi; ++i) ++hits[i];
    });
    for (uint64_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i].load(), i < 3 ? 0 : 1);
    EXPECT_LT(max_tid.load(), 4u);
  }
  std::atomic<int> calls{0};
  ex.on_all([&](unsigned) { ++calls; });
  EXPECT_EQ(calls.load(), 4);
}

TEST(ThreadPoolTest, RethrowsWorkerExceptions) {
  ThreadPool pool(3);
  Exec ex{&pool, 3};
  EXPECT_THROW(ex.on_all([](unsigned tid) {
    if (tid == 2) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  std::atomic<int> calls{0};
  ex.on_all([&](unsigned) { ++calls; });  // still usable afterwards
  EXPECT_EQ(calls.load(), 3);
}

TEST(ThreadPoolTest, SingleThreadIsADirectCall) {
  Exec ex;
  int calls = 0;
  ex.parallel_for(0, 100, 1, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    EXPECT_EQ(tid, 0u);
    EXPECT_EQ(lo, 0u);
    EXPECT_EQ(hi, 100u);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

ShardGrammar sample_grammar(uint64_t seed, uint32_t docs = 9) {
  return finalize_grammar(50, 7, docs, testutil::random_raw_grammar(50, docs, 40, 30, seed));
}

/// (id, multiplicity) of a unit's rules or words, read straight from the stored symbols.
std::map<uint32_t, uint32_t> bag_of(const ShardGrammar& g, uint64_t b, uint64_t e, bool rules,
                                    const std::map<WordId, uint32_t>& local) {
  std::map<uint32_t, uint32_t> out;
  for (uint64_t i = b; i < e; ++i) {
    const Symbol x = g.symbols[i];
    if (is_word(x, g.num_words)) {
      if (!rules) ++out[local.at(x)];
    } else if (rules) {
      ++out[rule_of(x, g.num_words)];
    }
  }
  return out;
}

std::map<uint32_t, uint32_t> row_of(const Csr<uint32_t>& c, uint64_t r) {
  std::map<uint32_t, uint32_t> out;
  for (uint64_t i = c.off[r]; i < c.off[r + 1]; ++i) {
    EXPECT_TRUE(i == c.off[r] || c.item[i - 1] < c.item[i]) << "row " << r << " not ascending";
    out[c.item[i]] = c.cnt[i];
  }
  return out;
}

TEST(ShardLayoutTest, MatchesTheGrammarOnAnyThreadCount) {
  // Seeds 1-3: few units, short bodies. Seeds 4-5: more units than a parallel chunk and document
  // segments long enough for the radix-sorted path, with words and rules repeating in them.
  // Seed 6: ids above 2^11 in long bodies (radix sorts of two digits).
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    const ShardGrammar g =
        seed <= 3   ? sample_grammar(seed)
        : seed <= 5 ? finalize_grammar(60, 7, 300,
                                       testutil::random_raw_grammar(60, 300, 700, 200, seed))
                    : finalize_grammar(3000, 7, 40,
                                       testutil::random_raw_grammar(3000, 40, 5000, 3000, seed));
    // The grammar's words are numbered in the shard already: the layout keeps their ids.
    std::map<WordId, uint32_t> local;
    for (Symbol x : g.symbols)
      if (is_word(x, g.num_words)) local.emplace(x, x);
    ASSERT_EQ(local.size(), g.num_words);
    for (unsigned threads : {1u, 3u}) {
      ThreadPool pool(threads);
      const ShardLayout s = build_shard_layout(g, Exec{threads > 1 ? &pool : nullptr, threads});
      ASSERT_EQ(s.num_inner, g.num_rules() - 1);
      ASSERT_EQ(s.num_docs, g.num_docs);
      ASSERT_EQ(s.local_words, g.local_words);
      for (uint64_t p = 0; p < g.symbols.size(); ++p) {
        const Symbol x = g.symbols[p];
        const uint32_t want = is_boundary(x)            ? kBoundaryCode
                              : is_word(x, g.num_words) ? local.at(x)
                                                        : kRuleFlag | rule_of(x, g.num_words);
        ASSERT_EQ(s.body[p], want) << p;
      }
      std::vector<uint64_t> root_uses(s.num_inner, 0);
      for (uint64_t u = 0; u < s.num_units(); ++u) {
        const auto [b, e] = u < s.num_inner ? std::pair{g.rule_offsets[u], g.rule_offsets[u + 1]}
                                            : g.doc_segment(static_cast<uint32_t>(u - s.num_inner));
        EXPECT_EQ(s.unit_body(u), std::make_pair(b, e));
        EXPECT_EQ(row_of(s.children, u), bag_of(g, b, e, true, local)) << "unit " << u;
        EXPECT_EQ(row_of(s.terms, u), bag_of(g, b, e, false, local)) << "unit " << u;
        if (u >= s.num_inner)
          for (auto [r, c] : bag_of(g, b, e, true, local)) root_uses[r] += c;
      }
      EXPECT_EQ(s.root_uses, root_uses);
      for (uint32_t h = 0; h + 1 < g.num_levels(); ++h)
        for (uint32_t r = g.level_offsets[h]; r < g.level_offsets[h + 1]; ++r)
          EXPECT_EQ(s.level_of[r], h);

      // The units-only layout (the GPU engine's preparation, which re-encodes the bodies on the
      // device with the same layout_code) is the same but for the bodies and the bags.
      ShardLayout b = build_shard_layout(g, Exec{threads > 1 ? &pool : nullptr, threads}, nullptr,
                                         LayoutParts::kUnits);
      EXPECT_FALSE(b.has_bags);
      EXPECT_TRUE(s.has_bags);
      EXPECT_TRUE(b.body.empty());
      EXPECT_EQ(b.unit_begin, s.unit_begin);
      EXPECT_EQ(b.unit_end, s.unit_end);
      EXPECT_TRUE(b.local_words.empty());
      EXPECT_EQ(s.local_words, g.local_words);
      EXPECT_TRUE(b.children.item.empty() && b.terms.item.empty() && b.root_uses.empty());
      std::vector<uint32_t> coded(g.symbols.size());
      for (size_t i = 0; i < coded.size(); ++i) coded[i] = layout_code(g.symbols[i], g.num_words);
      EXPECT_EQ(coded, s.body);

      // Its level schedule: every inner rule once, level by level; in each level the thread
      // class (bodies up to kThreadMaxBody, by length), then warps, then blocks.
      add_level_schedule(b, g);
      ASSERT_TRUE(b.has_schedule);
      ASSERT_EQ(b.schedule.levels.size(), g.num_levels() - 1);
      ASSERT_EQ(b.schedule.sched.size(), b.num_inner);
      for (uint32_t h = 0; h + 1 < g.num_levels(); ++h) {
        const LevelSchedule& ls = b.schedule.levels[h];
        const uint32_t lo = g.level_offsets[h], hi = g.level_offsets[h + 1];
        EXPECT_EQ(ls.begin, lo);
        EXPECT_EQ(ls.threads + ls.warps + ls.blocks, hi - lo);
        std::vector<uint32_t> rules(b.schedule.sched.begin() + lo, b.schedule.sched.begin() + hi);
        for (uint32_t i = 0; i < rules.size(); ++i) {
          const uint64_t len = b.body_length(rules[i]);
          if (i < ls.threads) {
            EXPECT_LE(len, kThreadMaxBody);
            if (i > 0) EXPECT_LE(b.body_length(rules[i - 1]), len);
          } else if (i < ls.threads + ls.warps) {
            EXPECT_TRUE(len > kThreadMaxBody && len <= kWarpMaxBody);
          } else {
            EXPECT_GT(len, kWarpMaxBody);
          }
        }
        // Exactly a stable sort of the level's rules by (class, thread-class body length).
        std::vector<uint32_t> expect(hi - lo);
        std::iota(expect.begin(), expect.end(), lo);
        auto order = [&](uint32_t r) {
          const uint64_t len = b.body_length(r);
          return len <= kThreadMaxBody ? len
                 : len <= kWarpMaxBody ? uint64_t{kThreadMaxBody} + 1
                                       : uint64_t{kThreadMaxBody} + 2;
        };
        std::stable_sort(expect.begin(), expect.end(),
                         [&](uint32_t x, uint32_t y) { return order(x) < order(y); });
        EXPECT_EQ(rules, expect);
        std::sort(rules.begin(), rules.end());
        for (uint32_t i = 0; i < rules.size(); ++i) EXPECT_EQ(rules[i], lo + i);
      }
      // From the body lengths (the GPU engine's own build) the same as from the ranges.
      std::vector<uint64_t> lengths(b.num_inner);
      for (uint32_t r = 0; r < b.num_inner; ++r) lengths[r] = b.body_length(r);
      const std::span<const uint32_t> inner_levels(g.level_offsets.data(),
                                                   g.level_offsets.size() - 1);
      const LevelSchedules by_length = build_level_schedules(lengths, inner_levels, b.num_inner);
      EXPECT_EQ(by_length.sched, b.schedule.sched);
      ASSERT_EQ(by_length.levels.size(), b.schedule.levels.size());
      for (size_t h = 0; h < by_length.levels.size(); ++h) {
        const LevelSchedule &x = by_length.levels[h], &y = b.schedule.levels[h];
        EXPECT_EQ(std::tie(x.begin, x.threads, x.warps, x.blocks),
                  std::tie(y.begin, y.threads, y.warps, y.blocks));
      }
    }
  }
}

// A batch's merged levels hold millions of rules: sorted in parts on several threads, the
// schedule is the one thread's, a stable sort of every level by (class, body length).
TEST(LevelScheduleTest, LargeLevelsOnSeveralThreadsAreTheStableSort) {
  const std::vector<uint32_t> level_offsets{0, 1'500'000, 1'500'003, 2'100'000};
  const uint32_t inner = level_offsets.back();
  std::vector<uint64_t> len(inner);
  uint64_t x = 88172645463325252ull;
  for (uint64_t& l : len) {  // every class, most rules short
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    l = x % 8 == 0 ? x % 3000 : x % 40;
  }
  const LevelSchedules one = build_level_schedules(len, level_offsets, inner, 1);
  for (unsigned threads : {2u, 5u, 0u}) {
    const LevelSchedules many = build_level_schedules(len, level_offsets, inner, threads);
    EXPECT_EQ(many.sched, one.sched) << threads << " threads";
    ASSERT_EQ(many.levels.size(), one.levels.size());
    for (size_t h = 0; h < one.levels.size(); ++h) {
      const LevelSchedule &a = many.levels[h], &b = one.levels[h];
      EXPECT_EQ(std::tie(a.begin, a.threads, a.warps, a.blocks),
                std::tie(b.begin, b.threads, b.warps, b.blocks));
    }
  }
  auto key = [&](uint32_t r) {
    return len[r] <= kThreadMaxBody ? len[r]
           : len[r] <= kWarpMaxBody ? uint64_t{kThreadMaxBody} + 1
                                    : uint64_t{kThreadMaxBody} + 2;
  };
  for (size_t h = 0; h + 1 < level_offsets.size(); ++h) {
    std::vector<uint32_t> expect(level_offsets[h + 1] - level_offsets[h]);
    std::iota(expect.begin(), expect.end(), level_offsets[h]);
    std::stable_sort(expect.begin(), expect.end(),
                     [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    const std::vector<uint32_t> got(one.sched.begin() + level_offsets[h],
                                    one.sched.begin() + level_offsets[h + 1]);
    EXPECT_EQ(got, expect) << "level " << h;
    const LevelSchedule& ls = one.levels[h];
    EXPECT_EQ(ls.begin, level_offsets[h]);
    EXPECT_EQ(uint64_t{ls.threads} + ls.warps + ls.blocks, expect.size());
  }
  EXPECT_THROW(build_level_schedules(len, std::vector<uint32_t>{5, inner}, inner, 4), Error);
}

TEST(VocabTest, ItemsAreTheSurvivingNormalizedIdsInOrder) {
  const std::vector<WordId> local{2, 3, 5, 8, 9, 12};
  Normalization norm;
  norm.identity = false;
  norm.remap.assign(14, kDroppedWord);
  norm.remap[2] = 4;  // 2 and 9 merge into normalized word 4
  norm.remap[9] = 4;
  norm.remap[3] = 1;
  norm.remap[8] = 70;  // 5 and 12 are dropped
  const Vocab v = build_vocab(local, norm);
  EXPECT_FALSE(v.identity);
  EXPECT_EQ(v.item_word, (std::vector<WordId>{1, 4, 70}));
  EXPECT_EQ(v.lnorm, (std::vector<uint32_t>{1, 0, kNoItem, 2, 1, kNoItem}));

  const Vocab id = build_vocab(local, Normalization{});
  EXPECT_TRUE(id.identity);
  EXPECT_EQ(id.item_word, local);
  EXPECT_EQ(id.lnorm, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  norm.remap.resize(12);  // word 12 is no longer covered
  EXPECT_THROW(build_vocab(local, norm), Error);
}

/// A selector input over `s`: own entries = distinct words, tables capped by rule length.
SelectorInput word_input(const ShardLayout& s, const ShardGrammar& g) {
  SelectorInput in;
  in.num_inner = s.num_inner;
  in.num_docs = s.num_docs;
  in.child_off = s.children.off.data();
  in.child_item = s.children.item.data();
  for (uint64_t u = 0; u < s.num_units(); ++u) in.own_bound.push_back(s.terms.len(u));
  for (uint32_t r = 0; r < s.num_inner; ++r) in.table_cap.push_back(g.rule_length[r]);
  in.item_space = s.local_words.size();
  return in;
}

TEST(SelectorTest, BudgetAndEstimatesDecide) {
  const ShardGrammar g = sample_grammar(4, 30);
  const ShardLayout s = build_shard_layout(g, Exec{});
  for (const CostModel& model : {kCpuCostModel, kGpuCostModel}) {
    const SelectorEstimate est = estimate_traversals(word_input(s, g), model);
    EXPECT_GT(est.bottom_up, 0);
    EXPECT_GT(est.top_down, 0);
    EXPECT_GT(est.table_bytes, 0);
    EXPECT_NE(est.numbers.find("of 30 docs sampled"), std::string::npos) << est.numbers;
    const TraversalChoice tight = choose_per_document(est, est.table_bytes / 2, "test budget");
    EXPECT_EQ(tight.traversal, Traversal::kTopDown);
    EXPECT_NE(tight.reason.find("test budget"), std::string::npos) << tight.reason;
    const TraversalChoice roomy = choose_per_document(est, est.table_bytes * 2, "test budget");
    EXPECT_EQ(roomy.traversal,
              est.bottom_up < est.top_down ? Traversal::kBottomUp : Traversal::kTopDown);
    EXPECT_NE(roomy.reason.find("per-document"), std::string::npos);
  }
}

/// Records which operators the plan ran.
struct FakeOps {
  std::string calls;
  bool tables_fit = true;
  RecordBatch mark(const char* what) {
    calls += what;
    return RecordBatch{};
  }
  RecordBatch sequence_count_topdown() { return mark("seq-topdown "); }
  void prepare_items() { calls += "items "; }
  bool build_tables() {
    calls += "tables ";
    return tables_fit;
  }
  RecordBatch topdown_global() { return mark("td-global"); }
  RecordBatch topdown_per_doc() { return mark("td-doc"); }
  RecordBatch bottomup_global() { return mark("bu-global"); }
  RecordBatch bottomup_per_doc() { return mark("bu-doc"); }
};

TEST(TraversalPlanTest, EveryTaskAndTraversalRunsItsOperators) {
  struct Case {
    Task task;
    bool per_doc;
    Traversal traversal;
    bool fit;
    const char* calls;
    Traversal used;
  };
  const Case cases[] = {
      {Task::kWordCount, false, Traversal::kTopDown, true, "items td-global", Traversal::kTopDown},
      {Task::kSort, false, Traversal::kBottomUp, true, "items tables bu-global",
       Traversal::kBottomUp},
      {Task::kInvertedIndex, false, Traversal::kTopDown, true, "items td-doc", Traversal::kTopDown},
      {Task::kTermVector, false, Traversal::kBottomUp, true, "items tables bu-doc",
       Traversal::kBottomUp},
      {Task::kTermVector, false, Traversal::kBottomUp, false, "items tables td-doc",
       Traversal::kTopDown},
      {Task::kSequenceCount, false, Traversal::kTopDown, true, "seq-topdown ", Traversal::kTopDown},
      {Task::kSequenceCount, false, Traversal::kBottomUp, true, "items tables bu-global",
       Traversal::kBottomUp},
      {Task::kSequenceCount, false, Traversal::kBottomUp, false, "items tables td-global",
       Traversal::kTopDown},
      {Task::kSequenceCount, true, Traversal::kTopDown, true, "items td-doc", Traversal::kTopDown},
      {Task::kRankedInvertedIndex, false, Traversal::kBottomUp, true, "items tables bu-doc",
       Traversal::kBottomUp},
  };
  for (const Case& c : cases) {
    QueryOptions q;
    q.task = c.task;
    q.per_doc = c.per_doc;
    FakeOps ops;
    ops.tables_fit = c.fit;
    Traversal used = c.traversal;
    run_traversal(q, used, ops);
    EXPECT_EQ(ops.calls, c.calls) << task_name(c.task);
    EXPECT_EQ(used, c.used) << task_name(c.task);
  }
}

TEST(QueryTest, DocSlotAndKeyLayoutAgree) {
  for (Task t : {Task::kWordCount, Task::kSort, Task::kInvertedIndex, Task::kTermVector,
                 Task::kSequenceCount, Task::kRankedInvertedIndex})
    for (bool per_doc : {false, true}) {
      QueryOptions q;
      q.task = t;
      q.per_doc = per_doc && t == Task::kSequenceCount;
      q.n = 4;
      EXPECT_EQ(key_layout(q).width, key_words(q) + (doc_slot(q) == DocSlot::kNone ? 0u : 1u))
          << task_name(t);
    }
  QueryOptions q;
  q.task = Task::kSequenceCount;
  for (uint32_t n : {0u, 1u, 9u}) {
    q.n = n;
    EXPECT_THROW(check_sequence_length(q), UsageError);
  }
  q.n = 8;
  EXPECT_NO_THROW(check_sequence_length(q));
}

}  // namespace
}  // namespace gtadoc::plan
