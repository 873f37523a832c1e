// A filtered query's records from the search index against the same records computed from each
// document's expanded word stream (an independent count: no grammar, no engine), for every task
// and option that changes the keys, over random grammars with few words (so n-grams repeat and
// hold several filter words), with and without a normalization that merges and drops words; and
// the limits past which the n-gram tasks give up on the index.
#include "worker/search/point_records.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "tests/testutil/grammars.h"

namespace gtadoc {
namespace {

using Key = std::vector<uint32_t>;
using Counts = std::map<Key, Count>;

Normalization merging_normalization(uint32_t words) {
  return testutil::merging_normalization(words, 9);
}

/// The records of `q` restricted to `wanted` (normalized ids), from the expanded documents
/// (inverted-index: each document once, count 1).
Counts expected_records(const std::vector<std::vector<WordId>>& docs, DocId first_doc,
                        const QueryOptions& q, const Normalization& norm,
                        const std::vector<WordId>& wanted) {
  auto in = [&](WordId w) { return std::find(wanted.begin(), wanted.end(), w) != wanted.end(); };
  Counts out;
  for (size_t d = 0; d < docs.size(); ++d) {
    const uint32_t doc = static_cast<uint32_t>(first_doc + d);
    std::vector<WordId> stream;
    for (WordId w : docs[d])
      if (norm.map(w) != kDroppedWord) stream.push_back(norm.map(w));
    if (!is_sequence_task(q.task)) {
      for (WordId w : stream) {
        if (!in(w)) continue;
        if (q.task == Task::kWordCount || q.task == Task::kSort) ++out[{w}];
        if (q.task == Task::kInvertedIndex) out[{w, doc}] = 1;  // documents, no counts
        if (q.task == Task::kTermVector) ++out[{doc, w}];
      }
      continue;
    }
    for (size_t s = 0; s + q.n <= stream.size(); ++s) {
      Key gram(stream.begin() + static_cast<ptrdiff_t>(s),
               stream.begin() + static_cast<ptrdiff_t>(s + q.n));
      if (std::none_of(gram.begin(), gram.end(), in)) continue;
      if (q.task == Task::kRankedInvertedIndex) gram.push_back(doc);
      if (q.per_doc) gram.insert(gram.begin(), doc);
      ++out[gram];
    }
  }
  return out;
}

Counts summed(const RecordBatch& r) {
  Counts out;
  for (size_t i = 0; i < r.size(); ++i) {
    const auto k = r.key(i);
    out[Key(k.begin(), k.end())] += r.counts[i];
  }
  return out;
}

std::vector<QueryOptions> every_task() {
  std::vector<QueryOptions> out;
  for (Task t : {Task::kWordCount, Task::kSort, Task::kInvertedIndex, Task::kTermVector}) {
    QueryOptions q;
    q.task = t;
    out.push_back(q);
  }
  for (uint32_t n : {2u, 3u, 5u}) {
    for (int variant = 0; variant < 3; ++variant) {
      QueryOptions q;
      q.task = variant == 2 ? Task::kRankedInvertedIndex : Task::kSequenceCount;
      q.per_doc = variant == 1;
      q.n = n;
      out.push_back(q);
    }
  }
  return out;
}

void check_random(const Normalization& norm, uint32_t words, uint32_t normalized_words,
                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  constexpr uint32_t kDocs = 7;
  const RawGrammar raw = testutil::random_raw_grammar(words, kDocs, 40, 30, seed);
  const ShardGrammar g = finalize_grammar(words, 50, kDocs, raw);
  const ShardSearchIndex index(g);
  std::vector<std::vector<WordId>> docs(kDocs);
  for (uint32_t d = 0; d < kDocs; ++d) expand_document(g, d, docs[d]);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<WordId> wanted;
    const size_t k = 1 + rng() % 3;
    for (size_t j = 0; j < k; ++j) wanted.push_back(static_cast<WordId>(rng() % normalized_words));
    const PointWords point = point_words(wanted, norm, 2);
    for (const QueryOptions& q : every_task()) {
      const RecordBatch got = point_records(g, index, q, norm, point);
      EXPECT_EQ(got.width, key_layout(q).width);
      EXPECT_EQ(summed(got), expected_records(docs, 50, q, norm, wanted))
          << "seed " << seed << " trial " << trial << " task " << task_name(q.task) << " n " << q.n
          << " per-doc " << q.per_doc;
    }
  }
}

TEST(PointRecords, EqualTheExpandedStreamsOnRandomGrammars) {
  Normalization identity;
  for (uint64_t seed = 1; seed <= 30; ++seed)
    check_random(identity, 3 + seed % 5, 3 + seed % 5, seed);
}

TEST(PointRecords, EqualTheExpandedStreamsWithThousandsOfWords) {
  // Grammars of hundreds of local words among thousands of the dictionary.
  for (uint64_t seed = 30; seed < 33; ++seed) check_random(Normalization{}, 3000, 3000, seed);
}

TEST(PointRecords, EqualTheExpandedStreamsWhereMostRulesHoldNoFilterWord) {
  // Many words, one or two asked: the walk skips most rules, taking only their first and last
  // n-1 words.
  Normalization identity;
  for (uint64_t seed = 1; seed <= 30; ++seed) check_random(identity, 20 + seed, 20 + seed, seed);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const uint32_t words = 20 + seed;
    check_random(merging_normalization(words), words, words - 2, seed);
  }
}

