// Test helper: grammar mutations (tests/testutil/grammar_mutations.h).
#include "tests/testutil/grammar_mutations.h"

#include "common/error.h"

namespace gtadoc::testutil {

std::vector<GrammarMutation> grammar_mutations(const ShardGrammar& good, std::mt19937_64& rng) {
  const uint32_t V = good.num_words;
  const uint32_t R = good.num_rules(), root = good.root();
  const uint64_t root_begin = good.rule_offsets[root];
  return {
      {"symbol to a word",
       [=, &rng](ShardGrammar& g) {
         for (;;) {
           uint64_t i = rng() % root_begin;
           if (g.symbols[i] >= V) {
             g.symbols[i] = 0;
             return;
           }
         }
       }},
      {"forward reference",
       [=, &rng](ShardGrammar& g) {
         uint32_t r = static_cast<uint32_t>(rng() % (root - 1));
         g.symbols[g.rule_offsets[r]] = rule_symbol(r + 1 + rng() % (root - r - 1), V);
       }},
      {"self reference",
       [=, &rng](ShardGrammar& g) {
         uint32_t r = static_cast<uint32_t>(rng() % root);
         g.symbols[g.rule_offsets[r]] = rule_symbol(r, V);
       }},
      {"root references itself",
       [=, &rng](ShardGrammar& g) { g.symbols[root_begin + 1] = rule_symbol(root, V); }},
      {"reference past the rules",
       [=, &rng](ShardGrammar& g) { g.symbols[root_begin + 2] = rule_symbol(R + 5, V); }},
      {"boundary in a rule",
       [=, &rng](ShardGrammar& g) {
         g.symbols[g.rule_offsets[rng() % root]] = boundary_symbol(999);
       }},
      {"extra boundary in the root",
       [=, &rng](ShardGrammar& g) {
         for (;;) {
           uint64_t i = root_begin + rng() % (g.symbols.size() - root_begin);
           if (!is_boundary(g.symbols[i]) && g.symbols[i] < V) {
             g.symbols[i] = boundary_symbol(1u << 20);
             return;
           }
         }
       }},
      {"duplicate boundary id",
       [=, &rng](ShardGrammar& g) {
         g.symbols[g.doc_segment(2).second] = g.symbols[g.doc_segment(1).second];
       }},
      {"a local word used nowhere",
       [=, &rng](ShardGrammar& g) {  // every use of one word made a use of the next: lengths hold
         const Symbol w = static_cast<Symbol>(rng() % (V - 1));
         for (Symbol& s : g.symbols)
           if (s == w) s = w + 1;
       }},
      {"rule_length", [=, &rng](ShardGrammar& g) { g.rule_length[rng() % R] += 1; }},
      {"root rule_length", [=, &rng](ShardGrammar& g) { g.rule_length[root] -= 1; }},
      {"rule_uses", [=, &rng](ShardGrammar& g) { g.rule_uses[rng() % root] += 1; }},
      {"root uses", [=, &rng](ShardGrammar& g) { g.rule_uses[root] = 1; }},
      {"rule_uses wraps", [=, &rng](ShardGrammar& g) { g.rule_uses[rng() % root] += 0x80000000u; }},
      {"level boundary moved", [=, &rng](ShardGrammar& g) { g.level_offsets[1] += 1; }},
      {"level boundary moved down", [=, &rng](ShardGrammar& g) { g.level_offsets[2] -= 1; }},
      {"level offsets decrease",
       [=, &rng](ShardGrammar& g) { std::swap(g.level_offsets[1], g.level_offsets[2]); }},
      {"extra level",
       [=, &rng](ShardGrammar& g) { g.level_offsets.insert(g.level_offsets.begin() + 1, 0); }},
      {"doc offset", [=, &rng](ShardGrammar& g) { g.doc_root_offsets[3] += 1; }},
      {"doc offsets swapped",
       [=, &rng](ShardGrammar& g) { std::swap(g.doc_root_offsets[3], g.doc_root_offsets[4]); }},
      {"last doc offset", [=, &rng](ShardGrammar& g) { g.doc_root_offsets.back() += 1; }},
      {"empty body",
       [=, &rng](ShardGrammar& g) {
         uint32_t r = static_cast<uint32_t>(1 + rng() % (root - 1));
         g.rule_offsets[r] = g.rule_offsets[r + 1];
       }},
      {"offsets decrease",
       [=, &rng](ShardGrammar& g) {
         uint32_t r = static_cast<uint32_t>(1 + rng() % (root - 1));
         g.rule_offsets[r] = g.rule_offsets[r + 1] + 1;
       }},
      {"length overflows",
       [=, &rng](ShardGrammar& g) {
         g.rule_length[0] = ~uint64_t{0} / 2;
         g.rule_length[1] = ~uint64_t{0} / 2;
       }},
  };
}

std::string validation_message(const ShardGrammar& g, unsigned threads) {
  try {
    validate_grammar(g, "g", threads);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace gtadoc::testutil
