// Large host blocks recycled between queries (common/big_alloc.h, as gtadoc serve runs): a query
// whose record arrays land in blocks freed by earlier queries, full of their values, gives the
// same records as with no recycling. Record arrays of several MiB (random five-grams over a
// ~0.5 M-word shard), queries of different tasks in turn, each repeated.
#include <gtest/gtest.h>

#include <random>

#include "cluster/reduce.h"
#include "common/big_alloc.h"
#include "tests/worker/cpu_test_util.h"

namespace gtadoc::testing_cpu {
namespace {

class RecycledBlocks : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = big_block::capacity(); }
  void TearDown() override { big_block::set_capacity(saved_); }
  uint64_t saved_ = 0;
};

RecordBatch reduced(Engine& engine, LoadedShard& shard, const QueryOptions& q,
                    const Normalization& norm) {
  ShardRunStats stats;
  RecordBatch b = engine.run(shard, q, norm, stats);
  reduce_records(b, 2);
  return b;
}

TEST_F(RecycledBlocks, QueriesInRecycledBlocksGiveTheSameRecords) {
  const Dictionary dict = test_dictionary();
  const uint32_t V = dict.size();
  std::mt19937_64 rng(2026);
  RawBuilder b(V);
  // A few shared rules so that traversals have a DAG to walk, then random words.
  std::vector<uint32_t> rules;
  for (uint32_t r = 0; r < 40; ++r)
    rules.push_back(b.add({static_cast<Symbol>(rng() % V), static_cast<Symbol>(rng() % V),
                           static_cast<Symbol>(rng() % V)}));
  std::vector<std::vector<Symbol>> docs(16);
  for (auto& d : docs)
    for (int i = 0; i < 30000; ++i)
      d.push_back(rng() % 16 == 0 ? b.rule(rules[rng() % rules.size()])
                                  : static_cast<Symbol>(rng() % V));
  const ShardGrammar g = b.finalize(docs, 0);
  const Normalization norm = normalize_dictionary(dict, false, false);

  std::vector<QueryOptions> queries(4);
  queries[0].task = Task::kSequenceCount;
  queries[0].n = 5;
  queries[1].task = Task::kInvertedIndex;
  queries[2].task = Task::kSequenceCount;
  queries[2].n = 5;
  queries[2].per_doc = true;
  queries[3].task = Task::kRankedInvertedIndex;
  queries[3].n = 4;

  big_block::set_capacity(0);
  std::vector<RecordBatch> expected;
  {
    auto engine = make_cpu_engine(2);
    auto shard = engine->load(ShardGrammar(g));
    for (const QueryOptions& q : queries) expected.push_back(reduced(*engine, *shard, q, norm));
  }
  EXPECT_GT(expected[0].keys.size() * sizeof(uint32_t), size_t{4} << 20)
      << "the records must be large enough for the block cache";

  big_block::set_capacity(uint64_t{1} << 30);
  auto engine = make_cpu_engine(2);
  auto shard = engine->load(ShardGrammar(g));
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < queries.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "round " << round << ", query " << i);
      const RecordBatch got = reduced(*engine, *shard, queries[i], norm);
      ASSERT_EQ(got.width, expected[i].width);
      ASSERT_EQ(got.size(), expected[i].size());
      EXPECT_TRUE(std::equal(got.keys.begin(), got.keys.end(), expected[i].keys.begin()));
      EXPECT_TRUE(std::equal(got.counts.begin(), got.counts.end(), expected[i].counts.begin()));
    }
  EXPECT_GT(big_block::held(), 0u) << "freed blocks were kept";
}

}  // namespace
}  // namespace gtadoc::testing_cpu
