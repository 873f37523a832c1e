// cluster/rows/render.h on its own: records and row plans built by hand (no plan_rows), rendered
// by RowRenderer and compared with bytes written independently of it.
//
//  * Small inputs, every task: the expected TSV, JSON and NDJSON bytes are string literals
//    written from docs/OUTPUT.md (odd bytes in words and document names: quotes, backslashes,
//    tabs, newlines, CR, control bytes, 0x7F, invalid UTF-8; --ids; empty rows and results;
//    JSON slices that do not start the result; n-grams held as ranks).
//  * Large inputs, every task: thousands of rows (many of the renderer's 512-row blocks, rows
//    of very different sizes), records stored in a shuffled order behind the plan, several
//    threads; the expected bytes are built from the rows' own description with std::string and
//    nlohmann::json (never from the records or the renderer), and compared with render_all(),
//    with chunked render() and render_into() at several chunk sizes, and with render_placed()'s
//    pieces put at their offsets.
#include "cluster/rows/render.h"

#include <gtest/gtest.h>

#include <mutex>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cluster/rows/row_plan.h"
#include "cluster/rows/sequence_order.h"
#include "tests/reference/raw_reference.h"

namespace gtadoc {
namespace {

using Key = std::vector<uint32_t>;
/// One record: key and count.
using Entry = std::pair<Key, uint64_t>;
/// Rows in output order, each a run of records (one record for word-count, sort and
/// sequence-count).
using RowEntries = std::vector<std::vector<Entry>>;

Dictionary dictionary(const std::vector<std::string>& words) {
  Dictionary d;
  for (const auto& w : words) d.push_back(w);
  return d;
}

Dictionary documents(const std::vector<std::string>& names) {
  return dictionary(names);
}

struct Built {
  RecordBatch records;
  RowPlan plan;
};

/// Records and a plan for `rows`. `shuffled`: records are stored in a random order and the plan
/// lists them (plan.order); else they are stored in output order and the plan has no order.
/// `grouped`: rows may hold several records (plan.row_begin). `row_doc`: term-vector's documents.
Built build(uint32_t width, const RowEntries& rows, bool grouped, bool shuffled, uint64_t seed,
            const std::vector<DocId>& row_doc = {}) {
  std::vector<const Entry*> flat;
  Built b;
  if (grouped) b.plan.row_begin.push_back(0);
  for (const auto& row : rows) {
    if (!grouped) EXPECT_EQ(row.size(), 1u);
    for (const Entry& e : row) flat.push_back(&e);
    if (grouped) b.plan.row_begin.push_back(flat.size());
  }
  std::vector<uint64_t> slot(flat.size());  // output position -> storage index
  std::iota(slot.begin(), slot.end(), 0);
  if (shuffled) {
    std::mt19937_64 rng(seed);
    std::shuffle(slot.begin(), slot.end(), rng);
  }
  std::vector<const Entry*> stored(flat.size());
  for (size_t p = 0; p < flat.size(); ++p) stored[slot[p]] = flat[p];
  b.records.width = width;
  for (const Entry* e : stored) {
    EXPECT_EQ(e->first.size(), width);
    b.records.push(e->first, e->second);
  }
  if (shuffled) {
    b.plan.order.assign(slot.begin(), slot.end());
  } else {
    b.plan.positions = flat.size();
  }
  b.plan.row_doc = row_doc;
  return b;
}

/// Renders all rows: the JSON trailer of a whole result is appended when `whole`.
struct Rendered {
  std::string all;            ///< render_all()
  std::string chunks;         ///< render(chunk_bytes) concatenated
  std::string placed;         ///< render_placed(chunk_bytes) pieces put at their offsets
  uint64_t placed_bytes = 0;  ///< bytes render_placed handed over (each exactly once)
  std::string into;           ///< render_into(chunk_bytes) (the mapped output's path)
  uint64_t into_done = 0;     ///< bytes render_into reported done
  uint64_t rows = 0;
  uint64_t bytes = 0;
};

Rendered render(const Built& b, const QueryOptions& q, const Dictionary& dict,
                const Dictionary& docs, OutputFormat fmt, bool first_is_start = true,
                unsigned threads = 2, const SequenceOrder* ranked = nullptr) {
  const DocText doc_text(docs, q.ids, fmt, threads);
  const RenderContext ctx{q, dict, doc_text, fmt, ranked};
  const RowRenderer r(b.records, b.plan, ctx, first_is_start, threads);
  Rendered out;
  out.all = r.render_all();
  r.render(64, [&](const char* p, size_t n) { out.chunks.append(p, n); });
  out.placed.assign(r.bytes(), '\0');
  std::mutex mu;
  r.render_placed(64, [&](uint64_t at, const char* p, size_t n) {
    std::lock_guard lock(mu);
    EXPECT_LE(at + n, out.placed.size());
    out.placed.replace(at, n, p, n);
    out.placed_bytes += n;
  });
  out.into.assign(r.bytes(), '\0');
  r.render_into(out.into.data(), 64, [&](size_t n) { out.into_done += n; });
  out.rows = r.rows();
  out.bytes = r.bytes();
  return out;
}

/// The whole result's bytes: all rows, then the JSON trailer. Also checks the chunked output
/// and the byte count against render_all().
std::string whole(const Built& b, const QueryOptions& q, const Dictionary& dict,
                  const Dictionary& docs, OutputFormat fmt, const SequenceOrder* ranked = nullptr) {
  const Rendered r = render(b, q, dict, docs, fmt, true, 2, ranked);
  EXPECT_EQ(r.chunks, r.all);
  EXPECT_EQ(r.placed, r.all);
  EXPECT_EQ(r.placed_bytes, r.all.size());
  EXPECT_EQ(r.into, r.all);
  EXPECT_EQ(r.into_done, r.all.size());
  EXPECT_EQ(r.bytes, r.all.size());
  return r.all + std::string(json_trailer(fmt, r.rows));
}

QueryOptions query(Task task, uint32_t n = 3, bool per_doc = false, bool ids = false) {
  QueryOptions q;
  q.task = task;
  q.n = n;
  q.per_doc = per_doc;
  q.ids = ids;
  return q;
}

// ------------------------------------------------------------------ small inputs, literal bytes

// Word ids 0..8. JSON: \x01 -> \u0001, '"' -> \", '\' -> \\, 0x7F as is, \xFF (invalid UTF-8)
// -> U+FFFD (EF BF BD), é (C3 A9) as is. TSV: every word byte as is.
const std::vector<std::string> kWords = {"\x01x", "A",   "a\"q", "b\\s", "caf\xc3\xa9",
                                         "cat",   "the", "\x7f", "\xff"};
enum : uint32_t { kCtl, kA, kQuote, kBack, kCafe, kCat, kThe, kDel, kBad };

// Document ids 0..6. TSV: tab -> \t, newline -> \n, backslash -> \\ (two characters each),
// everything else (CR, quote, invalid UTF-8) as is. JSON: the raw name as a JSON string.
const std::vector<std::string> kNames = {"a.txt",
                                         "we\tird",
                                         "new\nline",
                                         "back\\slash",
                                         "q\"uote",
                                         "\xff"
                                         "bad",
                                         "cr\r"};

class RenderLiteral : public ::testing::Test {
 protected:
  Dictionary dict = dictionary(kWords);
  Dictionary docs = documents(kNames);
};

TEST_F(RenderLiteral, WordCount) {
  const RowEntries rows = {{{{kCtl}, 18446744073709551615ull}},
                           {{{kCat}, 3}},
                           {{{kThe}, 3}},
                           {{{kQuote}, 2}},
                           {{{kBack}, 1}},
                           {{{kBad}, 1}},
                           {{{kDel}, 1}}};
  const Built b = build(1, rows, false, true, 1);
  const QueryOptions q = query(Task::kWordCount);
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv),
            "\x01x\t18446744073709551615\n"
            "cat\t3\n"
            "the\t3\n"
            "a\"q\t2\n"
            "b\\s\t1\n"
            "\xff\t1\n"
            "\x7f\t1\n");
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kJson),
            "[\n"
            "{\"word\":\"\\u0001x\",\"count\":18446744073709551615},\n"
            "{\"word\":\"cat\",\"count\":3},\n"
            "{\"word\":\"the\",\"count\":3},\n"
            "{\"word\":\"a\\\"q\",\"count\":2},\n"
            "{\"word\":\"b\\\\s\",\"count\":1},\n"
            "{\"word\":\"\xef\xbf\xbd\",\"count\":1},\n"
            "{\"word\":\"\x7f\",\"count\":1}\n"
            "]\n");
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kNdjson),
            "{\"word\":\"\\u0001x\",\"count\":18446744073709551615}\n"
            "{\"word\":\"cat\",\"count\":3}\n"
            "{\"word\":\"the\",\"count\":3}\n"
            "{\"word\":\"a\\\"q\",\"count\":2}\n"
            "{\"word\":\"b\\\\s\",\"count\":1}\n"
            "{\"word\":\"\xef\xbf\xbd\",\"count\":1}\n"
            "{\"word\":\"\x7f\",\"count\":1}\n");
}

