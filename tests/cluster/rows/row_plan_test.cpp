// Row plans and rendering (cluster/rows) against a brute-force reference that builds every row
// as a string and orders rows by docs/REFERENCE.md §4 on those strings: random records over a
// dictionary with words that are prefixes of others followed by bytes below 0x20 (where the
// joined-bytes order of sequences differs from the word-id order), ties at the --top cut, documents
// without rows, TSV and JSON, one thread and several; and records put in row order as the GPU does.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cluster/reduce.h"
#include "cluster/rows/render.h"
#include "cluster/rows/row_plan.h"
#include "cluster/rows/sequence_order.h"
#include "tests/testutil/count_order.h"

namespace gtadoc {
namespace {

Dictionary tricky_dictionary(bool low_bytes) {
  std::set<std::string> words = {"a", "ab", "b", "ba", "c", "\xff", "caf\xc3\xa9", "\"q\"", "z\\"};
  if (low_bytes)
    words.insert({"a\x01",
                  "a\x01"
                  "b",
                  "\x01", "b\x1f", "b\x1f\x01"});
  Dictionary d;
  for (const auto& w : words) d.push_back(w);
  return d;
}

Dictionary documents(uint32_t n) {
  Dictionary docs;
  for (uint32_t i = 0; i < n; ++i)
    docs.push_back("d" + std::to_string(1000 + i) + (i % 3 ? "" : "\tx"));
  return docs;
}

/// Unique random keys of `width` values (words < V, a document < D at `doc_at`), counts 1..4.
RecordBatch random_records(std::mt19937& rng, size_t n, uint32_t width, uint32_t V, uint32_t D,
                           int doc_at) {
  std::set<std::vector<uint32_t>> keys;
  while (keys.size() < n) {
    std::vector<uint32_t> k(width);
    for (uint32_t c = 0; c < width; ++c)
      k[c] = static_cast<int>(c) == doc_at ? rng() % D : rng() % V;
    keys.insert(k);
  }
  RecordBatch r;
  r.width = width;
  for (const auto& k : keys) r.push(k, rng() % 4 + 1);
  std::shuffle(r.counts.begin(), r.counts.end(), rng);  // counts independent of key order
  return r;
}

std::string joined(const Dictionary& d, const uint32_t* w, uint32_t n) {
  std::string s;
  for (uint32_t i = 0; i < n; ++i) s += (i ? " " : "") + std::string(d[w[i]]);
  return s;
}
std::string tsv_doc(const Dictionary& docs, DocId d, bool ids) {
  if (ids) return std::to_string(d);
  std::string out;
  for (char c : docs[d]) out += c == '\t' ? std::string("\\t") : std::string(1, c);
  return out;
}
std::string json_text(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// The reference result bytes for records `r` (any order, unique keys), built from strings.
std::string reference(const RecordBatch& r, const QueryOptions& q, const Dictionary& dict,
                      const Dictionary& docs, OutputFormat fmt) {
  const bool json = fmt == OutputFormat::kJson;
  std::vector<std::string> lines;
  auto key = [&](size_t i) { return &r.keys[i * r.width]; };
  auto doc_json = [&](DocId d) {
    return q.ids ? std::to_string(d) : json_text(std::string(docs[d]));
  };
  if (q.task == Task::kWordCount) {
    std::vector<std::tuple<uint64_t, std::string>> rows;  // (~count, word)
    for (size_t i = 0; i < r.size(); ++i)
      rows.push_back({~r.counts[i], std::string(dict[key(i)[0]])});
    std::sort(rows.begin(), rows.end());
    if (q.top && rows.size() > q.top) rows.resize(q.top);
    for (auto& [c, w] : rows)
      lines.push_back(json ? "{\"word\":" + json_text(w) + ",\"count\":" + std::to_string(~c) + "}"
                           : w + "\t" + std::to_string(~c));
  } else if (q.task == Task::kSequenceCount) {
    const uint32_t off = q.per_doc ? 1 : 0;
    std::vector<std::tuple<DocId, uint64_t, std::string>> rows;  // (doc, ~count, joined)
    for (size_t i = 0; i < r.size(); ++i)
      rows.push_back({q.per_doc ? key(i)[0] : 0, ~r.counts[i], joined(dict, key(i) + off, q.n)});
    std::sort(rows.begin(), rows.end());
    std::map<DocId, uint64_t> taken;
    for (auto& [d, c, s] : rows) {
      if (q.top && taken[d]++ >= q.top) continue;
      if (json)
        lines.push_back(std::string("{") + (q.per_doc ? "\"doc\":" + doc_json(d) + "," : "") +
                        "\"sequence\":" + json_text(s) + ",\"count\":" + std::to_string(~c) + "}");
      else
        lines.push_back((q.per_doc ? tsv_doc(docs, d, q.ids) + "\t" : "") + s + "\t" +
                        std::to_string(~c));
    }
  } else if (q.task == Task::kRankedInvertedIndex) {
    std::map<std::string, std::vector<std::pair<uint64_t, DocId>>> groups;  // joined -> (~c, doc)
    for (size_t i = 0; i < r.size(); ++i)
      groups[joined(dict, key(i), q.n)].push_back({~r.counts[i], key(i)[q.n]});
    for (auto& [s, post] : groups) {
      std::sort(post.begin(), post.end());
      std::string line = json ? "{\"sequence\":" + json_text(s) + ",\"docs\":[" : s + "\t";
      for (size_t p = 0; p < post.size(); ++p) {
        if (json)
          line += std::string(p ? "," : "") + "{\"doc\":" + doc_json(post[p].second) +
                  ",\"count\":" + std::to_string(~post[p].first) + "}";
        else
          line += std::string(p ? " " : "") + tsv_doc(docs, post[p].second, q.ids) + ":" +
                  std::to_string(~post[p].first);
      }
      lines.push_back(json ? line + "]}" : line);
    }
  } else if (q.task == Task::kTermVector) {
    std::map<DocId, std::vector<std::pair<uint64_t, std::string>>> terms;
    for (size_t i = 0; i < r.size(); ++i)
      if (r.counts[i] >= q.min_count)
        terms[key(i)[0]].push_back({~r.counts[i], std::string(dict[key(i)[1]])});
    for (DocId d = 0; d < docs.size(); ++d) {
      auto t = terms[d];
      std::sort(t.begin(), t.end());
      if (q.top && t.size() > q.top) t.resize(q.top);
      std::string line =
          json ? "{\"doc\":" + doc_json(d) + ",\"terms\":[" : tsv_doc(docs, d, q.ids) + "\t";
      for (size_t p = 0; p < t.size(); ++p)
        line += json ? std::string(p ? "," : "") + "{\"word\":" + json_text(t[p].second) +
                           ",\"count\":" + std::to_string(~t[p].first) + "}"
                     : std::string(p ? " " : "") + t[p].second + ":" + std::to_string(~t[p].first);
      lines.push_back(json ? line + "]}" : line);
    }
  } else if (q.task == Task::kInvertedIndex) {
    std::map<std::string, std::vector<DocId>> postings;
    for (size_t i = 0; i < r.size(); ++i)
      postings[std::string(dict[key(i)[0]])].push_back(key(i)[1]);
    for (auto& [w, ds] : postings) {
      std::sort(ds.begin(), ds.end());
      std::string line = json ? "{\"word\":" + json_text(w) + ",\"docs\":[" : w + "\t";
      for (size_t p = 0; p < ds.size(); ++p)
        line += std::string(p ? "," : "") + (json ? doc_json(ds[p]) : tsv_doc(docs, ds[p], q.ids));
      lines.push_back(json ? line + "]}" : line);
    }
  }
  std::string out;
  if (json) {
    out = "[\n";
    for (size_t i = 0; i < lines.size(); ++i)
      out += lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
    return out + "]\n";
  }
  for (const auto& l : lines) out += l + "\n";
  return out;
}

/// `rank_keys`: sequence n-grams rewritten into ranks first (as gtadoc run does when the order
/// is not the word-id order), planned in integer order and mapped back by the renderer.
/// `gpu_ordered`: for tasks with a count_order_group, the reduced records are put in row order
/// as the GPU does (DeviceRecords::order_by_count, its host reference) and planned by
/// plan_ordered_rows instead of plan_rows.
std::string rendered(RecordBatch r, const QueryOptions& q, const Dictionary& dict,
                     const Dictionary& docs, OutputFormat fmt, unsigned threads, bool rank_keys,
                     bool gpu_ordered = false) {
  const SequenceOrder words(dict, q.n, threads);
  const bool ranked = rank_keys && is_sequence_task(q.task) && !words.identity();
  if (ranked) {
    const uint32_t off = q.task == Task::kSequenceCount && q.per_doc ? 1 : 0;
    for (size_t i = 0; i < r.size(); ++i) words.to_ranks(r.keys.data() + i * r.width + off);
  }
  const SequenceOrder order = ranked ? SequenceOrder::of_ranks(q.n) : words;
  reduce_records(r, threads);
  const RowPlanContext ctx{q, &order, 0, static_cast<DocId>(docs.size()), threads};
  RowPlan plan;
  if (gpu_ordered) {
    r = testutil::order_by_count(r, *count_order_group(q), count_ordered(q) ? q.top : 0);
    plan = plan_ordered_rows(r, q, &order, threads);
  } else {
    plan = plan_rows(r, ctx);
  }
  const DocText doc_text(docs, q.ids, fmt, threads);
  const RenderContext rc{q, dict, doc_text, fmt, ranked ? &words : nullptr};
  const RowRenderer renderer(r, plan, rc, true, threads);
  std::string out;
  renderer.render(97, [&](const char* p, size_t n) { out.append(p, n); });  // many small chunks
  out += json_trailer(fmt, plan.rows());
  EXPECT_EQ(out, renderer.render_all() + std::string(json_trailer(fmt, plan.rows())));
  return out;
}

struct Case {
  Task task;
  uint32_t n;
  bool per_doc;
  uint64_t top, min_count;
};

TEST(RowPlan, EqualsStringReferenceForEveryTask) {
  std::mt19937 rng(2024);
  const std::vector<Case> cases = {
      {Task::kWordCount, 3, false, 0, 1},           {Task::kWordCount, 3, false, 3, 1},
      {Task::kSequenceCount, 2, false, 0, 1},       {Task::kSequenceCount, 3, false, 5, 1},
      {Task::kSequenceCount, 2, true, 2, 1},        {Task::kSequenceCount, 3, true, 0, 1},
      {Task::kRankedInvertedIndex, 2, false, 0, 1}, {Task::kRankedInvertedIndex, 3, false, 0, 1},
      {Task::kTermVector, 3, false, 2, 1},          {Task::kTermVector, 3, false, 0, 3},
      {Task::kInvertedIndex, 3, false, 0, 1},
  };
  const Dictionary docs = documents(7);
  for (bool low : {false, true}) {
    const Dictionary dict = tricky_dictionary(low);
    const uint32_t V = dict.size(), D = static_cast<uint32_t>(docs.size());
    EXPECT_EQ(SequenceOrder(dict, 3).identity(), !low);
    for (const Case& c : cases) {
      QueryOptions q;
      q.task = c.task;
      q.n = c.n;
      q.per_doc = c.per_doc;
      q.top = c.top;
      q.min_count = c.min_count;
      const KeyLayout layout = key_layout(q);
      int doc_at = -1;
      if (c.task == Task::kInvertedIndex) doc_at = 1;
      if (c.task == Task::kTermVector || (c.task == Task::kSequenceCount && c.per_doc)) doc_at = 0;
      if (c.task == Task::kRankedInvertedIndex) doc_at = static_cast<int>(c.n);
      for (size_t n : {size_t{0}, size_t{1}, size_t{33}, size_t{300}}) {
        size_t space = 1;  // distinct keys there are
        for (uint32_t k = 0; k < layout.width; ++k) space *= static_cast<int>(k) == doc_at ? D : V;
        n = std::min(n, space / 2);
        const RecordBatch r = random_records(rng, n, layout.width, V, D, doc_at);
        for (OutputFormat fmt : {OutputFormat::kTsv, OutputFormat::kJson})
          for (bool ids : {false, true}) {
            q.ids = ids;
            const std::string want = reference(r, q, dict, docs, fmt);
            for (unsigned threads : {1u, 3u})
              for (bool rank_keys : {false, true})
                for (bool gpu_ordered : {false, true}) {
                  // The pipeline orders on the GPU only keys in output order (identity, or
                  // rewritten into ranks).
                  if (gpu_ordered && (!count_order_group(q) ||
                                      (!rank_keys && !SequenceOrder(dict, q.n).identity())))
                    continue;
                  ASSERT_EQ(rendered(r, q, dict, docs, fmt, threads, rank_keys, gpu_ordered), want)
                      << task_name(c.task) << " n=" << c.n << " per_doc=" << c.per_doc
                      << " top=" << c.top << " records=" << n << " low=" << low
                      << " json=" << (fmt == OutputFormat::kJson) << " ids=" << ids
                      << " rank_keys=" << rank_keys << " gpu_ordered=" << gpu_ordered;
                }
          }
      }
    }
  }
}

TEST(RowPlan, RankedPostingsOfEveryRowLength) {
  // Rows of 1 to 80 postings (short rows and long ones take different sorts), counts with ties:
  // postings by count desc, then document asc; rows in the n-grams' order.
  std::mt19937 rng(7);
  QueryOptions q;
  q.task = Task::kRankedInvertedIndex;
  q.n = 2;
  RecordBatch r;
  r.width = 3;
  std::vector<std::pair<uint64_t, uint64_t>> want_rows;  // [begin, end) of each row's records
  for (uint32_t len = 1; len <= 80; ++len) {
    const uint64_t b = r.size();
    for (uint32_t d = 0; d < len; ++d)
      r.push(std::vector<uint32_t>{len / 9, len, static_cast<uint32_t>(10 * d + rng() % 10)},
             rng() % (len % 5 + 1) + 1);
    want_rows.push_back({b, r.size()});
  }
  const SequenceOrder ids = SequenceOrder::of_ranks(2);
  for (unsigned threads : {1u, 3u}) {
    const RowPlan plan = plan_rows(r, RowPlanContext{q, &ids, 0, 0, threads});
    ASSERT_EQ(plan.rows(), want_rows.size());
    for (uint64_t row = 0; row < plan.rows(); ++row) {
      std::vector<uint64_t> want;
      for (uint64_t i = want_rows[row].first; i < want_rows[row].second; ++i) want.push_back(i);
      std::stable_sort(want.begin(), want.end(),
                       [&](uint64_t x, uint64_t y) { return r.counts[x] > r.counts[y]; });
      const auto [b, e] = plan.row_range(row);
      std::vector<uint64_t> got;
      for (uint64_t p = b; p < e; ++p) got.push_back(plan.record_at(p));
      ASSERT_EQ(got, want) << "row " << row << ", " << threads << " threads";
    }
  }
}

TEST(RowPlan, TruncateKeepsAPrefix) {
  QueryOptions q;
  q.task = Task::kInvertedIndex;
  RecordBatch r;
  r.width = 2;
  for (uint32_t w = 0; w < 5; ++w)
    for (uint32_t d = 0; d <= w; ++d) r.push(std::vector<uint32_t>{w, d}, 1);
  RowPlan plan = plan_rows(r, RowPlanContext{q, nullptr, 0, 0, 1});
  ASSERT_EQ(plan.rows(), 5u);
  plan.truncate(2);
  EXPECT_EQ(plan.rows(), 2u);
  EXPECT_EQ(plan.row_range(1), (std::pair<uint64_t, uint64_t>{1, 3}));
  plan.truncate(9);
  EXPECT_EQ(plan.rows(), 2u);
}

}  // namespace
}  // namespace gtadoc
