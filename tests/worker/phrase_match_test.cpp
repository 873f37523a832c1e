// Phrase counts on the grammar against counting on each document's expanded word stream, over
// random grammars with few words (so phrases repeat and overlap), with and without a
// normalization that merges and drops words; and the phrase parsing rules.
#include "worker/search/phrase_match.h"

#include <gtest/gtest.h>

#include <random>

#include "common/error.h"
#include "tests/testutil/grammars.h"
#include "worker/search/shard_index.h"

namespace gtadoc {
namespace {

/// Occurrences of `phrase` in the normalized stream of `words`, position by position.
Count brute_count(const std::vector<WordId>& words, const std::vector<WordId>& phrase,
                  const Normalization& norm) {
  std::vector<WordId> stream;
  for (WordId w : words)
    if (norm.map(w) != kDroppedWord) stream.push_back(norm.map(w));
  Count c = 0;
  for (size_t i = 0; i + phrase.size() <= stream.size(); ++i)
    c += std::equal(phrase.begin(), phrase.end(), stream.begin() + static_cast<ptrdiff_t>(i));
  return c;
}

NormalizedPhrase phrase_of(std::vector<WordId> words, const Normalization& norm,
                           bool absent = false) {
  NormalizedPhrase p;
  p.words = std::move(words);
  p.absent = absent;
  find_members(p, norm);
  return p;
}

Normalization merging_normalization(uint32_t words) {
  return testutil::merging_normalization(words, 7);
}

void check_random(const Normalization& norm, uint32_t words, uint32_t normalized_words,
                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  const RawGrammar raw = testutil::random_raw_grammar(words, 6, 40, 30, seed);
  const ShardGrammar g = finalize_grammar(words, 100, 6, raw);
  const ShardSearchIndex index(g);
  std::vector<std::vector<WordId>> docs(6);
  for (uint32_t d = 0; d < 6; ++d) expand_document(g, d, docs[d]);
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<WordId> words;
    const size_t k = 1 + rng() % (trial < 40 ? 5 : 64);
    for (size_t j = 0; j < k; ++j) words.push_back(static_cast<WordId>(rng() % normalized_words));
    if (trial % 7 == 0) words.assign(k, words[0]);  // "a a a": overlapping occurrences
    const NormalizedPhrase p = phrase_of(words, norm);
    std::vector<DocCount> expected;
    for (uint32_t d = 0; d < 6; ++d)
      if (Count c = brute_count(docs[d], p.words, norm)) expected.push_back({100 + d, c});
    for (int indexed : {0, 1, 2}) {  // full pass; index; index never falling back to a full pass
      const std::vector<DocCount> got =
          indexed != 0 ? count_phrase(g, index, p, norm, indexed == 1 ? kFullPassShare : 0)
                       : count_phrase(g, p, norm);
      ASSERT_EQ(got.size(), expected.size()) << "seed " << seed << " trial " << trial << " index " << indexed;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].doc, expected[i].doc) << "seed " << seed << " trial " << trial;
        EXPECT_EQ(got[i].count, expected[i].count) << "seed " << seed << " trial " << trial;
      }
    }
  }
}

TEST(PhraseMatch, CountsEqualTheExpandedStreamsOnRandomGrammars) {
  Normalization identity;
  for (uint64_t seed = 1; seed <= 40; ++seed) check_random(identity, 3 + seed % 4, 3 + seed % 4, seed);
}

TEST(PhraseMatch, CountsFollowANormalizationThatMergesAndDropsWords) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const uint32_t words = 4 + seed % 3;
    check_random(merging_normalization(words), words, words - 2, seed);
  }
}