TEST_F(RenderLiteral, SortInStorageOrder) {
  // No plan order: record i is row i.
  const RowEntries rows = {{{{kA}, 1}}, {{{kCafe}, 12}}, {{{kCat}, 3}}};
  const Built b = build(1, rows, false, false, 0);
  ASSERT_TRUE(b.plan.order.empty());
  const QueryOptions q = query(Task::kSort);
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv), "A\t1\ncaf\xc3\xa9\t12\ncat\t3\n");
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kJson),
            "[\n{\"word\":\"A\",\"count\":1},\n{\"word\":\"caf\xc3\xa9\",\"count\":12},\n"
            "{\"word\":\"cat\",\"count\":3}\n]\n");
}

TEST_F(RenderLiteral, InvertedIndex) {
  const RowEntries rows = {{{{kCat, 0}, 1}, {{kCat, 1}, 4}, {{kCat, 3}, 1}},
                           {{{kBad, 2}, 1}, {{kBad, 4}, 2}, {{kBad, 5}, 1}},
                           {{{kCafe, 6}, 1}}};
  const Built b = build(2, rows, true, true, 2);
  QueryOptions q = query(Task::kInvertedIndex);
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv),
            "cat\ta.txt,we\\tird,back\\\\slash\n"
            "\xff\tnew\\nline,q\"uote,\xff"
            "bad\n"
            "caf\xc3\xa9\tcr\r\n");
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kJson),
            "[\n"
            "{\"word\":\"cat\",\"docs\":[\"a.txt\",\"we\\tird\",\"back\\\\slash\"]},\n"
            "{\"word\":\"\xef\xbf\xbd\",\"docs\":[\"new\\nline\",\"q\\\"uote\",\"\xef\xbf\xbd"
            "bad\"]},\n"
            "{\"word\":\"caf\xc3\xa9\",\"docs\":[\"cr\\r\"]}\n"
            "]\n");
  q.ids = true;
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv),
            "cat\t0,1,3\n\xff\t2,4,5\ncaf\xc3\xa9\t6\n");
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kJson),
            "[\n"
            "{\"word\":\"cat\",\"docs\":[0,1,3]},\n"
            "{\"word\":\"\xef\xbf\xbd\",\"docs\":[2,4,5]},\n"
            "{\"word\":\"caf\xc3\xa9\",\"docs\":[6]}\n"
            "]\n");
}

