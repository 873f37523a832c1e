// Helpers for the CPU engine tests: a test dictionary with mixed case, punctuation-only and
// high-byte words, raw grammar builders, and the comparison of engine results with the
// brute-force reference (tests/testutil/brute_force.h: expand every document, count with
// std::map). Header-only: the test build compiles only *_test.cpp files.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "formats/dictionary.h"
#include "formats/grammar.h"
#include "tests/testutil/brute_force.h"
#include "tests/testutil/record_diff.h"
#include "worker/engine.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc::testing_cpu {

using Expected = testutil::BruteForceRecords;
using testutil::brute_force;
using testutil::record_diff;

/// ~40 words: case variants, words --alnum trims or drops, bytes >= 0x80, in byte order.
inline Dictionary test_dictionary() {
  std::vector<std::string> w = {
      "the",  "The",         "THE",         "the.", "(the)", "cat", "Cat", "cat!", "sat",   "on",
      "On",   "mat",         "mat.",        "a",    "A",     "a1",  "A1",  "--",   "...",   "!",
      "?!",   "caf\xc3\xa9", "CAF\xc3\xa9", "\xff", "\xff!", "x-y", "'q'", "q",    "Zebra", "zebra",
      "\x01", "b\x01",       "dog",         "DOG",  "dog,",  "run", "ran", "-",    "1",     "2"};
  std::sort(w.begin(), w.end());
  w.erase(std::unique(w.begin(), w.end()), w.end());
  Dictionary d;
  for (const auto& s : w) d.push_back(s);
  return d;
}

/// Ids of the words of `d` that --alnum drops.
inline std::vector<WordId> punctuation_words(const Dictionary& d) {
  Normalization n = normalize_dictionary(d, false, true);
  std::vector<WordId> out;
  for (WordId w = 0; w < d.size(); ++w)
    if (n.remap[w] == kDroppedWord) out.push_back(w);
  return out;
}

/// Builds raw grammars: rule 0 is the root; `add` returns the id of a new inner rule, which
/// bodies added later refer to as rule(id).
class RawBuilder {
 public:
  explicit RawBuilder(uint32_t num_words) : num_words_(num_words), bodies_(1) {}
  uint32_t add(std::vector<Symbol> body) {
    bodies_.push_back(std::move(body));
    return static_cast<uint32_t>(bodies_.size() - 1);
  }
  Symbol rule(uint32_t id) const { return num_words_ + id; }
  /// Root = the documents joined by unique boundary symbols.
  RawGrammar build(const std::vector<std::vector<Symbol>>& docs) const {
    RawGrammar raw;
    raw.offsets = {0};
    std::vector<Symbol> root;
    for (size_t d = 0; d < docs.size(); ++d) {
      if (d > 0) root.push_back(boundary_symbol(static_cast<uint32_t>(d - 1)));
      root.insert(root.end(), docs[d].begin(), docs[d].end());
    }
    raw.symbols = root;
    raw.offsets.push_back(raw.symbols.size());
    for (size_t r = 1; r < bodies_.size(); ++r) {
      raw.symbols.insert(raw.symbols.end(), bodies_[r].begin(), bodies_[r].end());
      raw.offsets.push_back(raw.symbols.size());
    }
    return raw;
  }
  ShardGrammar finalize(const std::vector<std::vector<Symbol>>& docs, DocId first_doc = 0) const {
    return finalize_grammar(num_words_, first_doc, static_cast<uint32_t>(docs.size()), build(docs));
  }

 private:
  uint32_t num_words_;
  std::vector<std::vector<Symbol>> bodies_;
};

struct RandomSpec {
  uint32_t rules = 30;    ///< inner rules
  uint32_t max_body = 5;  ///< inner body length 1..max_body
  uint32_t docs = 6;
  uint32_t max_doc = 12;  ///< root segment length 0..max_doc
  double p_rule = 0.5;    ///< probability that a body symbol is a rule
  DocId first_doc = 0;
};

