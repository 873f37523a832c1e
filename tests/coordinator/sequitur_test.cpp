// Sequitur: exact expansion, digram uniqueness and rule utility, each checked by an independent
// brute-force pass over the output, on edge cases, structured inputs and random streams; then the
// finalized grammar must validate and give back every document.
#include "coordinator/sequitur.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "formats/grammar.h"

namespace gtadoc {
namespace {

using Tokens = std::vector<Symbol>;

uint32_t num_raw_rules(const RawGrammar& g) {
  return static_cast<uint32_t>(g.offsets.size() - 1);
}

/// Expands rule 0 with an explicit stack; fails the test on an out-of-range symbol.
Tokens expand_raw(const RawGrammar& g, uint32_t num_words) {
  Tokens out;
  std::vector<std::pair<uint64_t, uint64_t>> stack{{g.offsets[0], g.offsets[1]}};
  while (!stack.empty()) {
    auto& [pos, end] = stack.back();
    if (pos == end) {
      stack.pop_back();
      continue;
    }
    Symbol s = g.symbols[pos++];
    if (s < num_words || is_boundary(s)) {
      out.push_back(s);
    } else {
      uint32_t r = s - num_words;
      EXPECT_LT(r, num_raw_rules(g));
      EXPECT_NE(r, 0u) << "root referenced";
      if (r == 0 || r >= num_raw_rules(g) || stack.size() > num_raw_rules(g)) return out;
      stack.emplace_back(g.offsets[r], g.offsets[r + 1]);
    }
  }
  return out;
}

/// Every digram, counted by greedy non-overlapping occurrences in each body ("aaa" holds one
/// "aa", "aaaa" two), summed over all bodies; returns the first digram seen twice, if any.
std::string digram_violation(const RawGrammar& g) {
  std::unordered_map<uint64_t, uint32_t> count;
  count.reserve(g.symbols.size());
  for (uint32_t r = 0; r < num_raw_rules(g); ++r) {
    bool prev_counted_run = false;  // the digram at i-1 was a counted "aa" with a == s[i]
    for (uint64_t i = g.offsets[r]; i + 1 < g.offsets[r + 1]; ++i) {
      Symbol a = g.symbols[i], b = g.symbols[i + 1];
      if (a == b && prev_counted_run && g.symbols[i - 1] == a) {
        prev_counted_run = false;
        continue;
      }
      prev_counted_run = a == b;
      uint64_t key = (static_cast<uint64_t>(a) << 32) | b;
      if (++count[key] >= 2)
        return "digram (" + std::to_string(a) + "," + std::to_string(b) +
               ") repeats, 2nd in rule " + std::to_string(r);
    }
  }
  return "";
}

/// Checks the three Sequitur guarantees plus structural sanity of the raw grammar.
void check_sequitur(const Tokens& tokens, uint32_t num_words, const RawGrammar& g) {
  ASSERT_GE(g.offsets.size(), 2u);
  ASSERT_EQ(g.offsets.front(), 0u);
  ASSERT_EQ(g.offsets.back(), g.symbols.size());
  for (size_t i = 1; i < g.offsets.size(); ++i) ASSERT_LE(g.offsets[i - 1], g.offsets[i]);
  std::vector<uint32_t> refs(num_raw_rules(g), 0);
  for (uint32_t r = 0; r < num_raw_rules(g); ++r) {
    if (r > 0) {
      EXPECT_GE(g.offsets[r + 1] - g.offsets[r], 2u) << "rule " << r << " too short";
    }
    for (uint64_t i = g.offsets[r]; i < g.offsets[r + 1]; ++i) {
      Symbol s = g.symbols[i];
      if (is_boundary(s)) {
        ASSERT_EQ(r, 0u) << "boundary inside rule " << r;
      } else if (s >= num_words) {
        ASSERT_LT(s - num_words, num_raw_rules(g)) << "dangling rule symbol";
        ++refs[s - num_words];
      }
    }
  }
  EXPECT_EQ(refs[0], 0u) << "root referenced";
  for (uint32_t r = 1; r < num_raw_rules(g); ++r)
    ASSERT_GE(refs[r], 2u) << "rule utility violated by rule " << r;
  EXPECT_EQ(digram_violation(g), "");
  Tokens back = expand_raw(g, num_words);
  ASSERT_EQ(back.size(), tokens.size());
  ASSERT_TRUE(back == tokens) << "expansion differs from the input";
}

/// Runs Sequitur, checks it, finalizes, validates and expands every document.
RawGrammar run_all_checks(const Tokens& tokens, uint32_t num_words) {
  RawGrammar g = sequitur(tokens, num_words);
  check_sequitur(tokens, num_words, g);
  if (::testing::Test::HasFatalFailure()) return g;
  // Split the input at its boundaries to know each document's words.
  std::vector<Tokens> docs(1);
  for (Symbol t : tokens) {
    if (is_boundary(t))
      docs.emplace_back();
    else
      docs.back().push_back(t);
  }
  ShardGrammar fg = finalize_grammar(num_words, 7, static_cast<uint32_t>(docs.size()), g);
  EXPECT_NO_THROW(validate_grammar(fg, "test"));
  EXPECT_EQ(fg.rule_length[fg.root()], tokens.size() - (docs.size() - 1));
  for (uint32_t d = 0; d < docs.size(); ++d) {
    std::vector<WordId> out{12345};  // appends after existing content
    expand_document(fg, d, out);
    EXPECT_EQ(out[0], 12345u);
    EXPECT_TRUE(out.size() == docs[d].size() + 1 &&
                std::equal(docs[d].begin(), docs[d].end(), out.begin() + 1))
        << "doc " << d;
  }
  return g;
}

Tokens repeat(const Tokens& unit, size_t times) {
  Tokens t;
  for (size_t i = 0; i < times; ++i) t.insert(t.end(), unit.begin(), unit.end());
  return t;
}

Tokens random_tokens(size_t n, uint32_t alphabet, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> dist(0, alphabet - 1);
  Tokens t(n);
  for (Symbol& s : t) s = dist(rng);
  return t;
}

/// Zipf-like word stream: P(rank k) ~ 1/(k+1), by inverse CDF over a precomputed table.
Tokens zipf_tokens(size_t n, uint32_t vocab, uint32_t seed) {
  std::vector<double> cdf(vocab);
  double sum = 0;
  for (uint32_t k = 0; k < vocab; ++k) cdf[k] = (sum += 1.0 / (k + 1));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, sum);
  Tokens t(n);
  for (Symbol& s : t)
    s = static_cast<Symbol>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
  return t;
}

// ------------------------------------------------------------------------------- edge cases

TEST(Sequitur, EmptyInput) {
  RawGrammar g = run_all_checks({}, 10);
  EXPECT_EQ(num_raw_rules(g), 1u);
  EXPECT_TRUE(g.symbols.empty());
}

TEST(Sequitur, SingleToken) {
  RawGrammar g = run_all_checks({3}, 10);
  EXPECT_EQ(num_raw_rules(g), 1u);
  EXPECT_EQ(g.symbols, Tokens{3});
}

TEST(Sequitur, ClassicExample) {
  // The textbook string "abcdbcabcdbc".
  Tokens t = {0, 1, 2, 3, 1, 2, 0, 1, 2, 3, 1, 2};
  RawGrammar g = run_all_checks(t, 4);
  EXPECT_GE(num_raw_rules(g), 2u);
  EXPECT_LT(g.symbols.size(), t.size());
}

TEST(Sequitur, CheckersCatchViolations) {
  // The brute-force digram checker itself: overlapping "aaa" is one occurrence, "aaaa" two.
  auto one_rule = [](Tokens body) {
    RawGrammar g;
    g.symbols = body;
    g.offsets.push_back(body.size());
    return g;
  };
  EXPECT_EQ(digram_violation(one_rule({0, 0, 0})), "");
  EXPECT_NE(digram_violation(one_rule({0, 0, 0, 0})), "");
  EXPECT_NE(digram_violation(one_rule({0, 1, 2, 0, 1})), "");
  EXPECT_EQ(digram_violation(one_rule({0, 1, 1, 0})), "");
  RawGrammar two;  // root [R1 0 1], rule 1 [0 1]: the digram repeats across bodies
  two.symbols = {3, 0, 1, 0, 1};
  two.offsets = {0, 3, 5};
  EXPECT_NE(digram_violation(two), "");
}

TEST(Sequitur, OverlappingRuns) {
  RawGrammar three = run_all_checks(Tokens(3, 5), 6);
  EXPECT_EQ(num_raw_rules(three), 1u);  // "aaa" holds "aa" twice, but overlapping
  EXPECT_EQ(three.symbols, (Tokens{5, 5, 5}));
  RawGrammar four = run_all_checks(Tokens(4, 5), 6);
  ASSERT_EQ(num_raw_rules(four), 2u);  // "aaaa" -> A A, A = aa
  EXPECT_EQ(four.symbols, (Tokens{7, 7, 5, 5}));
}

TEST(Sequitur, RunsOfOneSymbol) {
  for (size_t n = 1; n <= 70; ++n) {
    SCOPED_TRACE("run length " + std::to_string(n));
    RawGrammar g = run_all_checks(Tokens(n, 5), 6);
    // A run of n symbols compresses to O(log n) symbols.
    if (n >= 16) {
      EXPECT_LE(g.symbols.size(), 4 * std::log2(static_cast<double>(n)) + 4);
    }
  }
  run_all_checks(Tokens(100000, 0), 1);
}

TEST(Sequitur, RunsInsideOtherText) {
  for (size_t n = 1; n <= 12; ++n) {
    Tokens t = {1, 2};
    for (int k = 0; k < 3; ++k) {
      t.insert(t.end(), n, 0);
      t.push_back(static_cast<Symbol>(1 + k % 2));
      t.insert(t.end(), n + k, 0);
      t.push_back(3);
    }
    run_all_checks(t, 4);
  }
}

TEST(Sequitur, AlternatingPatterns) {
  for (size_t n : {1, 2, 3, 4, 5, 7, 8, 31, 32, 33, 64, 1000}) {
    SCOPED_TRACE("repeats " + std::to_string(n));
    run_all_checks(repeat({0, 1}, n), 2);
    run_all_checks(repeat({0, 1, 2}, n), 3);
    run_all_checks(repeat({0, 0, 1}, n), 2);
    run_all_checks(repeat({0, 1, 1, 0}, n), 2);
  }
}

TEST(Sequitur, PowerOfTwoSizes) {
  uint32_t seed = 1;
  for (size_t n : {31, 32, 33, 63, 64, 65, 1000}) {
    for (uint32_t alphabet : {1u, 2u, 3u, 5u}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " alphabet=" + std::to_string(alphabet));
      run_all_checks(random_tokens(n, alphabet, seed++), alphabet);
    }
  }
}

