#include "coordinator/search/phrase_search.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "cluster/comm.h"
#include "cluster/rows/text_format.h"
#include "common/error.h"
#include "common/parallel.h"
#include "coordinator/pipeline/query_spec.h"
#include "formats/document_text.h"

namespace gtadoc {

namespace {

void append_tsv_name(std::string& out, std::string_view name) {
  const size_t at = out.size();
  out.resize(at + tsv_escaped_size(name));
  write_tsv_escaped(name, out.data() + at);
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  const size_t at = out.size();
  out.resize(at + json_escaped_size(s));
  write_json_escaped(s, out.data() + at);
  out += '"';
}

/// A document as a row names it: id, or name (TSV-escaped, or a JSON string).
void append_doc(std::string& out, const Manifest& m, DocId d, bool ids, bool json) {
  if (ids)
    out += std::to_string(d);
  else if (json)
    append_json_string(out, m.doc_names[d]);
  else
    append_tsv_name(out, m.doc_names[d]);
}

/// Rows joined as docs/OUTPUT.md frames them: TSV and NDJSON rows end with a newline; JSON is
/// an array with one object per line.
class RowWriter {
 public:
  explicit RowWriter(OutputFormat format) : array_(format == OutputFormat::kJson) {
    if (array_) out_ = "[\n";
  }
  /// The row being written: append to the returned string, then call end_row().
  std::string& row() {
    if (array_ && rows_ != 0) out_ += ",\n";
    ++rows_;
    return out_;
  }
  void end_row() {
    if (!array_) out_ += '\n';
  }
  void raw_row(const std::string& bytes) {
    row() += bytes;
    end_row();
  }
  std::string finish() {
    if (array_) out_ += rows_ != 0 ? "\n]\n" : "]\n";
    return std::move(out_);
  }