TEST_F(RenderLiteral, TermVectorWithAnEmptyRow) {
  const RowEntries rows = {{{{0, kCat}, 2}, {{0, kThe}, 1}}, {}, {{{6, kCtl}, 5}}, {}};
  const Built b = build(2, rows, true, true, 3, {0, 1, 6, 4});
  QueryOptions q = query(Task::kTermVector);
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv),
            "a.txt\tcat:2 the:1\n"
            "we\\tird\t\n"
            "cr\r\t\x01x:5\n"
            "q\"uote\t\n");
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kJson),
            "[\n"
            "{\"doc\":\"a.txt\",\"terms\":[{\"word\":\"cat\",\"count\":2},"
            "{\"word\":\"the\",\"count\":1}]},\n"
            "{\"doc\":\"we\\tird\",\"terms\":[]},\n"
            "{\"doc\":\"cr\\r\",\"terms\":[{\"word\":\"\\u0001x\",\"count\":5}]},\n"
            "{\"doc\":\"q\\\"uote\",\"terms\":[]}\n"
            "]\n");
  q.ids = true;
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv), "0\tcat:2 the:1\n1\t\n6\t\x01x:5\n4\t\n");
  EXPECT_EQ(
      whole(b, q, dict, docs, OutputFormat::kNdjson),
      "{\"doc\":0,\"terms\":[{\"word\":\"cat\",\"count\":2},{\"word\":\"the\",\"count\":1}]}\n"
      "{\"doc\":1,\"terms\":[]}\n"
      "{\"doc\":6,\"terms\":[{\"word\":\"\\u0001x\",\"count\":5}]}\n"
      "{\"doc\":4,\"terms\":[]}\n");
}

TEST_F(RenderLiteral, SequenceCount) {
  const RowEntries rows = {{{{kCat, kThe}, 4}}, {{{kThe, kCat}, 2}}, {{{kQuote, kDel}, 1}}};
  const Built b = build(2, rows, false, true, 4);
  const QueryOptions q = query(Task::kSequenceCount, 2);
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv), "cat the\t4\nthe cat\t2\na\"q \x7f\t1\n");
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kJson),
            "[\n"
            "{\"sequence\":\"cat the\",\"count\":4},\n"
            "{\"sequence\":\"the cat\",\"count\":2},\n"
            "{\"sequence\":\"a\\\"q \x7f\",\"count\":1}\n"
            "]\n");
}

TEST_F(RenderLiteral, SequenceCountPerDocument) {
  const RowEntries rows = {{{{1, kCat, kThe, kCat}, 2}}, {{{5, kBad, kA, kBack}, 1}}};
  const Built b = build(4, rows, false, true, 5);
  QueryOptions q = query(Task::kSequenceCount, 3, true);
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv),
            "we\\tird\tcat the cat\t2\n"
            "\xff"
            "bad\t\xff A b\\s\t1\n");
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kJson),
            "[\n"
            "{\"doc\":\"we\\tird\",\"sequence\":\"cat the cat\",\"count\":2},\n"
            "{\"doc\":\"\xef\xbf\xbd"
            "bad\",\"sequence\":\"\xef\xbf\xbd A b\\\\s\",\"count\":1}\n"
            "]\n");
  q.ids = true;
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv), "1\tcat the cat\t2\n5\t\xff A b\\s\t1\n");
}

