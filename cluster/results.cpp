#include "cluster/results.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <queue>

#include "common/error.h"

namespace gtadoc {

namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class RowBuilder {
 public:
  explicit RowBuilder(const ResultContext& ctx)
      : ctx_(ctx), json_(ctx.format == OutputFormat::kJson) {}

  std::string_view word(WordId w) const { return ctx_.norm.dict[w]; }
  std::string doc_tsv(DocId d) const {
    return ctx_.q.ids ? std::to_string(d) : escape_tsv_name(ctx_.docs[d].name);
  }
  ojson doc_json(DocId d) const { return ctx_.q.ids ? ojson(d) : ojson(ctx_.docs[d].name); }
  std::string joined(const uint32_t* words, uint32_t n) const {
    std::string s;
    for (uint32_t i = 0; i < n; ++i) {
      if (i) s += ' ';
      s += word(words[i]);
    }
    return s;
  }
  bool json() const { return json_; }

 private:
  const ResultContext& ctx_;
  bool json_;
};

/// Indices of records [begin, end) that can be in the top `top` by count (all when top == 0):
/// every record whose count reaches the top-th largest count.
std::vector<size_t> top_candidates(const RecordBatch& r, size_t begin, size_t end, uint64_t top) {
  std::vector<size_t> idx;
  if (top == 0 || end - begin <= top) {
    for (size_t i = begin; i < end; ++i) idx.push_back(i);
    return idx;
  }
  std::vector<uint64_t> counts(r.counts.begin() + begin, r.counts.begin() + end);
  std::nth_element(counts.begin(), counts.begin() + (top - 1), counts.end(),
                   std::greater<uint64_t>());
  uint64_t threshold = counts[top - 1];
  for (size_t i = begin; i < end; ++i)
    if (r.counts[i] >= threshold) idx.push_back(i);
  return idx;
}

void word_rows(const RecordBatch& r, const ResultContext& ctx, bool by_count, RowSink& sink) {
  // Word ids are in byte order of the (normalized) words, so rows order by (~count, id).
  RowBuilder b(ctx);
  std::vector<size_t> idx = top_candidates(r, 0, r.size(), by_count ? ctx.q.top : 0);
  auto less = [&](size_t x, size_t y) {
    if (by_count && r.counts[x] != r.counts[y]) return r.counts[x] > r.counts[y];
    return r.keys[x] < r.keys[y];
  };
  std::sort(idx.begin(), idx.end(), less);
  if (by_count && ctx.q.top > 0 && idx.size() > ctx.q.top) idx.resize(ctx.q.top);
  for (size_t k = 0; k < idx.size(); ++k) {
    size_t i = idx[k];
    OutputRow row;
    std::string_view w = b.word(r.keys[i]);
    row.k1 = by_count ? ~r.counts[i] : r.keys[i];
    row.k2 = r.keys[i];
    if (b.json()) {
      row.text = dump(ojson{{"word", std::string(w)}, {"count", r.counts[i]}});
    } else {
      row.text.reserve(w.size() + 12);
      row.text.append(w);
      row.text += '\t';
      row.text += std::to_string(r.counts[i]);
    }
    sink.add(std::move(row));
  }
}

void inverted_rows(const RecordBatch& r, const ResultContext& ctx, RowSink& sink) {
  RowBuilder b(ctx);
  for (size_t i = 0; i < r.size();) {
    WordId w = r.keys[i * 2];
    OutputRow row;
    row.k1 = w;  // word ids are in byte order
    std::string word(b.word(w));
    ojson docs = ojson::array();
    std::string list;
    for (; i < r.size() && r.keys[i * 2] == w; ++i) {
      DocId d = r.keys[i * 2 + 1];
      if (b.json()) {
        docs.push_back(b.doc_json(d));
      } else {
        if (!list.empty()) list += ',';
        list += b.doc_tsv(d);
      }
    }
    row.text =
        b.json() ? dump(ojson{{"word", word}, {"docs", std::move(docs)}}) : word + '\t' + list;
    sink.add(std::move(row));
  }
  // records are sorted by word id, which is byte order of the words
}

void term_vector_rows(const RecordBatch& r, const ResultContext& ctx, RowSink& sink) {
  RowBuilder b(ctx);
  std::vector<DocId> owned = ctx.owned_docs;
  std::sort(owned.begin(), owned.end());
  size_t i = 0;
  for (DocId d : owned) {
    while (i < r.size() && r.keys[i * 2] < d) ++i;   // records of docs not listed (none expected)
    std::vector<std::pair<uint64_t, WordId>> terms;  // (count, word)
    for (; i < r.size() && r.keys[i * 2] == d; ++i)
      if (r.counts[i] >= ctx.q.min_count) terms.push_back({r.counts[i], r.keys[i * 2 + 1]});
    std::sort(terms.begin(), terms.end(), [](const auto& a, const auto& c) {
      return a.first != c.first ? a.first > c.first : a.second < c.second;
    });
    if (ctx.q.top > 0 && terms.size() > ctx.q.top) terms.resize(ctx.q.top);
    OutputRow row;
    row.k1 = d;
    if (b.json()) {
      ojson arr = ojson::array();
      for (auto& [c, w] : terms)
        arr.push_back(ojson{{"word", std::string(b.word(w))}, {"count", c}});
      row.text = dump(ojson{{"doc", b.doc_json(d)}, {"terms", std::move(arr)}});
    } else {
      row.text = b.doc_tsv(d) + '\t';
      for (size_t t = 0; t < terms.size(); ++t) {
        if (t) row.text += ' ';
        row.text += b.word(terms[t].second);
        row.text += ':';
        row.text += std::to_string(terms[t].first);
      }
    }
    sink.add(std::move(row));
  }
}

/// Orders sequences by their joined bytes using integers only. The joined string is the
/// concatenation of the tokens (w1+' ')...(w_{n-1}+' ') w_n; tokens ending in the only space are
/// prefix-free, so comparing token by token is comparing bytes. Token w+' ' ranks like w unless
/// a word holds a byte below 0x20 (then "a\x01" < "a " while "a" < "a\x01"): only then the ranks
/// of w+' ' are computed by sorting. The last word compares by id (byte order).
class SequenceOrder {
 public:
  SequenceOrder(const Dictionary& dict, uint32_t n) : n_(n) {
    bool low_byte = false;
    for (char c : dict.bytes())
      if (static_cast<unsigned char>(c) < 0x20) {
        low_byte = true;
        break;
      }
    if (!low_byte) return;
    std::vector<WordId> order(dict.size());
    for (WordId w = 0; w < dict.size(); ++w) order[w] = w;
    auto token_less = [&](WordId x, WordId y) {
      std::string_view a = dict[x], b = dict[y];
      size_t m = std::min(a.size(), b.size());
      int c = std::memcmp(a.data(), b.data(), m);
      if (c != 0) return c < 0;
      // One is a prefix of the other: the shorter continues with ' '.
      unsigned char ca = a.size() > m ? static_cast<unsigned char>(a[m]) : ' ';
      unsigned char cb = b.size() > m ? static_cast<unsigned char>(b[m]) : ' ';
      return ca < cb;
    };
    std::sort(order.begin(), order.end(), token_less);
    space_rank_.resize(dict.size());
    for (uint32_t i = 0; i < order.size(); ++i) space_rank_[order[i]] = i;
  }
  /// True when id-tuple order already is joined-bytes order.
  bool identity() const { return space_rank_.empty(); }
  uint32_t rank(const uint32_t* words, uint32_t i) const {
    return (i + 1 == n_ || space_rank_.empty()) ? words[i] : space_rank_[words[i]];
  }
  bool less(const uint32_t* a, const uint32_t* b) const {
    for (uint32_t i = 0; i < n_; ++i) {
      uint32_t x = rank(a, i), y = rank(b, i);
      if (x != y) return x < y;
    }
    return false;
  }
  /// Big-endian ranks: comparing these bytes is comparing the joined strings.
  std::string key(const uint32_t* words) const {
    std::string k(4 * n_, '\0');
    for (uint32_t i = 0; i < n_; ++i) {
      uint32_t v = rank(words, i);
      k[4 * i] = static_cast<char>(v >> 24);
      k[4 * i + 1] = static_cast<char>(v >> 16);
      k[4 * i + 2] = static_cast<char>(v >> 8);
      k[4 * i + 3] = static_cast<char>(v);
    }
    return k;
  }

