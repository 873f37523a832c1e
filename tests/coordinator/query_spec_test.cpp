// The service's request body -> QuerySpec (coordinator/pipeline/query_spec.h): every option of
// `gtadoc run` in both spellings, every bad input a UsageError naming the field, and query_key
// (the result cache's key) equal exactly for queries that give the same bytes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "coordinator/pipeline/query_spec.h"

namespace gtadoc {
namespace {

/// The UsageError message of parsing `body` ("" when it parses).
std::string usage_error(const std::string& body) {
  try {
    query_from_json(body);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(QuerySpec, MinimalQueryGetsTheDefaults) {
  const QuerySpec s = query_from_json(R"({"task": "word-count"})");
  EXPECT_EQ(s.q.task, Task::kWordCount);
  EXPECT_EQ(s.q.top, 0u);
  EXPECT_EQ(s.q.min_count, 1u);
  EXPECT_FALSE(s.q.lowercase);
  EXPECT_FALSE(s.q.alnum);
  EXPECT_FALSE(s.q.ids);
  EXPECT_FALSE(s.q.per_doc);
  EXPECT_EQ(s.q.traversal, Traversal::kAuto);
  EXPECT_FALSE(s.format_given);
  EXPECT_FALSE(s.words_given);
  EXPECT_FALSE(s.docs_given);
  // term-vector's default --top is 10, as for gtadoc run.
  EXPECT_EQ(query_from_json(R"({"task": "term-vector"})").q.top, 10u);
  EXPECT_EQ(query_from_json(R"({"task": "term-vector", "top": 0})").q.top, 0u);
  EXPECT_EQ(query_from_json(R"({"task": "sequence-count"})").q.n, 3u);
}

TEST(QuerySpec, EveryTaskParses) {
  const std::vector<std::pair<std::string, Task>> tasks = {
      {"word-count", Task::kWordCount},
      {"sort", Task::kSort},
      {"inverted-index", Task::kInvertedIndex},
      {"term-vector", Task::kTermVector},
      {"sequence-count", Task::kSequenceCount},
      {"ranked-inverted-index", Task::kRankedInvertedIndex}};
  for (const auto& [name, task] : tasks)
    EXPECT_EQ(query_from_json("{\"task\": \"" + name + "\"}").q.task, task) << name;
}

TEST(QuerySpec, AcceptsEveryOption) {
  const QuerySpec s = query_from_json(
      R"({"task": "sequence-count", "n": 4, "top": 7, "per_doc": true, "ids": true,
          "lowercase": true, "alnum": true, "traversal": "bottom-up", "format": "ndjson",
          "words": ["a", "b"], "docs": ["x.txt", 3]})");
  EXPECT_EQ(s.q.task, Task::kSequenceCount);
  EXPECT_EQ(s.q.n, 4u);
  EXPECT_EQ(s.q.top, 7u);
  EXPECT_TRUE(s.q.per_doc);
  EXPECT_TRUE(s.q.ids);
  EXPECT_TRUE(s.q.lowercase);
  EXPECT_TRUE(s.q.alnum);
  EXPECT_EQ(s.q.traversal, Traversal::kBottomUp);
  EXPECT_EQ(s.format, OutputFormat::kNdjson);
  EXPECT_TRUE(s.format_given);
  EXPECT_TRUE(s.n_given);
  EXPECT_TRUE(s.top_given);
  EXPECT_TRUE(s.words_given);
  EXPECT_TRUE(s.docs_given);
  EXPECT_EQ(s.words, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.docs, (std::vector<std::string>{"x.txt"}));
  EXPECT_EQ(s.doc_ids, (std::vector<uint64_t>{3}));

  const QuerySpec t = query_from_json(
      R"({"task": "term-vector", "min_count": 3, "top": 0, "traversal": "top-down",
          "format": "json"})");
  EXPECT_EQ(t.q.min_count, 3u);
  EXPECT_TRUE(t.min_count_given);
  EXPECT_EQ(t.q.top, 0u);
  EXPECT_EQ(t.q.traversal, Traversal::kTopDown);
  EXPECT_EQ(t.format, OutputFormat::kJson);
  EXPECT_EQ(query_from_json(R"({"task": "sort", "format": "tsv"})").format, OutputFormat::kTsv);
  EXPECT_EQ(query_from_json(R"({"task": "sort", "traversal": "auto"})").q.traversal,
            Traversal::kAuto);
  // Empty filter lists are filters (no rows), not absent filters.
  const QuerySpec e = query_from_json(R"({"task": "inverted-index", "words": [], "docs": []})");
  EXPECT_TRUE(e.words_given);
  EXPECT_TRUE(e.docs_given);
}

TEST(QuerySpec, BothSpellingsOfOptions) {
  const QuerySpec a = query_from_json(R"({"task": "term-vector", "min-count": 2})");
  const QuerySpec b = query_from_json(R"({"task": "term-vector", "min_count": 2})");
  EXPECT_EQ(a.q.min_count, 2u);
  EXPECT_EQ(b.q.min_count, 2u);
  EXPECT_EQ(query_key(a), query_key(b));
  const QuerySpec c = query_from_json(R"({"task": "sequence-count", "per-doc": true})");
  const QuerySpec d = query_from_json(R"({"task": "sequence-count", "per_doc": true})");
  EXPECT_TRUE(c.q.per_doc);
  EXPECT_TRUE(d.q.per_doc);
  EXPECT_EQ(query_key(c), query_key(d));
}

struct Bad {
  const char* body;
  /// The message must name this field ("field" or --field), or, for a leading '=', contain
  /// the rest literally.
  const char* needle;
};

bool names(const std::string& msg, const std::string& needle) {
  if (!needle.empty() && needle[0] == '=') return msg.find(needle.substr(1)) != std::string::npos;
  return msg.find("\"" + needle + "\"") != std::string::npos ||
         msg.find("--" + needle) != std::string::npos;
}

TEST(QuerySpec, RejectsBadInputNamingTheField) {
  const std::vector<Bad> bad = {
      {"", "=malformed JSON"},
      {"{", "=malformed JSON"},
      {R"({"task": "word-count",})", "=malformed JSON"},
      {R"({"task": "word-count"} trailing)", "=malformed JSON"},
      {"\xff\xfe", "=malformed JSON"},
      {"[]", "=JSON object"},
      {"\"word-count\"", "=JSON object"},
      {"42", "=JSON object"},
      {"null", "=JSON object"},
      {"{}", "task"},
      {R"({"top": 5})", "task"},
      {R"({"task": "wordcount"})", "=unknown task 'wordcount'"},
      {R"({"task": "Word-Count"})", "=unknown task 'Word-Count'"},
      {R"({"task": 3})", "task"},
      {R"({"task": null})", "task"},
      {R"({"task": "word-count", "bogus": 1})", "bogus"},
      {R"({"task": "word-count", "Top": 1})", "Top"},
      {R"({"task": "word-count", "top": -1})", "top"},
      {R"({"task": "word-count", "top": "x"})", "top"},
      {R"({"task": "word-count", "top": 1.5})", "top"},
      {R"({"task": "word-count", "top": true})", "top"},
      {R"({"task": "word-count", "top": null})", "top"},
      {R"({"task": "sort", "top": 3})", "top"},
      {R"({"task": "inverted-index", "top": 3})", "top"},
      {R"({"task": "ranked-inverted-index", "top": 3})", "top"},
      {R"({"task": "sequence-count", "n": 9})", "n"},
      {R"({"task": "sequence-count", "n": 1})", "n"},
      {R"({"task": "sequence-count", "n": 0})", "n"},
      {R"({"task": "sequence-count", "n": -3})", "n"},
      {R"({"task": "sequence-count", "n": 18446744073709551617})", "n"},
      {R"({"task": "sequence-count", "n": "3"})", "n"},
      {R"({"task": "word-count", "n": 3})", "n"},
      {R"({"task": "word-count", "per_doc": true})", "per-doc"},
      {R"({"task": "ranked-inverted-index", "per-doc": true})", "per-doc"},
      {R"({"task": "sequence-count", "per_doc": 1})", "per-doc"},
      {R"({"task": "word-count", "min_count": 2})", "min-count"},
      {R"({"task": "term-vector", "min_count": -2})", "min-count"},
      {R"({"task": "word-count", "lowercase": "yes"})", "lowercase"},
      {R"({"task": "word-count", "lowercase": 1})", "lowercase"},
      {R"({"task": "word-count", "alnum": null})", "alnum"},
      {R"({"task": "inverted-index", "ids": "true"})", "ids"},
      {R"({"task": "word-count", "traversal": "sideways"})", "traversal"},
      {R"({"task": "word-count", "traversal": 1})", "traversal"},
      {R"({"task": "word-count", "format": "xml"})", "format"},
      {R"({"task": "word-count", "format": 1})", "format"},
      {R"({"task": "word-count", "words": "the"})", "words"},
      {R"({"task": "word-count", "words": [1]})", "words"},
      {R"({"task": "word-count", "words": [["the"]]})", "words"},
      {R"({"task": "word-count", "words": {"the": 1}})", "words"},
      {R"({"task": "word-count", "docs": ["a"]})", "docs"},
      {R"({"task": "sort", "docs": [0]})", "docs"},
      {R"({"task": "sequence-count", "docs": [0]})", "docs"},
      {R"({"task": "inverted-index", "docs": [-1]})", "docs"},
      {R"({"task": "inverted-index", "docs": [1.5]})", "docs"},
      {R"({"task": "inverted-index", "docs": [""]})", "docs"},
      {R"({"task": "inverted-index", "docs": "a"})", "docs"},
      {R"({"task": "inverted-index", "docs": [null]})", "docs"},
      {R"({"task": "word-count", "threads": 4})", "threads"},
      {R"({"task": "word-count", "output": "/tmp/x"})", "output"},
      {R"({"task": "word-count", "o": "/tmp/x"})", "o"},
      {R"({"task": "word-count", "engine": "gpu"})", "engine"},
      {R"({"task": "word-count", "partitioned": true})", "partitioned"},
      {R"({"task": "word-count", "force": true})", "force"},
      {R"({"task": "word-count", "stats": "s.json"})", "stats"},
  };
  for (const Bad& b : bad) {
    const std::string msg = usage_error(b.body);
    EXPECT_FALSE(msg.empty()) << "accepted: " << b.body;
    EXPECT_TRUE(names(msg, b.needle))
        << "body " << b.body << ": message '" << msg << "' does not name " << b.needle;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
  }
}

TEST(QuerySpec, OnlyUsageErrorsEscape) {
  // Odd but well-formed JSON must end in a spec or a UsageError, never in another exception.
  const std::vector<std::string> odd = {
      R"({"task": "word-count", "top": 18446744073709551615})",
      R"({"task": "word-count", "top": 1e3})",
      R"({"task": "word-count", "task": "sort"})",
      R"({"task": "inverted-index", "docs": [18446744073709551615]})",
      R"({"task": "word-count", "words": ["\u0000", "a\tb", "\ud83d\ude00", ""]})",
      "{\"task\": \"word-count\", \"words\": [\"\xc3\x28\"]}",
      R"({"task": "word-count", "\u0000": 1})",
      std::string(2000, '[') + std::string(2000, ']'),
  };
  for (const std::string& body : odd) {
    try {
      query_from_json(body);
    } catch (const UsageError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "body " << body.substr(0, 80) << " threw " << e.what();
    }
  }
  // The largest top is accepted as given.
  EXPECT_EQ(query_from_json(R"({"task": "word-count", "top": 18446744073709551615})").q.top,
            UINT64_MAX);
}

std::string key(const std::string& body) {
  return query_key(query_from_json(body));
}

TEST(QuerySpec, KeyEqualForEquivalentQueries) {
  // Field order, spelling, defaults given or not, the traversal (same bytes by contract).
  EXPECT_EQ(key(R"({"task": "word-count", "top": 5, "lowercase": true})"),
            key(R"({"lowercase": true, "top": 5, "task": "word-count"})"));
  EXPECT_EQ(key(R"({"task": "word-count"})"), key(R"({"task": "word-count", "top": 0})"));
  EXPECT_EQ(key(R"({"task": "word-count"})"),
            key(R"({"task": "word-count", "lowercase": false, "alnum": false})"));
  EXPECT_EQ(key(R"({"task": "term-vector"})"), key(R"({"task": "term-vector", "top": 10})"));
  EXPECT_EQ(key(R"({"task": "term-vector"})"), key(R"({"task": "term-vector", "min_count": 1})"));
  EXPECT_EQ(key(R"({"task": "sequence-count"})"), key(R"({"task": "sequence-count", "n": 3})"));
  EXPECT_EQ(key(R"({"task": "ranked-inverted-index"})"),
            key(R"({"task": "ranked-inverted-index", "n": 3})"));
  EXPECT_EQ(key(R"({"task": "sort", "traversal": "top-down"})"),
            key(R"({"task": "sort", "traversal": "bottom-up"})"));
  EXPECT_EQ(key(R"({"task": "sort"})"), key(R"({"task": "sort", "traversal": "auto"})"));
  // Filters: order and duplicate entries do not matter.
  EXPECT_EQ(key(R"({"task": "word-count", "words": ["b", "a", "b"]})"),
            key(R"({"task": "word-count", "words": ["a", "b"]})"));
  EXPECT_EQ(key(R"({"task": "inverted-index", "docs": ["y", "x", 2, "y", 0, 2]})"),
            key(R"({"task": "inverted-index", "docs": [0, "x", 2, "y"]})"));
  EXPECT_EQ(key(R"({"task": "inverted-index", "docs": ["x"], "words": ["w"]})"),
            key(R"({"words": ["w", "w"], "docs": ["x", "x"], "task": "inverted-index"})"));
  // A format in the body and the same format negotiated later give the same key.
  QuerySpec negotiated = query_from_json(R"({"task": "sort"})");
  negotiated.format = OutputFormat::kJson;
  negotiated.format_given = true;
  EXPECT_EQ(query_key(negotiated), key(R"({"task": "sort", "format": "json"})"));
}

TEST(QuerySpec, KeyDiffersWhenTheBytesDiffer) {
  const std::vector<std::string> bodies = {
      R"({"task": "word-count"})",
      R"({"task": "sort"})",
      R"({"task": "inverted-index"})",
      R"({"task": "term-vector"})",
      R"({"task": "sequence-count"})",
      R"({"task": "ranked-inverted-index"})",
      R"({"task": "word-count", "top": 5})",
      R"({"task": "word-count", "top": 6})",
      R"({"task": "word-count", "lowercase": true})",
      R"({"task": "word-count", "alnum": true})",
      R"({"task": "word-count", "lowercase": true, "alnum": true})",
      R"({"task": "word-count", "format": "json"})",
      R"({"task": "word-count", "format": "ndjson"})",
      R"({"task": "word-count", "words": ["a"]})",
      R"({"task": "word-count", "words": ["b"]})",
      R"({"task": "word-count", "words": ["a", "b"]})",
      R"({"task": "word-count", "words": []})",
      R"({"task": "inverted-index", "ids": true})",
      R"({"task": "inverted-index", "docs": ["x"]})",
      R"({"task": "inverted-index", "docs": [1]})",
      R"({"task": "inverted-index", "docs": []})",
      R"({"task": "inverted-index", "docs": ["x"], "words": ["a"]})",
      R"({"task": "term-vector", "top": 0})",
      R"({"task": "term-vector", "min_count": 2})",
      R"({"task": "term-vector", "top": 0, "min_count": 2})",
      R"({"task": "term-vector", "docs": [0]})",
      R"({"task": "sequence-count", "n": 2})",
      R"({"task": "sequence-count", "n": 4})",
      R"({"task": "sequence-count", "per_doc": true})",
      R"({"task": "sequence-count", "per_doc": true, "top": 2})",
      R"({"task": "sequence-count", "per_doc": true, "docs": [0]})",
      R"({"task": "ranked-inverted-index", "n": 2})",
      R"({"task": "ranked-inverted-index", "ids": true})",
  };
  std::vector<std::string> keys;
  for (const std::string& b : bodies) keys.push_back(key(b));
  for (size_t i = 0; i < keys.size(); ++i)
    for (size_t j = i + 1; j < keys.size(); ++j)
      EXPECT_NE(keys[i], keys[j]) << bodies[i] << " and " << bodies[j] << " share key " << keys[i];
}

TEST(QuerySpec, FormatNames) {
  EXPECT_EQ(parse_format("tsv", false), OutputFormat::kTsv);
  EXPECT_EQ(parse_format("json", false), OutputFormat::kJson);
  EXPECT_EQ(parse_format("ndjson", true), OutputFormat::kNdjson);
  EXPECT_THROW(parse_format("ndjson", false), UsageError);
  EXPECT_THROW(parse_format("TSV", true), UsageError);
  for (OutputFormat f : {OutputFormat::kTsv, OutputFormat::kJson, OutputFormat::kNdjson})
    EXPECT_EQ(parse_format(format_name(f), true), f);
}

}  // namespace
}  // namespace gtadoc