/// A random DAG: inner rules over words and earlier rules, documents over words and rules.
inline ShardGrammar random_grammar(const RandomSpec& spec, uint32_t num_words, uint64_t seed) {
  std::mt19937_64 rng(seed);
  RawBuilder b(num_words);
  auto symbol = [&](uint32_t rules_so_far) -> Symbol {
    std::uniform_real_distribution<double> coin(0, 1);
    if (rules_so_far > 0 && coin(rng) < spec.p_rule)
      return b.rule(1 + static_cast<uint32_t>(rng() % rules_so_far));
    return static_cast<Symbol>(rng() % num_words);
  };
  for (uint32_t r = 0; r < spec.rules; ++r) {
    std::vector<Symbol> body(1 + rng() % spec.max_body);
    for (auto& s : body) s = symbol(r);
    b.add(body);
  }
  std::vector<std::vector<Symbol>> docs(spec.docs);
  for (auto& d : docs) {
    d.resize(rng() % (spec.max_doc + 1));
    for (auto& s : d) s = symbol(spec.rules);
  }
  // Every rule must sit below the root: rules nothing references go into a random document.
  std::vector<bool> used(spec.rules + 1, false);
  const RawGrammar raw = b.build(docs);
  for (Symbol s : raw.symbols)
    if (s >= num_words && !is_boundary(s)) used[s - num_words] = true;
  for (uint32_t r = 1; r <= spec.rules; ++r)
    if (!used[r] && !docs.empty()) {
      auto& d = docs[rng() % docs.size()];
      d.insert(d.begin() + static_cast<std::ptrdiff_t>(rng() % (d.size() + 1)), b.rule(r));
    }
  return b.finalize(docs, spec.first_doc);
}

/// Records as a map; fails the test on a duplicate key, a zero count or a bad width.
inline Expected to_map(const RecordBatch& b, uint32_t width) {
  Expected out;
  EXPECT_EQ(b.width, width);
  EXPECT_EQ(b.keys.size(), b.counts.size() * width);
  if (b.keys.size() != b.counts.size() * width) return out;
  for (size_t i = 0; i < b.size(); ++i) {
    std::vector<uint32_t> key(b.keys.begin() + i * width, b.keys.begin() + (i + 1) * width);
    EXPECT_NE(b.counts[i], 0u);
    auto [it, fresh] = out.emplace(key, b.counts[i]);
    if (!fresh) {
      ADD_FAILURE() << "duplicate key in the batch";
      it->second += b.counts[i];
    }
  }
  return out;
}

struct TaskConfig {
  Task task;
  bool per_doc = false;
};

struct MatrixOptions {
  std::vector<uint32_t> ns{2, 3, 5, 8};
  std::vector<unsigned> threads{1, 3};
  bool all_normalizations = true;
};

/// Runs every task x traversal x normalization x n x threads on `g` and compares each result
/// with the brute force. Returns the number of engine runs.
inline int run_matrix(const ShardGrammar& g, const Dictionary& dict,
                      const MatrixOptions& opt = {}) {
  auto engine = make_cpu_engine(2);
  auto shard = engine->load(ShardGrammar(g));
  int runs = 0;
  const TaskConfig tasks[] = {{Task::kWordCount},          {Task::kSort},
                              {Task::kInvertedIndex},      {Task::kTermVector},
                              {Task::kSequenceCount},      {Task::kSequenceCount, true},
                              {Task::kRankedInvertedIndex}};
  std::vector<std::pair<bool, bool>> norms = {{false, false}, {true, true}};
  if (opt.all_normalizations) norms = {{false, false}, {true, false}, {false, true}, {true, true}};
  for (auto [lower, alnum] : norms) {
    Normalization norm = normalize_dictionary(dict, lower, alnum);
    for (const TaskConfig& tc : tasks) {
      std::vector<uint32_t> ns = is_sequence_task(tc.task) ? opt.ns : std::vector<uint32_t>{3};
      for (uint32_t n : ns) {
        QueryOptions q;
        q.task = tc.task;
        q.per_doc = tc.per_doc;
        q.n = n;
        q.lowercase = lower;
        q.alnum = alnum;
        const Expected want = brute_force(g, norm, q);
        for (Traversal t : {Traversal::kAuto, Traversal::kTopDown, Traversal::kBottomUp}) {
          for (unsigned threads : opt.threads) {
            q.traversal = t;
            q.threads = threads;
            SCOPED_TRACE(::testing::Message()
                         << task_name(tc.task) << (tc.per_doc ? " --per-doc" : "") << " n=" << n
                         << " lowercase=" << lower << " alnum=" << alnum
                         << " traversal=" << traversal_name(t) << " threads=" << threads);
            ShardRunStats stats;
            RecordBatch b = engine->run(*shard, q, norm, stats);
            ++runs;
            EXPECT_EQ(record_diff(want, to_map(b, key_layout(q).width)), "");
            if (t == Traversal::kAuto) {
              EXPECT_FALSE(stats.selector_reason.empty());
            } else {
              EXPECT_EQ(stats.traversal, t);
            }
            EXPECT_GE(stats.init_s, 0);
            EXPECT_GE(stats.traversal_s, 0);
          }
        }
      }
    }
  }
  return runs;
}

}  // namespace gtadoc::testing_cpu