 private:
  uint32_t n_;
  std::vector<uint32_t> space_rank_;  ///< empty: rank of w+' ' is w
};

void sequence_rows(const RecordBatch& r, const ResultContext& ctx, RowSink& sink) {
  RowBuilder b(ctx);
  const uint32_t n = ctx.q.n;
  const bool per_doc = ctx.q.per_doc;
  const uint32_t off = per_doc ? 1 : 0;
  const SequenceOrder order(ctx.norm.dict, n);
  auto gram = [&](size_t i) { return &r.keys[i * r.width + off]; };
  auto emit_group = [&](size_t begin, size_t end, DocId doc) {
    std::vector<size_t> idx = top_candidates(r, begin, end, ctx.q.top);
    if (order.identity()) {
      // Records arrive sorted by key (reduce_records), which is then sequence order: a stable
      // sort by count keeps it within equal counts.
      std::stable_sort(idx.begin(), idx.end(),
                       [&](size_t x, size_t y) { return r.counts[x] > r.counts[y]; });
    } else {
      std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
        if (r.counts[x] != r.counts[y]) return r.counts[x] > r.counts[y];
        return order.less(gram(x), gram(y));
      });
    }
    if (ctx.q.top > 0 && idx.size() > ctx.q.top) idx.resize(ctx.q.top);
    const std::string doc_text = per_doc && !b.json() ? b.doc_tsv(doc) : std::string();
    for (size_t i : idx) {
      OutputRow row;
      const uint64_t c = r.counts[i];
      if (!sink.direct()) row.key = order.key(gram(i));
      std::string joined = b.joined(gram(i), n);
      if (per_doc) {
        row.k1 = doc;
        row.k2 = ~c;
        if (b.json()) {
          row.text = dump(ojson{{"doc", b.doc_json(doc)}, {"sequence", joined}, {"count", c}});
        } else {
          row.text.reserve(doc_text.size() + joined.size() + 24);
          row.text.append(doc_text).append(1, '\t').append(joined).append(1, '\t');
          row.text += std::to_string(c);
        }
      } else {
        row.k1 = ~c;
        if (b.json()) {
          row.text = dump(ojson{{"sequence", joined}, {"count", c}});
        } else {
          joined += '\t';
          joined += std::to_string(c);
          row.text = std::move(joined);
        }
      }
      sink.add(std::move(row));
    }
  };
  if (!per_doc) {
    emit_group(0, r.size(), 0);
    return;
  }
  for (size_t i = 0; i < r.size();) {
    DocId d = r.keys[i * r.width];
    size_t j = i;
    while (j < r.size() && r.keys[j * r.width] == d) ++j;
    emit_group(i, j, d);
    i = j;
  }
}