TEST(PhraseMatch, OverlappingOccurrencesAllCount) {
  // One document "a a a a" as root body [r r] with r = "a a".
  RawGrammar raw;
  raw.symbols = {2, 2, 0, 0};  // rule 1 is symbol num_words + 1 = 2
  raw.offsets = {0, 2, 4};
  const ShardGrammar g = finalize_grammar(1, 0, 1, raw);
  Normalization identity;
  EXPECT_EQ(count_phrase(g, phrase_of({0, 0}, identity), identity).at(0).count, 3u);
  EXPECT_EQ(count_phrase(g, phrase_of({0, 0, 0}, identity), identity).at(0).count, 2u);
  EXPECT_TRUE(count_phrase(g, phrase_of({0, 0, 0, 0, 0}, identity), identity).empty());
  // absent from the archive
  EXPECT_TRUE(count_phrase(g, phrase_of({0}, identity, true), identity).empty());
}

TEST(PhraseMatch, PhraseWordsAreNormalizedAndBounded) {
  EXPECT_EQ(phrase_words("  The\tcat\n", true, false, 1), (std::vector<std::string>{"the", "cat"}));
  EXPECT_EQ(phrase_words("a -- b", false, true, 1), (std::vector<std::string>{"a", "b"}));
  EXPECT_THROW(phrase_words(" \t", false, false, 1), UsageError);
  EXPECT_THROW(phrase_words("-- ..", false, true, 2), UsageError);
  std::string long_phrase;
  for (int i = 0; i < 64; ++i) long_phrase += "w ";
  EXPECT_EQ(phrase_words(long_phrase, false, false, 1).size(), 64u);
  EXPECT_THROW(phrase_words(long_phrase + "w", false, false, 1), UsageError);
}

TEST(PhraseMatch, LocateGivesFirstAndLastWordOfEachOccurrence) {
  Normalization norm = merging_normalization(4);  // 0,1 -> 0; 2 dropped; 3 -> 1
  // words: 0 2 1 3 0 -> stream 0 0 1 0 (positions 0 2 3 4)
  const std::vector<WordId> words = {0, 2, 1, 3, 0};
  const std::vector<Occurrence> occ =
      locate_phrases(words, {phrase_of({0, 1}, norm), phrase_of({0}, norm)}, norm);
  ASSERT_EQ(occ.size(), 4u);
  EXPECT_EQ(occ[0].first, 0u);
  EXPECT_EQ(occ[0].last, 0u);
  EXPECT_EQ(occ[1].first, 2u);
  EXPECT_EQ(occ[1].last, 2u);
  EXPECT_EQ(occ[2].first, 2u);
  EXPECT_EQ(occ[2].last, 3u);
  EXPECT_EQ(occ[3].first, 4u);
}

TEST(ShardSearchIndex, HoldersAndDocumentsAreThoseOfTheBodies) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const RawGrammar raw = testutil::random_raw_grammar(8, 5, 30, 20, seed);
    const ShardGrammar g = finalize_grammar(8, 0, 5, raw);
    const ShardSearchIndex index(g);
    const uint32_t values = g.num_words + g.num_rules();
    for (Symbol s = 0; s < values; ++s) {
      std::vector<RuleId> rules;
      for (RuleId r = 0; r < g.root(); ++r)
        if (std::find(g.symbols.begin() + g.body_begin(r), g.symbols.begin() + g.body_end(r), s) !=
            g.symbols.begin() + g.body_end(r))
          rules.push_back(r);
      std::vector<uint32_t> docs;
      for (uint32_t d = 0; d < g.num_docs; ++d) {
        const auto [b, e] = g.doc_segment(d);
        if (std::find(g.symbols.begin() + b, g.symbols.begin() + e, s) != g.symbols.begin() + e)
          docs.push_back(d);
      }
      const auto h = index.holders(s);
      const auto ds = index.documents(s);
      EXPECT_EQ(std::vector<RuleId>(h.begin(), h.end()), rules) << "seed " << seed << " s " << s;
      EXPECT_EQ(std::vector<uint32_t>(ds.begin(), ds.end()), docs) << "seed " << seed << " s " << s;
    }
    EXPECT_GT(index.bytes(), 0u);
  }
}

}  // namespace
}  // namespace gtadoc