TEST(Sequitur, RandomSmallAlphabets) {
  // Tiny alphabets stress overlapping runs, rule reuse and rule expansion.
  for (uint32_t seed = 0; seed < 400; ++seed) {
    uint32_t alphabet = 1 + seed % 4;
    size_t n = 1 + (seed * 7919) % 3000;
    SCOPED_TRACE("seed " + std::to_string(seed));
    run_all_checks(random_tokens(n, alphabet, seed), alphabet);
    if (HasFatalFailure()) return;
  }
}

TEST(Sequitur, RandomLargeAlphabet) {
  for (uint32_t seed = 0; seed < 5; ++seed)
    run_all_checks(random_tokens(50000, 1u << 20, seed), 1u << 20);
}

TEST(Sequitur, RepeatedBlocksOfRandomText) {
  // Random blocks copied many times, with small mutations, build deep, shared hierarchies.
  std::mt19937 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    Tokens base = random_tokens(50 + trial * 13, 2 + trial % 7, trial);
    Tokens t;
    for (int copy = 0; copy < 40; ++copy) {
      t.insert(t.end(), base.begin(), base.end());
      if (rng() % 3 == 0) base[rng() % base.size()] = rng() % 9;
    }
    run_all_checks(t, 9);
  }
}

TEST(Sequitur, LongRepeatedPhraseBuildsDeepHierarchy) {
  Tokens phrase = random_tokens(5000, 1000, 3);
  Tokens t = repeat(phrase, 64);
  RawGrammar g = run_all_checks(t, 1000);
  EXPECT_LT(g.symbols.size(), phrase.size() * 3);
  ShardGrammar fg = finalize_grammar(1000, 0, 1, g);
  EXPECT_GE(dag_depth(fg), 6u);  // at least log2 of the 64 copies

  // Doubling repeats: depth grows with log of the length, far beyond a few levels.
  Tokens dbl = {0, 1, 2};
  for (int i = 0; i < 16; ++i) {
    Tokens copy = dbl;
    dbl.insert(dbl.end(), copy.begin(), copy.end());
    dbl.push_back(static_cast<Symbol>(3 + i));
  }
  run_all_checks(dbl, 20);
}