TEST_F(RenderLiteral, RankedInvertedIndex) {
  const RowEntries rows = {{{{kCat, kThe, 1}, 3}, {{kCat, kThe, 0}, 1}}, {{{kThe, kCat, 6}, 2}}};
  const Built b = build(3, rows, true, true, 6);
  QueryOptions q = query(Task::kRankedInvertedIndex, 2);
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv),
            "cat the\twe\\tird:3 a.txt:1\n"
            "the cat\tcr\r:2\n");
  EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kJson),
            "[\n"
            "{\"sequence\":\"cat the\",\"docs\":[{\"doc\":\"we\\tird\",\"count\":3},"
            "{\"doc\":\"a.txt\",\"count\":1}]},\n"
            "{\"sequence\":\"the cat\",\"docs\":[{\"doc\":\"cr\\r\",\"count\":2}]}\n"
            "]\n");
  q.ids = true;
  EXPECT_EQ(
      whole(b, q, dict, docs, OutputFormat::kJson),
      "[\n"
      "{\"sequence\":\"cat the\",\"docs\":[{\"doc\":1,\"count\":3},{\"doc\":0,\"count\":1}]},\n"
      "{\"sequence\":\"the cat\",\"docs\":[{\"doc\":6,\"count\":2}]}\n"
      "]\n");
}

TEST_F(RenderLiteral, NgramsHeldAsRanksAreWrittenAsWords) {
  // "a\x01 " < "a " (0x01 < 0x20) although "a" < "a\x01": the space ranks differ from the ids.
  const Dictionary d = dictionary({"a", "a\x01", "b"});
  const SequenceOrder order(d, 2);
  ASSERT_FALSE(order.identity());
  RowEntries rows = {{{{1, 2}, 3}}, {{{0, 2}, 2}}, {{{2, 1}, 1}}, {{{0, 0}, 1}}};
  bool changed = false;
  for (auto& row : rows) {
    const Key words = row[0].first;
    order.to_ranks(row[0].first.data());
    changed = changed || row[0].first != words;
  }
  ASSERT_TRUE(changed);
  const Built b = build(2, rows, false, true, 7);
  const QueryOptions q = query(Task::kSequenceCount, 2);
  EXPECT_EQ(whole(b, q, d, docs, OutputFormat::kTsv, &order),
            "a\x01 b\t3\na b\t2\nb a\x01\t1\na a\t1\n");
  EXPECT_EQ(whole(b, q, d, docs, OutputFormat::kJson, &order),
            "[\n"
            "{\"sequence\":\"a\\u0001 b\",\"count\":3},\n"
            "{\"sequence\":\"a b\",\"count\":2},\n"
            "{\"sequence\":\"b a\\u0001\",\"count\":1},\n"
            "{\"sequence\":\"a a\",\"count\":1}\n"
            "]\n");

  // ranked-inverted-index: the document after the ranks.
  RowEntries ranked = {{{{1, 0, 3}, 2}, {{1, 0, 0}, 1}}};
  order.to_ranks(ranked[0][0].first.data());
  order.to_ranks(ranked[0][1].first.data());
  const Built rb = build(3, ranked, true, true, 8);
  EXPECT_EQ(whole(rb, query(Task::kRankedInvertedIndex, 2), d, docs, OutputFormat::kTsv, &order),
            "a\x01 a\tback\\\\slash:2 a.txt:1\n");
}

TEST_F(RenderLiteral, EmptyResults) {
  for (Task t : {Task::kWordCount, Task::kSort, Task::kInvertedIndex, Task::kTermVector,
                 Task::kSequenceCount, Task::kRankedInvertedIndex}) {
    SCOPED_TRACE(task_name(t));
    const QueryOptions q = query(t, 2);
    const uint32_t width = t == Task::kWordCount || t == Task::kSort ? 1u
                           : t == Task::kRankedInvertedIndex         ? 3u
                                                                     : 2u;
    const bool grouped =
        t == Task::kInvertedIndex || t == Task::kTermVector || t == Task::kRankedInvertedIndex;
    for (bool shuffled : {false, true}) {
      const Built b = build(width, {}, grouped, shuffled, 9);
      EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kTsv), "");
      EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kJson), "[\n]\n");
      EXPECT_EQ(whole(b, q, dict, docs, OutputFormat::kNdjson), "");
      int calls = 0;
      const DocText dt(docs, false, OutputFormat::kJson, 1);
      const RenderContext ctx{q, dict, dt, OutputFormat::kJson};
      RowRenderer(b.records, b.plan, ctx, true, 1).render(1, [&](const char*, size_t) { ++calls; });
      EXPECT_EQ(calls, 0);
    }
  }
}

