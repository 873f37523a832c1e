// Document-range pieces (formats/grammar_pieces.h): every piece is a valid finalized grammar, its
// documents expand to exactly the words of the same documents of the whole shard, pieces cover
// the documents in order, and each holds at most the bound (unless one document alone exceeds it).
#include "formats/grammar_pieces.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/testutil/grammars.h"

namespace gtadoc {
namespace {

std::vector<WordId> words_of(const ShardGrammar& g, uint32_t d) {
  std::vector<WordId> out;
  expand_document(g, d, out);
  return out;
}

ShardGrammar random_shard(uint32_t docs, uint64_t seed, uint32_t empty_doc = ~0u) {
  testutil::RandomGrammarOptions o;
  o.empty_doc = empty_doc;
  return finalize_grammar(300, 1000, docs,
                          testutil::random_raw_grammar(300, docs, 400, 60, seed, o));
}

TEST(GrammarPieces, SlicesExpandToTheSameDocuments) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const ShardGrammar g = random_shard(9, seed, /*empty_doc=*/static_cast<uint32_t>(seed % 9));
    for (uint32_t b = 0; b < g.num_docs; ++b) {
      for (uint32_t e = b + 1; e <= g.num_docs; e += 2) {
        const ShardGrammar p = slice_documents(g, b, e);
        validate_grammar(p, "piece", 1);
        EXPECT_EQ(p.first_doc, g.first_doc + b);
        ASSERT_EQ(p.num_docs, e - b);
        EXPECT_LE(p.symbols.size(), g.symbols.size());
        EXPECT_EQ(p.rule_length[p.root()], [&] {
          uint64_t n = 0;
          for (uint32_t d = b; d < e; ++d) n += words_of(g, d).size();
          return n;
        }());
        for (uint32_t d = b; d < e; ++d)
          ASSERT_EQ(words_of(p, d - b), words_of(g, d)) << "seed " << seed << " doc " << d;
      }
    }
    const ShardGrammar whole = slice_documents(g, 0, g.num_docs);
    EXPECT_EQ(whole.symbols.size(), g.symbols.size());  // every rule is reachable from the root
  }
}

TEST(GrammarPieces, SplitCoversTheDocumentsWithinTheBound) {
  const ShardGrammar g = random_shard(40, 77);
  for (uint64_t bound : {uint64_t{1}, uint64_t{200}, g.symbols.size() / 3, g.symbols.size()}) {
    const std::vector<ShardGrammar> pieces = split_by_documents(g, bound);
    uint32_t next = 0;
    for (const ShardGrammar& p : pieces) {
      EXPECT_EQ(p.first_doc, g.first_doc + next);
      EXPECT_TRUE(p.symbols.size() <= bound || p.num_docs == 1) << bound;
      for (uint32_t d = 0; d < p.num_docs; ++d) ASSERT_EQ(words_of(p, d), words_of(g, next + d));
      next += p.num_docs;
    }
    EXPECT_EQ(next, g.num_docs);
    if (bound >= g.symbols.size()) EXPECT_EQ(pieces.size(), 1u);
    if (bound == 1) EXPECT_EQ(pieces.size(), g.num_docs);
  }
}

}  // namespace
}  // namespace gtadoc
