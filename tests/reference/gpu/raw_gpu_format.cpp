// Host half of the raw-text GPU baseline: the output bytes of docs/OUTPUT.md from rows that the
// device has already put in output order, plus the small planning helpers. No CUDA here, so
// all of it is unit-tested on machines without a GPU.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tests/reference/gpu/raw_gpu.cuh"
#include "tests/reference/raw_reference.h"

namespace gtadoc::rawgpu {

namespace {

bool name_less(std::string_view a, std::string_view b) {
  const size_t common = std::min(a.size(), b.size());
  const int c = common == 0 ? 0 : std::memcmp(a.data(), b.data(), common);
  return c != 0 ? c < 0 : a.size() < b.size();
}

/// Appends rows and frames them: TSV rows end with '\n'; JSON is "[\n", rows separated by
/// ",\n", then "\n]\n" ("[\n]\n" when there is no row).
class Emitter {
 public:
  explicit Emitter(bool json) : json_(json) {
    if (json_) out_ = "[\n";
  }
  bool json() const { return json_; }
  std::string& begin_row() {
    if (json_ && rows_ > 0) out_ += ",\n";
    return out_;
  }
  void end_row() {
    if (!json_) out_ += '\n';
    ++rows_;
  }
  std::string finish() {
    if (!json_) return std::move(out_);
    if (rows_ == 0) return "[\n]\n";
    out_ += "\n]\n";
    return std::move(out_);
  }

 private:
  bool json_;
  std::string out_;
  uint64_t rows_ = 0;
};

/// Per-output caches of the document and word fields in the chosen format.
class Fields {
 public:
  Fields(const std::vector<std::string_view>& names, const std::vector<std::string>& words,
         const QueryOptions& q, bool json)
      : names_(names), words_(words), ids_(q.ids), json_(json) {}

  /// TSV: escaped name or decimal id; JSON: name as a JSON string or id as a number.
  const std::string& doc(uint32_t d) {
    if (docs_.empty()) {
      docs_.resize(names_.size());
      have_doc_.assign(names_.size(), false);
    }
    if (!have_doc_[d]) {
      if (ids_) {
        docs_[d] = std::to_string(d);
      } else {
        docs_[d] = json_ ? json_string(names_[d]) : tsv_doc_name(names_[d]);
      }
      have_doc_[d] = true;
    }
    return docs_[d];
  }
  /// TSV: the word's bytes; JSON: the word as a JSON string.
  const std::string& word(uint32_t w) {
    if (!json_) return words_[w];
    if (json_words_.empty()) {
      json_words_.resize(words_.size());
      have_word_.assign(words_.size(), false);
    }
    if (!have_word_[w]) {
      json_words_[w] = json_string(words_[w]);
      have_word_[w] = true;
    }
    return json_words_[w];
  }
  /// The words w[0..n) joined by one space; as a JSON string in JSON.
  std::string sequence(const uint32_t* w, uint32_t n) const {
    std::string joined = words_[w[0]];
    for (uint32_t k = 1; k < n; ++k) {
      joined += ' ';
      joined += words_[w[k]];
    }
    return json_ ? json_string(joined) : joined;
  }

 private:
  const std::vector<std::string_view>& names_;
  const std::vector<std::string>& words_;
  bool ids_;
  bool json_;
  std::vector<std::string> docs_, json_words_;
  std::vector<bool> have_doc_, have_word_;
};

uint64_t cut(uint64_t top, uint64_t size) {
  return top != 0 && top < size ? top : size;
}

void append_count(std::string& out, uint64_t count) {
  out += std::to_string(count);
}

}  // namespace

std::string json_string(std::string_view s) {
  // Printable ASCII without '"' and '\\' is written as is by nlohmann; anything else (control
  // bytes, DEL, non-ASCII, invalid UTF-8) goes through nlohmann itself, so the bytes are exact.
  bool plain = true;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    out += s;
    out += '"';
    return out;
  }
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string tsv_doc_name(std::string_view name) {
  return rawref::escape_tsv_name(name);
}

std::vector<size_t> sorted_doc_order(const std::vector<RawDocument>& docs) {
  std::vector<size_t> order(docs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return name_less(docs[a].name, docs[b].name); });
  return order;
}

std::vector<KeyChunk> plan_key_chunks(const std::vector<int>& field_bits) {
  std::vector<KeyChunk> chunks;
  int last = static_cast<int>(field_bits.size()) - 1;
  while (last >= 0) {
    KeyChunk c;
    c.last = last;
    c.first = last;
    c.bits = field_bits[last];
    GTADOC_EXPECTS(c.bits >= 1 && c.bits <= 32, "key field width out of range");
    while (c.first > 0 && c.bits + field_bits[c.first - 1] <= 64) {
      --c.first;
      c.bits += field_bits[c.first];
      GTADOC_EXPECTS(field_bits[c.first] >= 1 && field_bits[c.first] <= 32,
                     "key field width out of range");
    }
    chunks.push_back(c);
    last = c.first - 1;
  }
  return chunks;
}