void ranked_rows(const RecordBatch& r, const ResultContext& ctx, RowSink& sink) {
  RowBuilder b(ctx);
  const uint32_t n = ctx.q.n;
  const SequenceOrder order(ctx.norm.dict, n);
  // Groups of records with the same n-gram (records are sorted by key, so groups are runs).
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t i = 0; i < r.size();) {
    size_t j = i + 1;
    while (j < r.size() &&
           std::memcmp(&r.keys[j * r.width], &r.keys[i * r.width], n * sizeof(uint32_t)) == 0)
      ++j;
    groups.push_back({i, j});
    i = j;
  }
  std::sort(groups.begin(), groups.end(), [&](const auto& x, const auto& y) {
    return order.less(&r.keys[x.first * r.width], &r.keys[y.first * r.width]);
  });
  std::vector<std::pair<uint64_t, DocId>> postings;
  for (auto [i, j] : groups) {
    const uint32_t* gram = &r.keys[i * r.width];
    postings.clear();
    for (size_t k = i; k < j; ++k) postings.push_back({r.counts[k], r.keys[k * r.width + n]});
    std::sort(postings.begin(), postings.end(), [](const auto& a, const auto& c) {
      return a.first != c.first ? a.first > c.first : a.second < c.second;
    });
    OutputRow row;
    if (!sink.direct()) row.key = order.key(gram);
    std::string joined = b.joined(gram, n);
    if (b.json()) {
      ojson arr = ojson::array();
      for (auto& [c, d] : postings) arr.push_back(ojson{{"doc", b.doc_json(d)}, {"count", c}});
      row.text = dump(ojson{{"sequence", joined}, {"docs", std::move(arr)}});
    } else {
      row.text = std::move(joined);
      row.text += '\t';
      for (size_t p = 0; p < postings.size(); ++p) {
        if (p) row.text += ' ';
        row.text += b.doc_tsv(postings[p].second);
        row.text += ':';
        row.text += std::to_string(postings[p].first);
      }
    }
    sink.add(std::move(row));
  }
}

void put_u64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), 8);
}
uint64_t get_u64(const std::string& in, size_t& pos) {
  if (pos + 8 > in.size()) GTADOC_FAIL("truncated row buffer");
  uint64_t v;
  std::memcpy(&v, in.data() + pos, 8);
  pos += 8;
  return v;
}

}  // namespace

