// The batch plan (worker/plan/batch_plan.h), the host logic behind the GPU engine's batched pass:
// the merged numbering of several shards (levels, rule and word maps, blocks, document ids) and the
// placement of per-unit arrays. Checked on its own and end to end: a merged grammar assembled on
// the host exactly as the GPU engine assembles its device DAG (segments copied, symbols remapped)
// must pass validate_grammar and give the CPU engine the same records as the shards one by one.
#include "worker/plan/batch_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "common/error.h"
#include "formats/grammar.h"
#include "tests/testutil/grammars.h"
#include "worker/engine.h"
#include "worker/query.h"

namespace gtadoc {
namespace {

ShardGrammar random_shard(uint32_t V, uint32_t docs, uint32_t rules, uint32_t max_seg,
                          uint64_t seed, DocId first_doc) {
  return finalize_grammar(V, first_doc, docs,
                          testutil::random_raw_grammar(V, docs, rules, max_seg, seed));
}

/// What the plan needs of a finalized grammar (kept alive by the caller).
struct ShapeStore {
  std::vector<uint32_t> levels;
  std::vector<WordId> words;
};

BatchShardShape shape_of(const ShardGrammar& g, ShapeStore& st) {
  st.levels.assign(g.level_offsets.begin(), g.level_offsets.end() - 1);
  st.words = g.local_words;
  return {st.levels, g.num_docs, g.first_doc, st.words};
}

/// Per-unit body offsets of a shard: rules at their bodies, documents at their root segments
/// (the boundary after a document in its range), S last (as worker/gpu/gpu_batch.cu).
std::vector<uint64_t> body_offsets(const ShardGrammar& g) {
  const uint32_t inner = g.num_rules() - 1;
  std::vector<uint64_t> off(uint64_t{inner} + g.num_docs + 1);
  for (uint32_t r = 0; r < inner; ++r) off[r] = g.rule_offsets[r];
  for (uint32_t d = 0; d < g.num_docs; ++d) off[inner + d] = g.doc_segment(d).first;
  off.back() = g.symbols.size();
  return off;
}

/// The merged grammar of `shards`, assembled like the GPU engine's merged DAG.
ShardGrammar merge_on_host(const std::vector<ShardGrammar>& shards, const BatchPlan& plan) {
  // The merged grammar numbers its words as the plan's union of the shards' words.
  const uint32_t V = static_cast<uint32_t>(plan.words.size());
  std::vector<std::vector<uint64_t>> offs;
  std::vector<std::span<const uint64_t>> spans;
  for (const ShardGrammar& g : shards) offs.push_back(body_offsets(g));
  for (const auto& o : offs) spans.push_back(o);
  std::vector<uint64_t> merged_off;
  const std::vector<BatchSegment> segs = plan_segments(plan, spans, merged_off);
  std::vector<Symbol> body(merged_off.back());
  for (const BatchSegment& s : segs) {
    const ShardGrammar& g = shards[s.shard];
    const uint32_t L = g.num_words;
    for (uint64_t k = 0; k < s.len; ++k) {
      const Symbol x = g.symbols[s.src + k];
      Symbol y = x;
      if (is_word(x, L)) {
        y = plan.word_map[plan.word_base[s.shard] + x];
        EXPECT_EQ(plan.words[y], g.local_words[x]) << "word map";
      } else if (is_rule(x, L)) {
        y = rule_symbol(plan.rule_map[plan.rule_base[s.shard] + rule_of(x, L)], V);
      }
      body[s.dst + k] = y;
    }
  }
  std::vector<std::span<const uint64_t>> lens_src;
  std::vector<std::vector<uint64_t>> lens(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    const ShardGrammar& g = shards[i];
    const uint32_t inner = g.num_rules() - 1;
    for (uint32_t r = 0; r < inner; ++r)
      lens[i].push_back(g.rule_offsets[r + 1] - g.rule_offsets[r]);
    for (uint32_t d = 0; d < g.num_docs; ++d)
      lens[i].push_back(g.doc_segment(d).second - g.doc_segment(d).first);
    lens_src.push_back(lens[i]);
  }
  const std::vector<uint64_t> len = gather_units<uint64_t>(plan, lens_src, true);

  ShardGrammar m;
  m.num_words = V;
  m.local_words = plan.words;
  m.first_doc = plan.doc_ids.empty() ? 0 : plan.doc_ids.front();
  m.num_docs = plan.num_docs;
  for (uint32_t r = 0; r < plan.inner; ++r) {
    m.rule_offsets.push_back(m.symbols.size());
    EXPECT_EQ(merged_off[r] + len[r], merged_off[r + 1]) << "rules are dense";
    m.symbols.insert(m.symbols.end(), body.begin() + static_cast<std::ptrdiff_t>(merged_off[r]),
                     body.begin() + static_cast<std::ptrdiff_t>(merged_off[r] + len[r]));
  }
  const uint64_t root = m.symbols.size();
  m.rule_offsets.push_back(root);
  for (uint32_t d = 0; d < plan.num_docs; ++d) {
    if (d > 0) m.symbols.push_back(boundary_symbol(d - 1));
    m.doc_root_offsets.push_back(m.symbols.size() - root);
    const uint64_t b = merged_off[plan.inner + d];
    m.symbols.insert(m.symbols.end(), body.begin() + static_cast<std::ptrdiff_t>(b),
                     body.begin() + static_cast<std::ptrdiff_t>(b + len[plan.inner + d]));
  }
  m.doc_root_offsets.push_back(m.symbols.size() - root + 1);
  m.rule_offsets.push_back(m.symbols.size());
  m.level_offsets = plan.level_offsets;
  m.level_offsets.push_back(plan.inner + 1);  // the root's level
  std::vector<std::span<const uint64_t>> rl;
  for (const ShardGrammar& g : shards) rl.push_back(g.rule_length);  // first inner entries used
  m.rule_length = gather_units<uint64_t>(plan, rl, false);
  uint64_t total = 0;
  for (const ShardGrammar& g : shards) total += g.rule_length.back();
  m.rule_length.push_back(total);
  m.rule_uses.assign(plan.inner + 1, 0);
  for (Symbol x : m.symbols)
    if (is_rule(x, V)) ++m.rule_uses[rule_of(x, V)];
  return m;
}

using Rows = std::map<std::vector<uint32_t>, uint64_t>;
Rows reduced(const RecordBatch& b) {
  Rows r;
  for (size_t i = 0; i < b.size(); ++i) {
    const auto k = b.key(i);
    r[std::vector<uint32_t>(k.begin(), k.end())] += b.counts[i];
  }
  return r;
}

TEST(BatchPlan, LevelMajorNumberingBlocksAndMaps) {
  // Shard 0: 3 inner levels (2, 1, 2 rules), 2 docs; shard 1: no inner rule, 1 doc; shard 2: 1
  // level of 3 rules, 3 docs (ids not following shard 0's).
  const std::vector<uint32_t> l0{0, 2, 3, 5}, l1{0}, l2{0, 3};
  const std::vector<WordId> w0{1, 4, 9}, w1{}, w2{0, 4, 10, 11};
  const std::vector<BatchShardShape> shapes{{l0, 2, 10, w0}, {l1, 1, 12, w1}, {l2, 3, 40, w2}};
  const BatchPlan p = plan_batch(shapes);
  EXPECT_EQ(p.shards, 3u);
  EXPECT_EQ(p.inner, 8u);
  EXPECT_EQ(p.num_docs, 6u);
  EXPECT_EQ(p.level_offsets, (std::vector<uint32_t>{0, 5, 6, 8}));
  // Level 0: shard 0's rules 0,1 then shard 2's 0,1,2; level 1: shard 0's rule 2; level 2: 3,4.
  EXPECT_EQ(p.rule_map, (std::vector<uint32_t>{0, 1, 5, 6, 7, 2, 3, 4}));
  EXPECT_EQ(p.rule_base, (std::vector<uint64_t>{0, 5, 5}));
  EXPECT_EQ(p.doc_base, (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_EQ(p.doc_ids, (std::vector<DocId>{10, 11, 12, 40, 41, 42}));
  EXPECT_FALSE(p.docs_contiguous);
  EXPECT_EQ(p.words, (std::vector<WordId>{0, 1, 4, 9, 10, 11}));
  EXPECT_EQ(p.word_map, (std::vector<uint32_t>{1, 2, 3, 0, 2, 4, 5}));
  EXPECT_EQ(p.word_base, (std::vector<uint64_t>{0, 3, 3}));
  // Blocks cover every unit once, in order.
  uint32_t next = 0;
  for (const BatchBlock& b : p.blocks) {
    EXPECT_EQ(b.dst_unit, next);
    EXPECT_GT(b.count, 0u);
    next += b.count;
  }
  EXPECT_EQ(next, p.units());
  for (uint32_t u = 0; u < p.units(); ++u) {
    const BatchBlock b = p.block_of(u);
    if (u < p.inner) {
      EXPECT_EQ(p.rule_map[p.rule_base[b.shard] + b.src_unit], u);
    } else {
      EXPECT_EQ(b.src_unit - shapes[b.shard].level_offsets.back() + p.doc_base[b.shard],
                u - p.inner);
    }
  }
  // Per-unit arrays: offsets of 3 arrays, the merged offsets and segments.
  const std::vector<uint64_t> o0{0, 2, 5, 5, 9, 10, 12, 15}, o1{0, 4}, o2{0, 1, 2, 3, 4, 4, 6};
  const std::vector<std::span<const uint64_t>> offs{o0, o1, o2};
  std::vector<uint64_t> merged;
  const std::vector<BatchSegment> segs = plan_segments(p, offs, merged);
  ASSERT_EQ(merged.size(), p.units() + 1u);
  EXPECT_EQ(merged.back(), 15u + 4u + 6u);
  uint64_t covered = 0;
  for (const BatchSegment& s : segs) {
    EXPECT_EQ(s.dst, covered);
    EXPECT_GT(s.len, 0u);
    covered += s.len;
  }
  EXPECT_EQ(covered, merged.back());
  for (uint32_t u = 0; u < p.units(); ++u) {
    const BatchBlock b = p.block_of(u);
    const auto& o = offs[b.shard];
    EXPECT_EQ(merged[u + 1] - merged[u] >= o[b.src_unit + 1] - o[b.src_unit], true) << u;
  }
}

// Vocabularies of hundreds of thousands of ids, united in ranges of the bitmap side by side:
// the union and every shard's map as a sort and a search would give them.
TEST(BatchPlan, LargeVocabulariesUniteExactly) {
  std::mt19937_64 rng(5);
  std::vector<std::vector<WordId>> words(9);
  const std::vector<uint32_t> levels{0};
  std::vector<BatchShardShape> shapes;
  for (size_t i = 0; i < words.size(); ++i) {
    std::vector<WordId>& w = words[i];
    for (WordId x = static_cast<WordId>(rng() % 7); x < 3'000'000; x += 1 + rng() % (i * 40 + 3))
      w.push_back(x);
    if (i == 4) w.clear();        // a shard without words
    if (i == 5) w = {2'999'999};  // one word at the end of the range
    shapes.push_back({levels, 1, static_cast<DocId>(i), w});
  }
  const BatchPlan p = plan_batch(shapes);
  std::vector<WordId> all;
  for (const auto& w : words) all.insert(all.end(), w.begin(), w.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  ASSERT_EQ(p.words, all);
  for (size_t i = 0; i < words.size(); ++i)
    for (size_t k = 0; k < words[i].size(); ++k)
      ASSERT_EQ(p.word_map[p.word_base[i] + k],
                std::lower_bound(all.begin(), all.end(), words[i][k]) - all.begin())
          << "shard " << i << " word " << k;
}

TEST(BatchPlan, ContiguousDocumentsAndEmptyBatchPieces) {
  const std::vector<uint32_t> none{0};
  const std::vector<WordId> w{3};
  const std::vector<BatchShardShape> shapes{{none, 1, 0, w}, {none, 2, 1, w}, {none, 1, 3, {}}};
  const BatchPlan p = plan_batch(shapes);
  EXPECT_TRUE(p.docs_contiguous);
  EXPECT_EQ(p.inner, 0u);
  EXPECT_EQ(p.level_offsets, std::vector<uint32_t>{0});
  EXPECT_EQ(p.words, std::vector<WordId>{3});
  EXPECT_EQ(p.word_map, (std::vector<uint32_t>{0, 0}));
  const std::vector<uint32_t> bad{1, 2};
  const std::vector<BatchShardShape> wrong{{bad, 1, 0, w}};
  EXPECT_THROW(plan_batch(wrong), Error);
}

/// The merged grammar is valid and answers every task like the shards one by one.
TEST(BatchPlan, MergedGrammarMatchesShardsOnTheCpuEngine) {
  const uint32_t V = 60;
  auto cpu = make_cpu_engine(2);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    std::vector<ShardGrammar> shards;
    DocId first = 0;
    const uint32_t count = 2 + static_cast<uint32_t>(seed % 4);
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t docs = 1 + static_cast<uint32_t>(rng() % 6);
      const uint32_t rules = i == 1 ? 0 : static_cast<uint32_t>(rng() % 60);  // one flat shard
      shards.push_back(random_shard(V, docs, rules, 12, seed * 100 + i, first));
      first += docs;
    }
    std::vector<ShapeStore> stores(shards.size());
    std::vector<BatchShardShape> shapes;
    for (size_t i = 0; i < shards.size(); ++i) shapes.push_back(shape_of(shards[i], stores[i]));
    const BatchPlan plan = plan_batch(shapes);
    EXPECT_TRUE(plan.docs_contiguous);
    const ShardGrammar merged = merge_on_host(shards, plan);
    ASSERT_NO_THROW(validate_grammar(merged, "merged batch", 1));
    uint32_t depth = 0;
    for (const ShardGrammar& g : shards) depth = std::max(depth, dag_depth(g));
    EXPECT_EQ(dag_depth(merged), depth);

    auto whole = cpu->load(ShardGrammar(merged));
    std::vector<std::unique_ptr<LoadedShard>> loaded;
    for (const ShardGrammar& g : shards) loaded.push_back(cpu->load(ShardGrammar(g)));
    const Normalization norm;
    for (Task task : {Task::kWordCount, Task::kSort, Task::kInvertedIndex, Task::kTermVector,
                      Task::kSequenceCount, Task::kRankedInvertedIndex})
      for (bool per_doc : {false, true}) {
        if (per_doc && task != Task::kSequenceCount) continue;
        QueryOptions q;
        q.task = task;
        q.per_doc = per_doc;
        q.n = 2 + static_cast<uint32_t>(seed % 3);
        ShardRunStats st;
        Rows want;
        for (auto& s : loaded)
          for (const auto& [k, c] : reduced(cpu->run(*s, q, norm, st))) want[k] += c;
        EXPECT_EQ(reduced(cpu->run(*whole, q, norm, st)), want) << task_name(task) << per_doc;
      }
  }
}

}  // namespace
}  // namespace gtadoc