TEST(RenderTrailer, JsonOnly) {
  EXPECT_EQ(json_trailer(OutputFormat::kJson, 0), "[\n]\n");
  EXPECT_EQ(json_trailer(OutputFormat::kJson, 1), "\n]\n");
  EXPECT_EQ(json_trailer(OutputFormat::kJson, 12345), "\n]\n");
  EXPECT_EQ(json_trailer(OutputFormat::kTsv, 0), "");
  EXPECT_EQ(json_trailer(OutputFormat::kTsv, 7), "");
  EXPECT_EQ(json_trailer(OutputFormat::kNdjson, 0), "");
  EXPECT_EQ(json_trailer(OutputFormat::kNdjson, 7), "");
}

TEST_F(RenderLiteral, JsonSliceNotStartingTheResult) {
  const RowEntries rows = {{{{kCat}, 3}}, {{{kThe}, 1}}};
  const Built b = build(1, rows, false, true, 10);
  const QueryOptions q = query(Task::kWordCount);
  const Rendered r = render(b, q, dict, docs, OutputFormat::kJson, false);
  EXPECT_EQ(r.all, ",\n{\"word\":\"cat\",\"count\":3},\n{\"word\":\"the\",\"count\":1}");
  EXPECT_EQ(r.chunks, r.all);
  // TSV and NDJSON rows do not depend on where the slice starts.
  EXPECT_EQ(render(b, q, dict, docs, OutputFormat::kTsv, false).all, "cat\t3\nthe\t1\n");
  EXPECT_EQ(render(b, q, dict, docs, OutputFormat::kNdjson, false).all,
            "{\"word\":\"cat\",\"count\":3}\n{\"word\":\"the\",\"count\":1}\n");
}

TEST_F(RenderLiteral, DocumentText) {
  const DocText tsv(docs, false, OutputFormat::kTsv, 3);
  const DocText json(docs, false, OutputFormat::kJson, 3);
  const DocText ids(docs, true, OutputFormat::kJson, 3);
  const std::vector<std::string> want_tsv = {"a.txt",
                                             "we\\tird",
                                             "new\\nline",
                                             "back\\\\slash",
                                             "q\"uote",
                                             "\xff"
                                             "bad",
                                             "cr\r"};
  const std::vector<std::string> want_json = {"\"a.txt\"",
                                              "\"we\\tird\"",
                                              "\"new\\nline\"",
                                              "\"back\\\\slash\"",
                                              "\"q\\\"uote\"",
                                              "\"\xef\xbf\xbd"
                                              "bad\"",
                                              "\"cr\\r\""};
  for (DocId d = 0; d < docs.size(); ++d) {
    EXPECT_EQ(tsv[d], want_tsv[d]);
    EXPECT_EQ(json[d], want_json[d]);
    EXPECT_EQ(ids[d], std::to_string(d));
  }
}

TEST_F(RenderLiteral, SinkErrorsReachTheCaller) {
  RowEntries rows;
  for (uint32_t i = 0; i < 3000; ++i) rows.push_back({{{i % 9}, i + 1}});
  const Built b = build(1, rows, false, true, 11);
  const QueryOptions q = query(Task::kWordCount);
  const DocText dt(docs, false, OutputFormat::kTsv, 2);
  const RenderContext ctx{q, dict, dt, OutputFormat::kTsv};
  const RowRenderer r(b.records, b.plan, ctx, true, 2);
  for (int fail_at : {0, 1}) {
    int calls = 0;
    EXPECT_THROW(r.render(1,
                          [&](const char*, size_t) {
                            if (calls++ == fail_at) throw std::runtime_error("disk full");
                          }),
                 std::runtime_error);
  }
}

// ------------------------------------------------------------------ large inputs

/// nlohmann's bytes for a JSON string (docs/OUTPUT.md: dump(-1, ' ', false, replace)).
std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

TEST(RenderDocuments, TextsOfEveryLengthUpTo70AndIds) {
  // Texts of 0-70 bytes, escaped or not, on one thread and on several.
  std::vector<std::string> names;
  for (size_t n = 0; n <= 70; ++n) {
    names.push_back(std::string(n, 'a'));
    if (n > 0) names.push_back(std::string(n - 1, 'b') + "\t");
    if (n > 1) names.push_back(std::string(n - 2, 'c') + "\"\xff");
  }
  std::sort(names.begin(), names.end());
  const Dictionary docs = documents(names);
  for (unsigned threads : {1u, 3u}) {
    const DocText tsv(docs, false, OutputFormat::kTsv, threads);
    const DocText json(docs, false, OutputFormat::kJson, threads);
    const DocText ids(docs, true, OutputFormat::kTsv, threads);
    for (DocId d = 0; d < names.size(); ++d) {
      EXPECT_EQ(tsv[d], rawref::escape_tsv_name(names[d])) << d;
      EXPECT_EQ(json[d], json_string(names[d])) << d;
      EXPECT_EQ(ids[d], std::to_string(d));
    }
  }
}