TEST(Sequitur, BoundariesAreNeverInsideRules) {
  // The same text in many documents: rules form inside documents, never across.
  Tokens doc = random_tokens(300, 20, 9);
  Tokens t;
  for (uint32_t d = 0; d < 30; ++d) {
    if (d > 0) t.push_back(boundary_symbol(d - 1));
    t.insert(t.end(), doc.begin(), doc.end());
  }
  run_all_checks(t, 20);

  // Empty documents (adjacent boundaries), leading/trailing boundaries, and tiny documents.
  constexpr Symbol kB = kBoundaryBit;
  Tokens u = {kB | 0, kB | 1, 1, 2, kB | 2, 1, 2, kB | 3, 1, 2, 1, 2, kB | 4};
  run_all_checks(u, 3);

  // Random documents over a small alphabet with short and empty documents.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    Tokens v;
    uint32_t b = 0;
    for (int d = 0; d < 50; ++d) {
      if (d > 0) v.push_back(boundary_symbol(b++));
      size_t len = rng() % 5 == 0 ? 0 : rng() % 60;
      for (size_t i = 0; i < len; ++i) v.push_back(rng() % 3);
    }
    run_all_checks(v, 3);
  }
}

TEST(Sequitur, ZipfStreamOfOneMillionTokens) {
  Tokens t = zipf_tokens(1000000, 50000, 11);
  // Sprinkle document boundaries.
  Tokens with_docs;
  with_docs.reserve(t.size() + 200);
  for (size_t i = 0; i < t.size(); ++i) {
    if (i > 0 && i % 5000 == 0)
      with_docs.push_back(boundary_symbol(static_cast<uint32_t>(i / 5000) - 1));
    with_docs.push_back(t[i]);
  }
  RawGrammar g = run_all_checks(with_docs, 50000);
  EXPECT_LT(g.symbols.size(), with_docs.size());
}

TEST(Sequitur, RejectsOutOfRangeWord) {
  Tokens t = {0, 1, 5};
  EXPECT_THROW(sequitur(t, 5), InternalError);
}

TEST(Sequitur, IsDeterministic) {
  Tokens t = zipf_tokens(20000, 300, 2);
  RawGrammar a = sequitur(t, 300), b = sequitur(t, 300);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.symbols, b.symbols);
}

}  // namespace
}  // namespace gtadoc
