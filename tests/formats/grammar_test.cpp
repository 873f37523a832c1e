// finalize_grammar (renumbering by height, metadata), validate_grammar (every invariant, each
// violation rejected with InputError) and expand_document, on hand-built grammars.
#include "formats/grammar.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"

namespace gtadoc {
namespace {

constexpr uint32_t V = 4;  // words 0..3
constexpr Symbol R(uint32_t rule) {
  return V + rule;
}
constexpr Symbol B(uint32_t i) {
  return boundary_symbol(i);
}

RawGrammar make_raw(const std::vector<std::vector<Symbol>>& bodies) {
  RawGrammar raw;
  for (const auto& body : bodies) {
    raw.symbols.insert(raw.symbols.end(), body.begin(), body.end());
    raw.offsets.push_back(raw.symbols.size());
  }
  return raw;
}

/// Raw ids deliberately out of height order: raw rule 1 (height 1) uses raw rule 3 (height 0).
///   root = [r1 r2 B0 r3 r1 B1]   r1 = [r3 2]   r2 = [2 3]   r3 = [0 1]
/// Documents: doc0 = 0 1 2 2 3, doc1 = 0 1 0 1 2, doc2 = (empty).
RawGrammar sample_raw() {
  return make_raw({{R(1), R(2), B(0), R(3), R(1), B(1)}, {R(3), 2}, {2, 3}, {0, 1}});
}

ShardGrammar sample() {
  return finalize_grammar(V, 100, 3, sample_raw());
}

std::vector<WordId> expand(const ShardGrammar& g, uint32_t d) {
  std::vector<WordId> out;
  expand_document(g, d, out);
  return out;
}

// --------------------------------------------------------------------------- finalize_grammar

TEST(FinalizeGrammar, RenumbersByHeightWithRootLast) {
  ShardGrammar g = sample();
  EXPECT_EQ(g.num_words, V);
  EXPECT_EQ(g.first_doc, 100u);
  EXPECT_EQ(g.num_docs, 3u);
  ASSERT_EQ(g.num_rules(), 4u);
  // Level 0: old 2 -> 0, old 3 -> 1 (stable by old id); level 1: old 1 -> 2; root -> 3.
  EXPECT_EQ(g.level_offsets, (std::vector<uint32_t>{0, 2, 3, 4}));
  EXPECT_EQ(g.rule_offsets, (std::vector<uint64_t>{0, 2, 4, 6, 12}));
  EXPECT_EQ(g.symbols, (std::vector<Symbol>{2, 3, 0, 1, R(1), 2,  //
                                            R(2), R(0), B(0), R(1), R(2), B(1)}));
  EXPECT_EQ(g.rule_length, (std::vector<uint64_t>{2, 2, 3, 10}));
  EXPECT_EQ(g.rule_uses, (std::vector<uint32_t>{1, 2, 2, 0}));
  EXPECT_EQ(g.doc_root_offsets, (std::vector<uint64_t>{0, 3, 6, 7}));
  EXPECT_EQ(g.root(), 3u);
  EXPECT_EQ(dag_depth(g), 2u);
  EXPECT_NO_THROW(validate_grammar(g, "sample"));
}

TEST(FinalizeGrammar, ExpandsEveryDocument) {
  ShardGrammar g = sample();
  EXPECT_EQ(expand(g, 0), (std::vector<WordId>{0, 1, 2, 2, 3}));
  EXPECT_EQ(expand(g, 1), (std::vector<WordId>{0, 1, 0, 1, 2}));
  EXPECT_EQ(expand(g, 2), (std::vector<WordId>{}));
  std::vector<WordId> out{9};
  expand_document(g, 1, out);  // appends
  EXPECT_EQ(out, (std::vector<WordId>{9, 0, 1, 0, 1, 2}));
  EXPECT_THROW(expand_document(g, 3, out), InternalError);
}

TEST(FinalizeGrammar, RootOnly) {
  ShardGrammar g = finalize_grammar(V, 0, 2, make_raw({{1, B(0), 2, 2}}));
  EXPECT_EQ(g.num_rules(), 1u);
  EXPECT_EQ(g.level_offsets, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(g.rule_length, (std::vector<uint64_t>{3}));
  EXPECT_EQ(g.rule_uses, (std::vector<uint32_t>{0}));
  EXPECT_EQ(g.doc_root_offsets, (std::vector<uint64_t>{0, 2, 5}));
  EXPECT_EQ(dag_depth(g), 0u);
  EXPECT_NO_THROW(validate_grammar(g, "root only"));
  EXPECT_EQ(expand(g, 0), (std::vector<WordId>{1}));
  EXPECT_EQ(expand(g, 1), (std::vector<WordId>{2, 2}));
}

TEST(FinalizeGrammar, EmptyDocuments) {
  ShardGrammar one = finalize_grammar(V, 0, 1, make_raw({{}}));
  EXPECT_EQ(one.doc_root_offsets, (std::vector<uint64_t>{0, 1}));
  EXPECT_NO_THROW(validate_grammar(one, "empty"));
  EXPECT_TRUE(expand(one, 0).empty());

  ShardGrammar three = finalize_grammar(V, 5, 3, make_raw({{B(0), B(1)}}));
  EXPECT_EQ(three.doc_root_offsets, (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_NO_THROW(validate_grammar(three, "empties"));
  for (uint32_t d = 0; d < 3; ++d) EXPECT_TRUE(expand(three, d).empty());
}

TEST(FinalizeGrammar, RejectsMalformedRawGrammars) {
  // Wrong number of boundaries for the documents.
  EXPECT_THROW(finalize_grammar(V, 0, 2, sample_raw()), InternalError);
  EXPECT_THROW(finalize_grammar(V, 0, 4, sample_raw()), InternalError);
  // Cycle between rules 1 and 2.
  EXPECT_THROW(finalize_grammar(V, 0, 1, make_raw({{R(1)}, {R(2), 0}, {R(1), 1}})), InternalError);
  // Self reference.
  EXPECT_THROW(finalize_grammar(V, 0, 1, make_raw({{R(1)}, {R(1), 0}})), InternalError);
  // Reference to the root, and to a rule that does not exist.
  EXPECT_THROW(finalize_grammar(V, 0, 1, make_raw({{R(1)}, {R(0), 0}})), InternalError);
  EXPECT_THROW(finalize_grammar(V, 0, 1, make_raw({{R(7)}})), InternalError);
  // Boundary inside a rule.
  EXPECT_THROW(finalize_grammar(V, 0, 1, make_raw({{R(1), R(1)}, {0, B(0)}})), InternalError);
  // A rule the root does not reach, as high as the root.
  EXPECT_THROW(finalize_grammar(V, 0, 1, make_raw({{0}, {1, 2}})), InternalError);
  // Offsets that do not cover the symbols.
  RawGrammar bad = sample_raw();
  bad.offsets.back() -= 1;
  EXPECT_THROW(finalize_grammar(V, 0, 3, bad), InternalError);
}

TEST(FinalizeGrammar, DeepChainNeedsNoRecursion) {
  // rule i = [rule i+1, word] for 200000 rules: a DAG far deeper than any call stack allows.
  constexpr uint32_t kDepth = 200000;
  std::vector<std::vector<Symbol>> bodies;
  bodies.push_back({R(1)});
  for (uint32_t i = 1; i < kDepth; ++i) bodies.push_back({R(i + 1), i % V});
  bodies.push_back({3, 3});
  ShardGrammar g = finalize_grammar(V, 0, 1, make_raw(bodies));
  EXPECT_EQ(dag_depth(g), kDepth);
  EXPECT_EQ(g.rule_length[g.root()], 2u + (kDepth - 1));
  EXPECT_NO_THROW(validate_grammar(g, "deep"));
  std::vector<WordId> out = expand(g, 0);
  ASSERT_EQ(out.size(), 2u + (kDepth - 1));
  EXPECT_EQ(out[0], 3u);
  EXPECT_EQ(out[1], 3u);
  EXPECT_EQ(out[2], (kDepth - 1) % V);  // the innermost rule's word comes first after "3 3"
  EXPECT_EQ(out.back(), 1u % V);
}

TEST(FinalizeGrammar, LengthsCountRepeatedSharing) {
  // rule k = [rule k-1, rule k-1]: lengths double per level, 2^41 words in the root.
  std::vector<std::vector<Symbol>> bodies(42);
  bodies[0] = {R(41)};
  bodies[1] = {1, 2};
  for (uint32_t k = 2; k <= 41; ++k) bodies[k] = {R(k - 1), R(k - 1)};
  ShardGrammar g = finalize_grammar(V, 0, 1, make_raw(bodies));
  EXPECT_EQ(g.rule_length[g.root()], uint64_t{1} << 41);
  EXPECT_EQ(g.rule_uses[0], 2u);
  EXPECT_NO_THROW(validate_grammar(g, "doubling"));
}

TEST(FinalizeGrammar, NumbersTheWordsItUsesInTheShard) {
  // Words 7, 900000 and 12 of a space of a million ids (the sorted path: the space is far larger
  // than the grammar), and the same grammar in a space of 1000 ids (the bitmap path).
  for (uint32_t space : {1000000u, 1000u}) {
    const Symbol big = space == 1000000u ? 900000 : 900;
    auto r = [&](uint32_t i) { return space + i; };
    RawGrammar raw = make_raw({{r(1), B(0), 12, big, r(1)}, {7, 12, 7}});
    ShardGrammar g = finalize_grammar(space, 3, 2, raw);
    EXPECT_EQ(g.num_words, 3u);
    EXPECT_EQ(g.local_words, (std::vector<WordId>{7, 12, big}));
    // Rule symbols follow the 3 local words; the rule is [7 12 7] = local [0 1 0].
    EXPECT_EQ(g.symbols, (std::vector<Symbol>{0, 1, 0, 3, B(0), 1, 2, 3}));
    EXPECT_NO_THROW(validate_grammar(g, "local"));
    EXPECT_EQ(expand(g, 0), (std::vector<WordId>{7, 12, 7}));
    EXPECT_EQ(expand(g, 1), (std::vector<WordId>{12, big, 7, 12, 7}));
  }
}

TEST(FinalizeGrammar, LocalizeWordsOfADictionaryIdGrammar) {
  // A grammar stored with dictionary ids (format version 1), numbered in the shard afterwards.
  ShardGrammar g = sample();  // words 0..3 of V = 4, all used: local ids are the same
  for (Symbol& s : g.symbols)
    if (s < V) s = s * 1000 + 5;  // dictionary ids 5, 1005, 2005, 3005
    else if (!is_boundary(s)) s = s - V + 5000;
  g.num_words = 5000;
  g.local_words.clear();
  localize_words(g);
  EXPECT_EQ(g.num_words, 4u);
  EXPECT_EQ(g.local_words, (std::vector<WordId>{5, 1005, 2005, 3005}));
  EXPECT_EQ(g.symbols, sample().symbols);
  EXPECT_NO_THROW(validate_grammar(g, "localized"));
  EXPECT_EQ(expand(g, 0), (std::vector<WordId>{5, 1005, 2005, 2005, 3005}));
}

// --------------------------------------------------------------------------- validate_grammar

/// Applies `mutate` to a fresh sample grammar and expects InputError naming `what` and `needle`.
void expect_rejected(const std::function<void(ShardGrammar&)>& mutate, const std::string& needle) {
  ShardGrammar g = sample();
  mutate(g);
  try {
    validate_grammar(g, "shard 7");
    ADD_FAILURE() << "accepted a grammar with: " << needle;
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("shard 7: corrupt grammar: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
  }
}

TEST(ValidateGrammar, RejectsBadLocalWords) {
  expect_rejected([](ShardGrammar& g) { g.local_words.pop_back(); },
                  "local_words has 3 entries for 4 words");
  expect_rejected([](ShardGrammar& g) { g.local_words[2] = g.local_words[1]; },
                  "local_words are not strictly ascending (entry 2)");
  expect_rejected([](ShardGrammar& g) { std::swap(g.local_words[0], g.local_words[3]); },
                  "not strictly ascending");
  // A fifth local word that no body uses (rule symbols shift with the count).
  expect_rejected(
      [](ShardGrammar& g) {
        for (Symbol& s : g.symbols)
          if (s >= g.num_words && !is_boundary(s)) ++s;
        g.local_words.push_back(9);
        ++g.num_words;
      },
      "local word 4 is used by no rule");
}

TEST(ValidateGrammar, RejectsBadOffsets) {
  expect_rejected([](ShardGrammar& g) { g.rule_offsets[2] = 7; }, "rule_offsets decrease");
  expect_rejected([](ShardGrammar& g) { g.rule_offsets.back() = 13; }, "rule_offsets end");
  expect_rejected([](ShardGrammar& g) { g.rule_offsets[0] = 1; }, "rule_offsets[0]");
  expect_rejected([](ShardGrammar& g) { g.rule_offsets = {0}; }, "no rules");
  expect_rejected([](ShardGrammar& g) { g.rule_offsets[1] = 0; }, "empty body");
}

TEST(ValidateGrammar, RejectsForwardAndSelfReferences) {
  expect_rejected([](ShardGrammar& g) { g.symbols[4] = R(2); }, "references rule 2");
  expect_rejected([](ShardGrammar& g) { g.symbols[0] = R(1); }, "references rule 1");
  expect_rejected([](ShardGrammar& g) { g.symbols[6] = R(3); }, "references rule 3");
  expect_rejected([](ShardGrammar& g) { g.symbols[6] = R(1000); }, "references rule 1000");
}

TEST(ValidateGrammar, RejectsWrongLengthsAndUses) {
  expect_rejected([](ShardGrammar& g) { g.rule_length[2] = 4; }, "rule_length[2]");
  expect_rejected([](ShardGrammar& g) { g.rule_length[3] = 11; }, "rule_length[3]");
  expect_rejected([](ShardGrammar& g) { g.rule_uses[0] = 2; }, "rule_uses[0]");
  expect_rejected([](ShardGrammar& g) { g.rule_uses[3] = 1; }, "rule_uses[3]");
  expect_rejected([](ShardGrammar& g) { g.rule_uses.pop_back(); }, "rule_uses has the wrong size");
  expect_rejected([](ShardGrammar& g) { g.rule_length.push_back(0); },
                  "rule_length has the wrong size");
}

TEST(ValidateGrammar, RejectsMisplacedBoundaries) {
  expect_rejected([](ShardGrammar& g) { g.symbols[1] = B(5); }, "boundary symbol in rule 0");
  expect_rejected([](ShardGrammar& g) { g.symbols[11] = B(0); }, "boundary symbol occurs twice");
  expect_rejected([](ShardGrammar& g) { g.doc_root_offsets[1] = 2; }, "doc_root_offsets[1]");
  expect_rejected([](ShardGrammar& g) { g.doc_root_offsets[3] = 6; }, "root length + 1");
  expect_rejected([](ShardGrammar& g) { g.doc_root_offsets[0] = 1; }, "doc_root_offsets[0]");
  expect_rejected(
      [](ShardGrammar& g) {
        g.num_docs = 2;
        g.doc_root_offsets.pop_back();
      },
      "more than 1 boundaries");
  expect_rejected(
      [](ShardGrammar& g) {
        g.num_docs = 4;
        g.doc_root_offsets.push_back(8);
      },
      "root holds 2 boundaries for 4 documents");
  expect_rejected([](ShardGrammar& g) { g.num_docs = 0; }, "no documents");
  expect_rejected([](ShardGrammar& g) { g.doc_root_offsets.pop_back(); },
                  "doc_root_offsets has the wrong size");
}

TEST(ValidateGrammar, RejectsBadLevels) {
  expect_rejected([](ShardGrammar& g) { g.level_offsets = {0, 1, 3, 4}; }, "listed at level");
  expect_rejected([](ShardGrammar& g) { g.level_offsets = {0, 2, 4}; }, "listed at level");
  expect_rejected([](ShardGrammar& g) { g.level_offsets = {0, 2, 3, 5}; }, "do not span");
  expect_rejected([](ShardGrammar& g) { g.level_offsets = {0, 2, 1, 4}; }, "decrease");
  expect_rejected([](ShardGrammar& g) { g.level_offsets = {0}; }, "fewer than 2");
  expect_rejected([](ShardGrammar& g) { g.level_offsets = {0, 2, 3, 3, 4}; }, "listed at level");
}

TEST(ValidateGrammar, AcceptsEveryFinalizedSample) {
  EXPECT_NO_THROW(validate_grammar(sample(), "ok"));
  ShardGrammar g = sample();
  g.first_doc = 0xFFFFFFFDu;  // the last ids of the DocId range
  EXPECT_NO_THROW(validate_grammar(g, "ok"));
  g.first_doc = 0xFFFFFFFEu;
  EXPECT_THROW(validate_grammar(g, "ids"), InputError);
}

}  // namespace
}  // namespace gtadoc