/// The expected bytes of rows described by the test itself (words, names, keys, counts).
class Expected {
 public:
  Expected(const std::vector<std::string>& words, const std::vector<std::string>& names,
           const QueryOptions& q, OutputFormat fmt)
      : words_(words), names_(names), q_(q), json_(fmt != OutputFormat::kTsv) {}

  std::string row(const std::vector<Entry>& entries, DocId row_doc) const {
    std::string s;
    switch (q_.task) {
      case Task::kWordCount:
      case Task::kSort: {
        const auto& [k, c] = entries.at(0);
        return json_ ? "{\"word\":" + json_string(words_[k[0]]) + ",\"count\":" + num(c) + "}"
                     : words_[k[0]] + "\t" + num(c);
      }
      case Task::kInvertedIndex:
        s = json_ ? "{\"word\":" + json_string(words_[entries.at(0).first[0]]) + ",\"docs\":["
                  : words_[entries.at(0).first[0]] + "\t";
        for (size_t i = 0; i < entries.size(); ++i) s += (i ? "," : "") + doc(entries[i].first[1]);
        return json_ ? s + "]}" : s;
      case Task::kTermVector:
        s = json_ ? "{\"doc\":" + doc(row_doc) + ",\"terms\":[" : doc(row_doc) + "\t";
        for (size_t i = 0; i < entries.size(); ++i) {
          const auto& [k, c] = entries[i];
          EXPECT_EQ(k[0], row_doc);
          s += json_ ? std::string(i ? "," : "") + "{\"word\":" + json_string(words_[k[1]]) +
                           ",\"count\":" + num(c) + "}"
                     : std::string(i ? " " : "") + words_[k[1]] + ":" + num(c);
        }
        return json_ ? s + "]}" : s;
      case Task::kSequenceCount: {
        const auto& [k, c] = entries.at(0);
        const uint32_t off = q_.per_doc ? 1 : 0;
        if (json_)
          return "{" + (q_.per_doc ? "\"doc\":" + doc(k[0]) + "," : std::string()) +
                 "\"sequence\":" + json_string(joined(k, off)) + ",\"count\":" + num(c) + "}";
        return (q_.per_doc ? doc(k[0]) + "\t" : std::string()) + joined(k, off) + "\t" + num(c);
      }
      case Task::kRankedInvertedIndex:
        s = json_ ? "{\"sequence\":" + json_string(joined(entries.at(0).first, 0)) + ",\"docs\":["
                  : joined(entries.at(0).first, 0) + "\t";
        for (size_t i = 0; i < entries.size(); ++i) {
          const auto& [k, c] = entries[i];
          s += json_ ? std::string(i ? "," : "") + "{\"doc\":" + doc(k[q_.n]) +
                           ",\"count\":" + num(c) + "}"
                     : std::string(i ? " " : "") + doc(k[q_.n]) + ":" + num(c);
        }
        return json_ ? s + "]}" : s;
    }
    return s;
  }

 private:
  static std::string num(uint64_t v) { return std::to_string(v); }
  std::string doc(DocId d) const {
    if (q_.ids) return std::to_string(d);
    return json_ ? json_string(names_[d]) : rawref::escape_tsv_name(names_[d]);
  }
  std::string joined(const Key& k, uint32_t off) const {
    std::string s;
    for (uint32_t i = 0; i < q_.n; ++i) s += (i ? " " : "") + words_[k[off + i]];
    return s;
  }

  const std::vector<std::string>& words_;
  const std::vector<std::string>& names_;
  const QueryOptions& q_;
  bool json_;
};

/// Words in byte order: short and long (40-339 bytes: TSV n-grams are measured from one byte per
/// word up to 254 bytes, from the dictionary above), with bytes JSON escapes, invalid UTF-8, and
/// words that are prefixes of others followed by a byte below 0x20 (so sequence ranks differ from
/// ids).
std::vector<std::string> large_words() {
  std::mt19937_64 rng(77);
  const std::string alphabet = std::string("abcde\"\\\x01\x1f\x7f\xc3\xa9\xff-.", 15);
  std::set<std::string> words = {"a", "a\x01", "a\x01z", "b", "b\x1f"};
  while (words.size() < 300) {
    const size_t len = rng() % 7 == 0 ? 40 + rng() % 300 : 1 + rng() % 10;
    std::string w;
    for (size_t i = 0; i < len; ++i) w += alphabet[rng() % alphabet.size()];
    words.insert(w);
  }
  return {words.begin(), words.end()};
}