TEST(PointRecords, FollowANormalizationThatMergesAndDropsWords) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const uint32_t words = 4 + seed % 4;
    check_random(merging_normalization(words), words, words - 2, seed);
  }
}

TEST(PointRecords, WordsInNoDocumentGiveNothing) {
  const RawGrammar raw = testutil::random_raw_grammar(4, 3, 10, 20, 5);
  const ShardGrammar g = finalize_grammar(4, 0, 3, raw);  // words 100 and 101 occur nowhere
  const ShardSearchIndex index(g);
  Normalization identity;
  for (const QueryOptions& q : every_task()) {
    const RecordBatch got =
        point_records(g, index, q, identity, point_words({101, 100, 101}, identity, 1));
    EXPECT_EQ(got.size(), 0u) << task_name(q.task);
  }
}

TEST(PointRecords, CostIsNothingForAbsentWordsAndAtMostAPassPerWord) {
  const RawGrammar raw = testutil::random_raw_grammar(12, 40, 30, 20, 11);
  const ShardGrammar g = finalize_grammar(12, 0, 40, raw);
  const ShardSearchIndex index(g);
  Normalization identity;
  const PointCost none = point_cost(g, index, point_words({100, 101}, identity, 1));
  EXPECT_EQ(none.lookup, 0);
  EXPECT_EQ(none.pass, g.num_rules() + 40.0);
  std::vector<WordId> all;
  for (WordId w = 0; w < 12; ++w) all.push_back(w);
  const PointWords every = point_words(all, identity, 1);
  const PointCost c = point_cost(g, index, every);
  EXPECT_GT(c.lookup, 0);
  EXPECT_LE(c.lookup, c.pass * static_cast<double>(every.words.size()));
  // One word's cost: its direct holders (rules and documents) fanned out, at most a pass.
  const Symbol w0 = 0;
  const double direct =
      1.0 + static_cast<double>(index.holders(w0).size() + index.documents(w0).size());
  EXPECT_EQ(point_cost(g, index, point_words({g.local_words[w0]}, identity, 1)).lookup,
            std::min(c.pass, kPointFanOut * direct));
}

TEST(PointRecords, WordCountsAreTheShardsOccurrences) {
  const RawGrammar raw = testutil::random_raw_grammar(9, 5, 25, 30, 3);
  const ShardGrammar g = finalize_grammar(9, 0, 5, raw);
  const ShardSearchIndex index(g);
  std::vector<Count> want(g.num_words, 0);
  for (uint32_t d = 0; d < g.num_docs; ++d) {
    std::vector<WordId> words;
    expand_document(g, d, words);
    for (WordId w : words)
      ++want[std::lower_bound(g.local_words.begin(), g.local_words.end(), w) -
             g.local_words.begin()];
  }
  for (Symbol w = 0; w < g.num_words; ++w) EXPECT_EQ(index.word_count(w), want[w]) << w;
}

TEST(ShardSearchIndex, BytesWithinTheBoundFromTheShardsSizes) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const uint32_t words = 2 + static_cast<uint32_t>(seed % 7) * 9;
    const RawGrammar raw = testutil::random_raw_grammar(words, 1 + seed % 9, 30, 25, seed);
    const ShardGrammar g = finalize_grammar(words, 0, 1 + seed % 9, raw);
    const ShardSearchIndex index(g);
    const uint64_t bound =
        search_index_bytes_bound(g.num_words, g.num_rules(), g.symbols.size(), 0);
    EXPECT_LE(index.bytes(), bound) << seed;
    Normalization identity;
    identity.cache_key = 1;
    index.capped_lengths(g, identity);  // as the service builds it
    EXPECT_LE(index.bytes(), search_index_bytes_bound(g.num_words, g.num_rules(), g.symbols.size()))
        << seed;
    EXPECT_GT(index.bytes(), bound / 4) << seed;  // a bound, not a guess
  }
}

}  // namespace
}  // namespace gtadoc