std::string escape_tsv_name(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\\')
      out += "\\\\";
    else
      out += c;
  }
  return out;
}

void RowSink::add(OutputRow&& row) {
  if (!direct_) {
    rows_.push_back(std::move(row));
    return;
  }
  if (format_ == OutputFormat::kJson) {
    out_ += count_ == 0 ? "[\n" : ",\n";
    out_ += row.text;
  } else {
    out_ += row.text;
    out_ += '\n';
  }
  ++count_;
}

std::string RowSink::take_rendered() {
  GTADOC_EXPECTS(direct_, "take_rendered on a sink that keeps rows");
  if (format_ == OutputFormat::kJson) out_ += count_ == 0 ? "[\n]\n" : "\n]\n";
  return std::move(out_);
}

void build_rows(const RecordBatch& reduced, const ResultContext& ctx, RowSink& sink) {
  switch (ctx.q.task) {
    case Task::kWordCount:
      return word_rows(reduced, ctx, true, sink);
    case Task::kSort:
      return word_rows(reduced, ctx, false, sink);
    case Task::kInvertedIndex:
      return inverted_rows(reduced, ctx, sink);
    case Task::kTermVector:
      return term_vector_rows(reduced, ctx, sink);
    case Task::kSequenceCount:
      return sequence_rows(reduced, ctx, sink);
    case Task::kRankedInvertedIndex:
      return ranked_rows(reduced, ctx, sink);
  }
  GTADOC_FAIL("unknown task");
}

std::vector<OutputRow> build_rows(const RecordBatch& reduced, const ResultContext& ctx) {
  RowSink sink(ctx.format, false);
  build_rows(reduced, ctx, sink);
  return sink.take_rows();
}

std::vector<OutputRow> merge_rows(std::vector<std::vector<OutputRow>> parts,
                                  const QueryOptions& q) {
  std::vector<OutputRow> out;
  if (parts.size() == 1) {
    out = std::move(parts[0]);
  } else {
    using Head = std::pair<size_t, size_t>;  // (part, index)
    auto greater = [&](const Head& a, const Head& b) {
      return parts[b.first][b.second] < parts[a.first][a.second];
    };
    std::priority_queue<Head, std::vector<Head>, decltype(greater)> heap(greater);
    size_t total = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      total += parts[p].size();
      if (!parts[p].empty()) heap.push({p, 0});
    }
    out.reserve(total);
    while (!heap.empty()) {
      auto [p, i] = heap.top();
      heap.pop();
      out.push_back(std::move(parts[p][i]));
      if (i + 1 < parts[p].size()) heap.push({p, i + 1});
    }
  }
  bool global_top = q.task == Task::kWordCount || (q.task == Task::kSequenceCount && !q.per_doc);
  if (global_top && q.top > 0 && out.size() > q.top) out.resize(q.top);
  return out;
}

std::string render_rows(const std::vector<OutputRow>& rows, OutputFormat format) {
  size_t bytes = 4;
  for (const auto& r : rows) bytes += r.text.size() + 2;
  std::string out;
  out.reserve(bytes);
  if (format == OutputFormat::kJson) {
    out += "[\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      out += rows[i].text;
      out += i + 1 < rows.size() ? ",\n" : "\n";
    }
    out += "]\n";
  } else {
    for (const auto& r : rows) {
      out += r.text;
      out += '\n';
    }
  }
  return out;
}

std::string serialize_rows(const std::vector<OutputRow>& rows) {
  std::string out;
  put_u64(out, rows.size());
  for (const auto& r : rows) {
    put_u64(out, r.k1);
    put_u64(out, r.k2);
    put_u64(out, r.key.size());
    out += r.key;
    put_u64(out, r.text.size());
    out += r.text;
  }
  return out;
}

std::vector<OutputRow> deserialize_rows(const std::string& bytes) {
  size_t pos = 0;
  std::vector<OutputRow> rows(get_u64(bytes, pos));
  for (auto& r : rows) {
    r.k1 = get_u64(bytes, pos);
    r.k2 = get_u64(bytes, pos);
    uint64_t n = get_u64(bytes, pos);
    if (pos + n > bytes.size()) GTADOC_FAIL("truncated row buffer");
    r.key.assign(bytes, pos, n);
    pos += n;
    n = get_u64(bytes, pos);
    if (pos + n > bytes.size()) GTADOC_FAIL("truncated row buffer");
    r.text.assign(bytes, pos, n);
    pos += n;
  }
  return rows;
}

}  // namespace gtadoc