 private:
  bool array_;
  uint64_t rows_ = 0;
  std::string out_;
};

void put_u64(std::vector<uint8_t>& b, uint64_t v) {
  const size_t at = b.size();
  b.resize(at + 8);
  std::memcpy(b.data() + at, &v, 8);
}

struct Reader {
  const std::vector<uint8_t>& b;
  size_t at = 0;
  uint64_t u64() {
    if (at + 8 > b.size()) throw InternalError("search hits: message truncated");
    uint64_t v;
    std::memcpy(&v, b.data() + at, 8);
    at += 8;
    return v;
  }
  std::string bytes(uint64_t n) {
    if (n > b.size() - at) throw InternalError("search hits: message truncated");
    std::string s(reinterpret_cast<const char*>(b.data() + at), n);
    at += n;
    return s;
  }
};

std::vector<uint8_t> serialize(const SearchHits& h) {
  std::vector<uint8_t> b;
  put_u64(b, h.docs.size());
  for (DocId d : h.docs) put_u64(b, d);
  put_u64(b, h.counts.size());
  for (Count c : h.counts) put_u64(b, c);
  put_u64(b, h.lines.size());
  for (const auto& rows : h.lines) {
    put_u64(b, rows.size());
    for (const std::string& r : rows) {
      put_u64(b, r.size());
      b.insert(b.end(), r.begin(), r.end());
    }
  }
  return b;
}

SearchHits deserialize(const std::vector<uint8_t>& b) {
  Reader r{b};
  SearchHits h;
  h.docs.resize(r.u64());
  for (DocId& d : h.docs) d = static_cast<DocId>(r.u64());
  h.counts.resize(r.u64());
  for (Count& c : h.counts) c = r.u64();
  h.lines.resize(r.u64());
  for (auto& rows : h.lines) {
    rows.resize(r.u64());
    for (std::string& row : rows) row = r.bytes(r.u64());
  }
  return h;
}

}  // namespace

PreparedSearch prepare_search(const SearchSpec& spec, const Normalization& norm) {
  validate_search(spec);
  PreparedSearch p;
  p.spec = spec;
  for (size_t i = 0; i < spec.phrases.size(); ++i) {
    const std::vector<std::string> words =
        phrase_words(spec.phrases[i], spec.lowercase, spec.alnum, i + 1);
    std::string printed;
    for (const std::string& w : words) printed += (printed.empty() ? "" : " ") + w;
    p.printed.push_back(std::move(printed));
    p.phrases.push_back(lookup_phrase(words, norm));
  }
  return p;
}

void SearchHits::append(SearchHits&& other) {
  docs.insert(docs.end(), other.docs.begin(), other.docs.end());
  counts.insert(counts.end(), other.counts.begin(), other.counts.end());
  for (auto& rows : other.lines) lines.push_back(std::move(rows));
}

SearchHits search_grammar(const ShardGrammar& g, const ShardSearchIndex* index,
                          const PreparedSearch& search, const Normalization& norm) {
  const size_t m = search.phrases.size();
  // Document -> its count of each phrase, for the documents holding at least one.
  std::map<DocId, std::vector<Count>> found;
  for (size_t j = 0; j < m; ++j) {
    if (!search.spec.any && j != 0 && found.empty()) break;  // --all: nothing can be selected
    const std::vector<DocCount> counts = index != nullptr
                                             ? count_phrase(g, *index, search.phrases[j], norm,
                                                            search.full_pass_share)
                                             : count_phrase(g, search.phrases[j], norm);
    for (const DocCount& dc : counts) {
      auto [it, fresh] = found.try_emplace(dc.doc);
      if (fresh) it->second.assign(m, 0);
      it->second[j] = dc.count;
    }
  }
  SearchHits h;
  for (const auto& [doc, counts] : found) {
    const bool selected = search.spec.any || std::all_of(counts.begin(), counts.end(),
                                                         [](Count c) { return c != 0; });
    if (!selected) continue;
    h.docs.push_back(doc);
    h.counts.insert(h.counts.end(), counts.begin(), counts.end());
  }
  return h;
}

void add_line_rows(const std::filesystem::path& archive, const Manifest& manifest, uint32_t shard,
                   const ShardGrammar& g, const PreparedSearch& search, const Normalization& norm,
                   SearchHits& hits) {
  hits.lines.resize(hits.docs.size());
  if (hits.docs.empty()) return;
  const ShardEntry& e = manifest.shards.at(shard);
  const ShardLayout layout = read_shard_layout(archive, manifest, shard);
  const std::vector<uint64_t> gap_at = document_gap_starts(manifest, shard);
  // Newlines in each whitespace run.
  std::vector<uint64_t> newlines(layout.ws_dict.size());
  for (size_t i = 0; i < layout.ws_dict.size(); ++i)
    newlines[i] = static_cast<uint64_t>(
        std::count(layout.ws_dict[i].begin(), layout.ws_dict[i].end(), '\n'));
  const bool json = search.spec.format != OutputFormat::kTsv;
  std::vector<WordId> words;
  std::string text;
  for (size_t h = 0; h < hits.docs.size(); ++h) {
    const DocId d = hits.docs[h];
    if (d < g.first_doc || d >= g.first_doc + g.num_docs || d < e.first_doc ||
        d >= e.first_doc + e.num_docs)
      throw InternalError("search: document outside the grammar searched");
    words.clear();
    expand_document(g, d - g.first_doc, words);  // g may be a piece: not expand_checked
    const uint64_t first = gap_at[d - e.first_doc], n = words.size();
    if (n != manifest.docs[d].words || first + n + 1 > layout.gaps.size())
      throw InputError(document_what(archive, manifest, d) + ": its words or gaps differ from "
                       "the manifest's (corrupted archive)");
    // The text (its gaps and size checked first), and the line of each word.
    const std::span<const uint32_t> gaps(layout.gaps.data() + first, n + 1);
    DocumentText doc(archive, manifest, d, layout.ws_dict, words, gaps);
    text.clear();
    doc.append(0, doc.size(), text);
    std::vector<uint64_t> line_start{0};
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') line_start.push_back(i + 1);
    std::vector<uint64_t> line_of(n);
    for (uint64_t k = 0, line = 1; k < n; ++k) line_of[k] = line += newlines[gaps[k]];
    // Every line from an occurrence's first word's to its last word's, once, in order.
    std::vector<uint64_t> lines;
    for (const Occurrence& o : locate_phrases(words, search.phrases, norm))
      for (uint64_t l = line_of[o.first]; l <= line_of[o.last]; ++l) lines.push_back(l);
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
    for (uint64_t l : lines) {
      const uint64_t begin = line_start[l - 1];
      const uint64_t end = l < line_start.size() ? line_start[l] - 1 : text.size();
      const std::string_view body(text.data() + begin, end - begin);
      std::string row;
      if (json) {
        row += "{\"doc\":";
        append_doc(row, manifest, d, search.spec.ids, true);
        row += ",\"line\":";
        row += std::to_string(l);
        row += ",\"text\":";
        append_json_string(row, body);
        row += '}';
      } else {
        append_doc(row, manifest, d, search.spec.ids, false);
        row += ':';
        row += std::to_string(l);
        row += ':';
        row += body;
      }
      hits.lines[h].push_back(std::move(row));
    }
  }
}

SearchHits search_grammars(const std::filesystem::path& archive, const Manifest& manifest,
                           std::vector<SearchTarget> targets, const PreparedSearch& search,
                           const Normalization& norm, unsigned threads) {
  std::sort(targets.begin(), targets.end(), [](const SearchTarget& a, const SearchTarget& b) {
    return a.grammar->first_doc < b.grammar->first_doc;
  });
  std::vector<SearchHits> each(targets.size());
  parallel_for(targets.size(), threads, [&](size_t i) {
    const SearchTarget& t = targets[i];
    each[i] = search_grammar(*t.grammar, t.index, search, norm);
    if (search.spec.mode == SearchSpec::Mode::kLines)
      add_line_rows(archive, manifest, t.shard, *t.grammar, search, norm, each[i]);
  });
  SearchHits all;
  for (SearchHits& h : each) all.append(std::move(h));
  return all;
}

std::string render_search(const Manifest& manifest, const PreparedSearch& search,
                          const SearchHits& hits) {
  const bool json = search.spec.format != OutputFormat::kTsv;
  const size_t m = search.phrases.size();
  RowWriter out(search.spec.format);
  switch (search.spec.mode) {
    case SearchSpec::Mode::kDocs:
      for (size_t i = 0; i < hits.docs.size(); ++i) {
        std::string& row = out.row();
        if (json) row += "{\"doc\":";
        append_doc(row, manifest, hits.docs[i], search.spec.ids, json);
        if (json) {
          row += m == 1 ? ",\"count\":" : ",\"counts\":[";
          for (size_t j = 0; j < m; ++j) {
            if (j != 0) row += ',';
            row += std::to_string(hits.counts[i * m + j]);
          }
          row += m == 1 ? "}" : "]}";
        } else {
          for (size_t j = 0; j < m; ++j) {
            row += '\t';
            row += std::to_string(hits.counts[i * m + j]);
          }
        }
        out.end_row();
      }
      break;
    case SearchSpec::Mode::kCount:
      for (size_t j = 0; j < m; ++j) {
        Count total = 0;
        for (size_t i = 0; i < hits.docs.size(); ++i) total += hits.counts[i * m + j];
        std::string& row = out.row();
        if (json) {
          row += "{\"phrase\":";
          append_json_string(row, search.printed[j]);
          row += ",\"count\":";
          row += std::to_string(total);
          row += '}';
        } else {
          row += search.printed[j];
          row += '\t';
          row += std::to_string(total);
        }
        out.end_row();
      }
      break;
    case SearchSpec::Mode::kLines:
      for (const auto& rows : hits.lines)
        for (const std::string& r : rows) out.raw_row(r);
      break;
  }
  return out.finish();
}

std::string gather_search_output(Comm& comm, const Manifest& manifest,
                                 const PreparedSearch& search, SearchHits mine) {
  const std::vector<uint8_t> msg = serialize(mine);
  std::vector<std::vector<uint8_t>> all = comm.gather(msg);
  if (comm.rank() != 0) return {};
  // Each rank's documents ascending: order the ranks' runs by document.
  std::vector<SearchHits> parts;
  for (const auto& b : all) parts.push_back(deserialize(b));
  const size_t m = search.phrases.size();
  std::vector<std::pair<DocId, std::pair<size_t, size_t>>> order;  // doc -> (part, index)
  for (size_t p = 0; p < parts.size(); ++p)
    for (size_t i = 0; i < parts[p].docs.size(); ++i) order.push_back({parts[p].docs[i], {p, i}});
  std::sort(order.begin(), order.end());
  SearchHits merged;
  const bool lines = search.spec.mode == SearchSpec::Mode::kLines;
  for (const auto& [doc, at] : order) {
    SearchHits& part = parts[at.first];
    merged.docs.push_back(doc);
    for (size_t j = 0; j < m; ++j) merged.counts.push_back(part.counts[at.second * m + j]);
    if (lines) merged.lines.push_back(std::move(part.lines.at(at.second)));
  }
  return render_search(manifest, search, merged);
}

}  // namespace gtadoc