std::vector<std::string> large_names() {
  const char* odd[] = {"", "\t", "\n", "\\", "\"", "\xff", "\r", "\xc3\xa9", "\x01", " x"};
  std::vector<std::string> names;
  // Every seventh name long (24-45 bytes), escaped or not.
  for (int i = 0; i < 1500; ++i)
    names.push_back("doc" + std::to_string(i) + std::string(i % 7 == 0 ? 20 + i % 17 : 0, 'p') +
                    odd[i % 10]);
  std::sort(names.begin(), names.end());
  return names;
}

struct LargeCase {
  Task task;
  uint32_t n = 3;
  bool per_doc = false;
  bool ranks = false;  ///< n-grams held as ranks (SequenceOrder::to_ranks)
};
void PrintTo(const LargeCase& c, std::ostream* os) {
  *os << task_name(c.task) << " n=" << c.n << (c.per_doc ? " per_doc" : "")
      << (c.ranks ? " ranks" : "");
}

/// Rows of a task: many, of very different sizes, counts up to 2^64 - 1.
RowEntries large_rows(const LargeCase& c, uint32_t V, uint32_t D, std::vector<DocId>& row_doc,
                      uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto count = [&]() -> uint64_t {
    const uint64_t k = rng() % 10;
    return k == 0 ? ~uint64_t{0} - rng() % 1000 : k < 3 ? 1 + rng() % 1000000000000ull : 1 + k;
  };
  auto words = [&](uint32_t n) {
    Key k(n);
    for (auto& w : k) w = static_cast<uint32_t>(rng() % V);
    return k;
  };
  RowEntries rows;
  switch (c.task) {
    case Task::kWordCount:
    case Task::kSort:
      for (int r = 0; r < 3100; ++r) rows.push_back({{words(1), count()}});
      break;
    case Task::kInvertedIndex:
      for (int r = 0; r < 1700; ++r) {
        const Key w = words(1);
        std::vector<Entry> row;
        const uint32_t ndocs = rng() % 5 == 0 ? 1 + rng() % 60 : 1 + rng() % 3;
        for (uint32_t i = 0; i < ndocs; ++i)
          row.push_back({{w[0], static_cast<uint32_t>(rng() % D)}, 1 + rng() % 9});
        rows.push_back(row);
      }
      break;
    case Task::kTermVector:
      for (DocId d = 0; d < D; ++d) {
        if (rng() % 9 == 0) continue;  // documents without a row (a slice, a filter)
        std::vector<Entry> row;
        const uint32_t nterms = rng() % 4 == 0 ? 0 : rng() % 7 == 0 ? 30 + rng() % 40 : rng() % 5;
        for (uint32_t i = 0; i < nterms; ++i) row.push_back({{d, words(1)[0]}, count()});
        rows.push_back(row);
        row_doc.push_back(d);
      }
      break;
    case Task::kSequenceCount:
      for (int r = 0; r < 2600; ++r) {
        Key k = words(c.n);
        if (c.per_doc) k.insert(k.begin(), static_cast<uint32_t>(rng() % D));
        rows.push_back({{k, count()}});
      }
      break;
    case Task::kRankedInvertedIndex:
      for (int r = 0; r < 1300; ++r) {
        const Key ngram = words(c.n);
        std::vector<Entry> row;
        const uint32_t ndocs = rng() % 6 == 0 ? 1 + rng() % 50 : 1 + rng() % 3;
        for (uint32_t i = 0; i < ndocs; ++i) {
          Key k = ngram;
          k.push_back(static_cast<uint32_t>(rng() % D));
          row.push_back({k, count()});
        }
        rows.push_back(row);
      }
      break;
  }
  return rows;
}

class RenderLarge : public ::testing::TestWithParam<LargeCase> {};

