// Tests of worker/query.cpp: task names, key layouts, and normalize_dictionary against a plain
// std::map re-implementation of docs/REFERENCE.md §3.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "worker/engine.h"
#include "worker/query.h"

namespace gtadoc {
namespace {

Dictionary make_dict(std::vector<std::string> words) {
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  Dictionary d;
  for (const auto& w : words) d.push_back(w);
  return d;
}

/// docs/REFERENCE.md §3 normalization of one word, written independently of the engine.
std::string norm_word(const std::string& w, bool lower, bool alnum) {
  std::string s = w;
  if (alnum) {
    auto keep = [](unsigned char c) {
      return c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
             (c >= 'A' && c <= 'Z');
    };
    size_t b = 0, e = s.size();
    while (b < e && !keep(s[b])) ++b;
    while (e > b && !keep(s[e - 1])) --e;
    s = s.substr(b, e - b);
  }
  if (lower)
    for (char& c : s)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return s;
}

void check_normalization(const Dictionary& dict, bool lower, bool alnum) {
  SCOPED_TRACE(::testing::Message() << "lowercase=" << lower << " alnum=" << alnum);
  Normalization n = normalize_dictionary(dict, lower, alnum);
  std::map<std::string, WordId> expected;  // std::string orders by unsigned bytes
  for (uint32_t w = 0; w < dict.size(); ++w) {
    std::string s = norm_word(std::string(dict[w]), lower, alnum);
    if (!s.empty()) expected.emplace(s, 0);
  }
  WordId id = 0;
  for (auto& [s, v] : expected) v = id++;
  ASSERT_EQ(n.dict.size(), expected.size());
  ASSERT_TRUE(n.dict.is_sorted_unique());
  EXPECT_EQ(n.identity, !lower && !alnum);
  ASSERT_EQ(n.remap.size(), n.identity ? 0u : dict.size());  // the identity writes no remap
  for (uint32_t w = 0; w < dict.size(); ++w) {
    std::string s = norm_word(std::string(dict[w]), lower, alnum);
    if (s.empty()) {
      EXPECT_EQ(n.map(w), kDroppedWord) << "word " << w;
    } else {
      ASSERT_EQ(n.map(w), expected.at(s)) << "word " << w;
      EXPECT_EQ(n.dict[n.map(w)], s);
    }
  }
}

TEST(QueryTest, ParseTaskRoundTrips) {
  for (Task t : {Task::kWordCount, Task::kSort, Task::kInvertedIndex, Task::kTermVector,
                 Task::kSequenceCount, Task::kRankedInvertedIndex})
    EXPECT_EQ(parse_task(task_name(t)), t);
  EXPECT_EQ(parse_task("word-count"), Task::kWordCount);
  EXPECT_EQ(parse_task("ranked-inverted-index"), Task::kRankedInvertedIndex);
  EXPECT_STREQ(traversal_name(Traversal::kAuto), "auto");
  EXPECT_STREQ(traversal_name(Traversal::kTopDown), "top-down");
  EXPECT_STREQ(traversal_name(Traversal::kBottomUp), "bottom-up");
}

TEST(QueryTest, UnknownTaskIsUsageError) {
  try {
    parse_task("wordcount");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_EQ(std::string(e.what()),
              "unknown task 'wordcount' (expected one of: word-count, sort, inverted-index, "
              "term-vector, sequence-count, ranked-inverted-index)");
  }
  EXPECT_THROW(parse_task(""), UsageError);
  EXPECT_THROW(parse_task("Word-Count"), UsageError);
}

TEST(QueryTest, KeyLayouts) {
  QueryOptions q;
  auto layout = [&](Task t, uint32_t n = 3, bool per_doc = false) {
    q.task = t;
    q.n = n;
    q.per_doc = per_doc;
    KeyLayout k = key_layout(q);
    return std::make_tuple(k.width, k.partition_width, k.range_partition);
  };
  EXPECT_EQ(layout(Task::kWordCount), std::make_tuple(1u, 1u, false));
  EXPECT_EQ(layout(Task::kSort), std::make_tuple(1u, 1u, true));
  EXPECT_EQ(layout(Task::kInvertedIndex), std::make_tuple(2u, 1u, true));
  EXPECT_EQ(layout(Task::kTermVector), std::make_tuple(2u, 1u, true));
  EXPECT_EQ(layout(Task::kSequenceCount, 3), std::make_tuple(3u, 3u, false));
  EXPECT_EQ(layout(Task::kSequenceCount, 5, true), std::make_tuple(6u, 1u, true));
  EXPECT_EQ(layout(Task::kRankedInvertedIndex, 2), std::make_tuple(3u, 1u, true));
  EXPECT_EQ(layout(Task::kRankedInvertedIndex, 8), std::make_tuple(9u, 1u, true));
}

TEST(QueryTest, NormalizationSmall) {
  Dictionary d = make_dict(
      {"The",     "the",       "THE",   "the.",        "(the)",        "--",   "...",       "!",
       "a1",      "A1",        "1a!",   "caf\xc3\xa9", "CAF\xc3\xa9!", "\xff", "\xff\xfe!", "x-y",
       "'quote'", "Zebra",     "zebra", "a\x01",       "\x01",         "A",    "B",         "a",
       "b",       "A\x01\x01", "[]"});
  for (bool lower : {false, true})
    for (bool alnum : {false, true}) check_normalization(d, lower, alnum);

  Normalization both = normalize_dictionary(d, true, true);
  EXPECT_EQ(both.remap[d.find("(the)")], both.remap[d.find("The")]);
  EXPECT_EQ(both.remap[d.find("--")], kDroppedWord);
  EXPECT_EQ(both.remap[d.find("\x01")], kDroppedWord);
  EXPECT_NE(both.remap[d.find("\xff")], kDroppedWord);  // bytes >= 0x80 are kept
  EXPECT_EQ(both.dict[both.remap[d.find("CAF\xc3\xa9!")]], "caf\xc3\xa9");
  EXPECT_EQ(both.dict[both.remap[d.find("x-y")]], "x-y");  // inner punctuation stays

  Normalization id = normalize_dictionary(d, false, false);
  EXPECT_TRUE(id.identity);
  EXPECT_TRUE(id.remap.empty());  // the identity writes no remap
  for (uint32_t w = 0; w < d.size(); ++w) EXPECT_EQ(id.map(w), w);
  EXPECT_EQ(id.dict.bytes(), d.bytes());
}

/// Engines cache per-shard preparations by Normalization::cache_key: each option combination
/// made by normalize_dictionary has its own non-zero key; a default (hand-made) one has 0.
TEST(QueryTest, NormalizationCacheKeysNameTheOptions) {
  Dictionary d = make_dict({"A", "a", "b!"});
  std::set<uint32_t> keys;
  for (bool lower : {false, true})
    for (bool alnum : {false, true}) {
      const uint32_t k = normalize_dictionary(d, lower, alnum).cache_key;
      EXPECT_NE(k, 0u);
      keys.insert(k);
      EXPECT_EQ(normalize_dictionary(d, lower, alnum).cache_key, k);  // stable
    }
  EXPECT_EQ(keys.size(), 4u);
  EXPECT_EQ(Normalization{}.cache_key, 0u);
}

TEST(QueryTest, NormalizationEmptyAndAllDropped) {
  Dictionary empty;
  for (bool lower : {false, true})
    for (bool alnum : {false, true}) {
      Normalization n = normalize_dictionary(empty, lower, alnum);
      EXPECT_EQ(n.dict.size(), 0u);
      EXPECT_TRUE(n.remap.empty());
    }
  Dictionary punct = make_dict({"!", "--", "...", "?!"});
  Normalization n = normalize_dictionary(punct, false, true);
  EXPECT_EQ(n.dict.size(), 0u);
  for (WordId r : n.remap) EXPECT_EQ(r, kDroppedWord);
}

TEST(QueryTest, NormalizationLargeRandomDictionary) {
  // Large enough for the parallel sort path (> 2^20 surviving words), with many collisions.
  std::mt19937_64 rng(7);
  const char alphabet[] = "aAbBzZ09.,!-'\x80\xff";
  std::set<std::string> words;
  while (words.size() < 200000) {
    std::string w;
    size_t len = 1 + rng() % 12;
    for (size_t i = 0; i < len; ++i) w.push_back(alphabet[rng() % (sizeof(alphabet) - 1)]);
    words.insert(w);
  }
  Dictionary d = make_dict(std::vector<std::string>(words.begin(), words.end()));
  check_normalization(d, true, false);
  check_normalization(d, false, true);
  check_normalization(d, true, true);
}

TEST(EngineChoice, AutoFollowsTheMeasuredCostModel) {
  std::string why;
  // No GPU: always the CPU engine.
  EXPECT_EQ(choose_auto_engine(Task::kRankedInvertedIndex, 1e6, 1, false, &why), "cpu");
  EXPECT_NE(why.find("no CUDA device is visible"), std::string::npos);
  // What the benchmark measured on 16 threads (docs/PERFORMANCE.md, "End to end"): 2 MB of text
  // (0.4 MB of grammar), CUDA start-up dominates every task; 30 MB (6.6 MB), the GPU wins the
  // sequence tasks only; 450 MB (92.5 MB), it wins every task.
  for (Task t : {Task::kWordCount, Task::kSort, Task::kInvertedIndex, Task::kTermVector,
                 Task::kSequenceCount, Task::kRankedInvertedIndex}) {
    EXPECT_EQ(choose_auto_engine(t, 0.4, 16, true, &why), "cpu") << task_name(t);
    EXPECT_EQ(choose_auto_engine(t, 92.5, 16, true, &why), "gpu") << task_name(t);
  }
  for (Task t : {Task::kWordCount, Task::kSort, Task::kInvertedIndex, Task::kTermVector})
    EXPECT_EQ(choose_auto_engine(t, 6.6, 16, true, &why), "cpu") << task_name(t);
  EXPECT_EQ(choose_auto_engine(Task::kSequenceCount, 6.6, 16, true, &why), "gpu");
  EXPECT_EQ(choose_auto_engine(Task::kRankedInvertedIndex, 6.6, 16, true, &why), "gpu");
  // Fewer threads make the CPU slower and move the break-even point down.
  EXPECT_EQ(choose_auto_engine(Task::kInvertedIndex, 6.6, 1, true, &why), "gpu");
  EXPECT_NE(why.find("MB of grammar per rank"), std::string::npos);
}

}  // namespace
}  // namespace gtadoc