std::string format_output(const std::vector<std::string_view>& doc_names,
                          const std::vector<std::string>& words, const Rows& rows,
                          const QueryOptions& q, OutputFormat format) {
  const bool json = format == OutputFormat::kJson;
  Emitter em(json);
  Fields f(doc_names, words, q, json);
  const uint32_t width = rows.width;
  const uint64_t nrows = rows.size();
  GTADOC_EXPECTS(rows.counts.size() >= nrows || q.task == Task::kInvertedIndex,
                 "rows without counts");
  auto field = [&](uint64_t r, uint32_t k) { return rows.fields[r * width + k]; };
  const uint32_t n = q.n;

  switch (q.task) {
    case Task::kWordCount:
    case Task::kSort: {
      const uint64_t limit = q.task == Task::kWordCount ? cut(q.top, nrows) : nrows;
      for (uint64_t r = 0; r < limit; ++r) {
        std::string& out = em.begin_row();
        if (json) {
          out += "{\"word\":";
          out += f.word(field(r, 0));
          out += ",\"count\":";
          append_count(out, rows.counts[r]);
          out += '}';
        } else {
          out += f.word(field(r, 0));
          out += '\t';
          append_count(out, rows.counts[r]);
        }
        em.end_row();
      }
      break;
    }
    case Task::kInvertedIndex: {
      for (uint64_t r = 0; r < nrows;) {
        const uint32_t w = field(r, 0);
        std::string& out = em.begin_row();
        if (json) out += "{\"word\":";
        out += f.word(w);
        out += json ? ",\"docs\":[" : "\t";
        for (const uint64_t begin = r; r < nrows && field(r, 0) == w; ++r) {
          if (r != begin) out += ',';
          out += f.doc(field(r, 1));
        }
        if (json) out += "]}";
        em.end_row();
      }
      break;
    }
    case Task::kTermVector: {
      uint64_t r = 0;
      for (uint32_t d = 0; d < doc_names.size(); ++d) {
        const uint64_t begin = r;
        while (r < nrows && field(r, 0) == d) ++r;
        std::string& out = em.begin_row();
        if (json) {
          out += "{\"doc\":";
          out += f.doc(d);
          out += ",\"terms\":[";
        } else {
          out += f.doc(d);
          out += '\t';
        }
        uint64_t kept = 0;
        for (uint64_t s = begin; s < r; ++s) {
          if (rows.counts[s] < q.min_count) continue;  // --min-count first,
          if (q.top != 0 && kept == q.top) break;      // then --top of what is left
          if (kept > 0) out += json ? "," : " ";
          if (json) {
            out += "{\"word\":";
            out += f.word(field(s, 1));
            out += ",\"count\":";
            append_count(out, rows.counts[s]);
            out += '}';
          } else {
            out += f.word(field(s, 1));
            out += ':';
            append_count(out, rows.counts[s]);
          }
          ++kept;
        }
        if (json) out += "]}";
        em.end_row();
      }
      GTADOC_EXPECTS(r == nrows, "term-vector rows out of document order");
      break;
    }
    case Task::kSequenceCount: {
      if (!q.per_doc) {
        const uint64_t limit = cut(q.top, nrows);
        for (uint64_t r = 0; r < limit; ++r) {
          std::string& out = em.begin_row();
          if (json) {
            out += "{\"sequence\":";
            out += f.sequence(&rows.fields[r * width], n);
            out += ",\"count\":";
            append_count(out, rows.counts[r]);
            out += '}';
          } else {
            out += f.sequence(&rows.fields[r * width], n);
            out += '\t';
            append_count(out, rows.counts[r]);
          }
          em.end_row();
        }
        break;
      }
      uint64_t in_doc = 0;
      for (uint64_t r = 0; r < nrows; ++r) {
        const uint32_t d = field(r, 0);
        in_doc = (r > 0 && field(r - 1, 0) == d) ? in_doc + 1 : 0;
        if (q.top != 0 && in_doc >= q.top) continue;
        std::string& out = em.begin_row();
        if (json) {
          out += "{\"doc\":";
          out += f.doc(d);
          out += ",\"sequence\":";
          out += f.sequence(&rows.fields[r * width + 1], n);
          out += ",\"count\":";
          append_count(out, rows.counts[r]);
          out += '}';
        } else {
          out += f.doc(d);
          out += '\t';
          out += f.sequence(&rows.fields[r * width + 1], n);
          out += '\t';
          append_count(out, rows.counts[r]);
        }
        em.end_row();
      }
      break;
    }
    case Task::kRankedInvertedIndex: {
      auto same_sequence = [&](uint64_t a, uint64_t b) {
        return std::equal(&rows.fields[a * width], &rows.fields[a * width] + n,
                          &rows.fields[b * width]);
      };
      for (uint64_t r = 0; r < nrows;) {
        const uint64_t begin = r;
        while (r < nrows && same_sequence(begin, r)) ++r;
        std::string& out = em.begin_row();
        if (json) {
          out += "{\"sequence\":";
          out += f.sequence(&rows.fields[begin * width], n);
          out += ",\"docs\":[";
        } else {
          out += f.sequence(&rows.fields[begin * width], n);
          out += '\t';
        }
        for (uint64_t s = begin; s < r; ++s) {
          if (json) {
            if (s != begin) out += ',';
            out += "{\"doc\":";
            out += f.doc(field(s, n));
            out += ",\"count\":";
            append_count(out, rows.counts[s]);
            out += '}';
          } else {
            if (s != begin) out += ' ';
            out += f.doc(field(s, n));
            out += ':';
            append_count(out, rows.counts[s]);
          }
        }
        if (json) out += "]}";
        em.end_row();
      }
      break;
    }
  }
  return em.finish();
}

}  // namespace gtadoc::rawgpu