TEST_P(RenderLarge, ManyBlocksEqualIndependentBytes) {
  const LargeCase c = GetParam();
  const std::vector<std::string> words = large_words();
  const std::vector<std::string> names = large_names();
  const Dictionary dict = dictionary(words);
  const Dictionary docs = documents(names);
  const uint32_t V = dict.size(), D = static_cast<uint32_t>(docs.size());
  const bool grouped = c.task == Task::kInvertedIndex || c.task == Task::kTermVector ||
                       c.task == Task::kRankedInvertedIndex;
  const uint32_t width = c.task == Task::kWordCount || c.task == Task::kSort ? 1
                         : c.task == Task::kInvertedIndex || c.task == Task::kTermVector
                             ? 2
                             : c.n + 1 - (c.task == Task::kSequenceCount && !c.per_doc ? 1 : 0);
  std::vector<DocId> row_doc;
  const RowEntries rows = large_rows(c, V, D, row_doc, 1000 + static_cast<uint64_t>(c.task));
  ASSERT_GT(rows.size(), 1024u);  // several of the renderer's 512-row blocks

  // Records as the renderer sees them (n-grams rewritten into ranks for c.ranks).
  const SequenceOrder order(dict, c.n);
  RowEntries stored = rows;
  if (c.ranks) {
    ASSERT_FALSE(order.identity());
    const uint32_t off = c.task == Task::kSequenceCount && c.per_doc ? 1 : 0;
    for (auto& row : stored)
      for (auto& [k, count] : row) order.to_ranks(k.data() + off);
  }
  for (bool shuffled : {true, false}) {
    const Built b = build(width, stored, grouped, shuffled, 5 + c.n, row_doc);
    for (OutputFormat fmt : {OutputFormat::kTsv, OutputFormat::kJson, OutputFormat::kNdjson}) {
      for (bool ids : {false, true}) {
        QueryOptions q = query(c.task, c.n, c.per_doc, ids);
        const Expected expected(words, names, q, fmt);
        std::vector<std::string> lines;
        for (size_t r = 0; r < rows.size(); ++r)
          lines.push_back(expected.row(rows[r], grouped && !row_doc.empty() ? row_doc[r] : 0));
        for (bool first_is_start : {true, false}) {
          if (fmt != OutputFormat::kJson && !first_is_start) continue;
          std::string want;
          for (size_t r = 0; r < lines.size(); ++r) {
            if (fmt == OutputFormat::kJson) want += r == 0 && first_is_start ? "[\n" : ",\n";
            want += lines[r];
            if (fmt != OutputFormat::kJson) want += '\n';
          }
          for (unsigned threads : {1u, 4u}) {
            SCOPED_TRACE(::testing::Message()
                         << task_name(c.task) << " n=" << c.n << " per_doc=" << c.per_doc
                         << " ranks=" << c.ranks << " shuffled=" << shuffled
                         << " fmt=" << static_cast<int>(fmt) << " ids=" << ids
                         << " first=" << first_is_start << " threads=" << threads);
            const DocText doc_text(docs, ids, fmt, threads);
            const RenderContext ctx{q, dict, doc_text, fmt, c.ranks ? &order : nullptr};
            const RowRenderer renderer(b.records, b.plan, ctx, first_is_start, threads);
            ASSERT_EQ(renderer.rows(), rows.size());
            ASSERT_EQ(renderer.bytes(), want.size());
            ASSERT_TRUE(renderer.render_all() == want);
            for (uint64_t chunk : {uint64_t{1}, uint64_t{5000}, ~uint64_t{0}}) {
              std::string into(want.size() + 1, '#');  // one byte past the end stays untouched
              uint64_t done = 0;
              renderer.render_into(into.data(), chunk, [&](size_t n) { done += n; });
              ASSERT_EQ(into.back(), '#');
              into.pop_back();
              ASSERT_TRUE(into == want) << "render_into, chunk " << chunk;
              ASSERT_EQ(done, want.size());
            }
            for (uint64_t chunk : {uint64_t{1}, uint64_t{5000}, uint64_t{1} << 16, ~uint64_t{0}}) {
              std::vector<std::string> pieces;
              renderer.render(chunk, [&](const char* p, size_t n) { pieces.emplace_back(p, n); });
              std::string got;
              for (const auto& piece : pieces) got += piece;
              ASSERT_TRUE(got == want) << "chunk " << chunk;
              if (chunk == 1) EXPECT_GE(pieces.size(), 2u);
              if (chunk == ~uint64_t{0}) EXPECT_EQ(pieces.size(), 1u);
              for (size_t i = 0; i < pieces.size(); ++i) {
                ASSERT_FALSE(pieces[i].empty());
                // Pieces hold whole rows.
                if (fmt == OutputFormat::kJson) {
                  if (i > 0 || !first_is_start) EXPECT_EQ(pieces[i].substr(0, 2), ",\n");
                } else {
                  EXPECT_EQ(pieces[i].back(), '\n');
                }
              }
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryTask, RenderLarge,
                         ::testing::Values(LargeCase{Task::kWordCount}, LargeCase{Task::kSort},
                                           LargeCase{Task::kInvertedIndex},
                                           LargeCase{Task::kTermVector},
                                           LargeCase{Task::kSequenceCount, 3},
                                           LargeCase{Task::kSequenceCount, 2, true},
                                           LargeCase{Task::kSequenceCount, 3, false, true},
                                           LargeCase{Task::kSequenceCount, 4, true, true},
                                           LargeCase{Task::kRankedInvertedIndex, 2},
                                           LargeCase{Task::kRankedInvertedIndex, 3, false, true}),
                         [](const ::testing::TestParamInfo<LargeCase>& info) {
                           std::string name = task_name(info.param.task);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name + "_n" + std::to_string(info.param.n) +
                                  (info.param.per_doc ? "_per_doc" : "") +
                                  (info.param.ranks ? "_ranks" : "");
                         });

}  // namespace
}  // namespace gtadoc
