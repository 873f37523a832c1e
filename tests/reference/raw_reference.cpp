// Raw-text reference implementation of the six tasks, written from docs/REFERENCE.md §3-§4 alone.
//
// The plan is the same for every task: sort the documents by name, turn each document into its
// normalized word stream (a vector of std::string), count with hash maps, then sort the rows with
// an explicit comparator that spells out the order of docs/REFERENCE.md §4, and print them.
// Sequences are kept as their joined strings ("w1 w2 w3"): words never contain a space, so the
// joined string identifies the sequence, and docs/REFERENCE.md §4 orders sequences by exactly that
// string.
#include "tests/reference/raw_reference.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tests/reference/raw_rows.h"

namespace gtadoc {
namespace rawref {

namespace {

bool is_ascii_whitespace(unsigned char c) {
  return c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0B || c == 0x0C || c == 0x0D;
}

/// Bytes that --alnum keeps at the ends of a word: ASCII letters, ASCII digits, and >= 0x80.
bool is_alnum_kept(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c >= 0x80;
}

}  // namespace

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    if (is_ascii_whitespace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && !is_ascii_whitespace(static_cast<unsigned char>(text[i]))) ++i;
    words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

std::string normalize_word(std::string word, bool lowercase, bool alnum) {
  if (lowercase) {
    for (char& ch : word) {
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    }
  }
  if (alnum) {
    size_t begin = 0;
    size_t end = word.size();
    while (begin < end && !is_alnum_kept(static_cast<unsigned char>(word[begin]))) ++begin;
    while (end > begin && !is_alnum_kept(static_cast<unsigned char>(word[end - 1]))) --end;
    word = word.substr(begin, end - begin);
  }
  return word;
}

std::string escape_tsv_name(std::string_view name) {
  std::string out;
  for (char ch : name) {
    if (ch == '\t') {
      out += "\\t";
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\\') {
      out += "\\\\";
    } else {
      out += ch;
    }
  }
  return out;
}

bool bytes_less(std::string_view a, std::string_view b) {
  // memcmp compares bytes as unsigned char; on a tie of the common part the shorter sorts first.
  size_t common = std::min(a.size(), b.size());
  int c = common == 0 ? 0 : std::memcmp(a.data(), b.data(), common);
  if (c != 0) return c < 0;
  return a.size() < b.size();
}

}  // namespace rawref

namespace {

using rawref::bytes_less;
using rawref::Json;

// ------------------------------------------------------------------------- maps and orders

/// Hash maps keyed by a word or by a joined sequence. Sequence tasks create millions of short
/// keys, so each map allocates from its own arena (declared next to it) and releases
/// everything at once, instead of one malloc/free per key.
template <typename V>
using KeyMap = std::pmr::unordered_map<std::pmr::string, V>;
using CountMap = KeyMap<Count>;
using Arena = std::pmr::monotonic_buffer_resource;

/// The first 8 bytes of a key as a big-endian number, a missing byte counting as 0. When two
/// heads differ they order their keys exactly like bytes_less: at the first differing byte
/// either both keys have a byte there, or one key has ended (0) and the other has a nonzero
/// byte, so the ended key is a proper prefix and sorts first. Equal heads decide nothing.
uint64_t head_of(std::string_view key) {
  uint64_t head = 0;
  for (size_t i = 0; i < 8; ++i) {
    head <<= 8;
    if (i < key.size()) head |= static_cast<unsigned char>(key[i]);
  }
  return head;
}

/// A row to sort: a key of a map (a view, valid while the map lives) with its value. The head
/// settles most comparisons without reading the key's bytes, which are far away in memory.
template <typename V>
struct Row {
  std::string_view key;
  uint64_t head;
  V value;
};

template <typename V>
bool key_less(const Row<V>& a, const Row<V>& b) {
  if (a.head != b.head) return a.head < b.head;
  return bytes_less(a.key, b.key);
}

/// A count map's entries in "count desc, key asc (bytes)" order, cut to `top` rows (0 = all).
std::vector<Row<Count>> by_count(const CountMap& counts, uint64_t top) {
  std::vector<Row<Count>> rows;
  rows.reserve(counts.size());
  for (const auto& [key, count] : counts) rows.push_back({key, head_of(key), count});
  std::sort(rows.begin(), rows.end(), [](const Row<Count>& a, const Row<Count>& b) {
    if (a.value != b.value) return a.value > b.value;  // count desc
    return key_less(a, b);                             // key asc
  });
  if (top != 0 && rows.size() > top) rows.resize(top);
  return rows;
}

/// A map's entries in key order (bytes), each with a pointer to its value.
template <typename V>
std::vector<Row<V*>> by_key(KeyMap<V>& map) {
  std::vector<Row<V*>> rows;
  rows.reserve(map.size());
  for (auto& [key, value] : map) rows.push_back({key, head_of(key), &value});
  std::sort(rows.begin(), rows.end(), key_less<V*>);
  return rows;
}

// ------------------------------------------------------------------------ words and output

/// The framing of the rows (tests/reference/raw_rows.h).
using Output = rawref::Rows;

/// Every document's normalized word stream (dropped words removed), in document id order.
std::vector<std::vector<std::string>> word_streams(const std::vector<RawDocument>& docs,
                                                   const QueryOptions& q) {
  std::vector<std::vector<std::string>> streams(docs.size());
  for (size_t d = 0; d < docs.size(); ++d) {
    for (std::string& word : rawref::split_words(docs[d].text)) {
      std::string normalized = rawref::normalize_word(std::move(word), q.lowercase, q.alnum);
      if (!normalized.empty()) streams[d].push_back(std::move(normalized));
    }
  }
  return streams;
}

/// Calls visit(joined) for each n-word sequence of one document, in order; `joined` is the
/// sequence's words joined by one space (one buffer, reused between calls).
template <typename Visit>
void for_each_sequence(const std::vector<std::string>& words, uint32_t n, Visit&& visit) {
  std::pmr::string joined;
  for (size_t i = 0; i + n <= words.size(); ++i) {
    joined = words[i];
    for (size_t k = 1; k < n; ++k) {
      joined += ' ';
      joined += words[i + k];
    }
    visit(joined);
  }
}

/// How many n-word sequences all documents have together (an upper bound on distinct ones).
size_t sequence_occurrences(const std::vector<std::vector<std::string>>& streams, uint32_t n) {
  size_t total = 0;
  for (const auto& words : streams) total += words.size() >= n ? words.size() - n + 1 : 0;
  return total;
}

/// Convenience for building rows: a key (std::string_view) as a std::string.
std::string str(std::string_view s) {
  return std::string(s);
}

// ------------------------------------------------------------------------------- the tasks

void word_count(const std::vector<std::vector<std::string>>& streams, const QueryOptions& q,
                Output& out) {
  Arena arena;
  CountMap counts(&arena);
  for (const auto& words : streams) {
    for (const std::string& w : words) ++counts[std::pmr::string(w)];
  }
  for (const auto& [word, head, count] : by_count(counts, q.top)) {
    if (out.json()) {
      Json row;
      row["word"] = str(word);
      row["count"] = count;
      out.json_row(row);
    } else {
      out.tsv_row(str(word) + '\t' + std::to_string(count));
    }
  }
}

void sort_task(const std::vector<std::vector<std::string>>& streams, Output& out) {
  Arena arena;
  CountMap counts(&arena);
  for (const auto& words : streams) {
    for (const std::string& w : words) ++counts[std::pmr::string(w)];
  }
  for (const auto& [word, head, count] : by_key(counts)) {
    if (out.json()) {
      Json row;
      row["word"] = str(word);
      row["count"] = *count;
      out.json_row(row);
    } else {
      out.tsv_row(str(word) + '\t' + std::to_string(*count));
    }
  }
}

void inverted_index(const std::vector<std::vector<std::string>>& streams, Output& out) {
  // Documents are visited in id order, so each list is built ascending; a word seen again in
  // the same document finds its list already ending with that document.
  Arena arena;
  KeyMap<std::pmr::vector<DocId>> postings(&arena);
  for (DocId d = 0; d < streams.size(); ++d) {
    for (const std::string& w : streams[d]) {
      std::pmr::vector<DocId>& docs = postings[std::pmr::string(w)];
      if (docs.empty() || docs.back() != d) docs.push_back(d);
    }
  }
  for (const auto& [word, head, docs] : by_key(postings)) {
    if (out.json()) {
      Json list = Json::array();
      for (DocId d : *docs) list.push_back(out.doc_json(d));
      Json row;
      row["word"] = str(word);
      row["docs"] = std::move(list);
      out.json_row(row);
    } else {
      std::string line = str(word) + '\t';
      for (size_t i = 0; i < docs->size(); ++i) {
        if (i > 0) line += ',';
        line += out.doc_tsv((*docs)[i]);
      }
      out.tsv_row(line);
    }
  }
}

void term_vector(const std::vector<std::vector<std::string>>& streams, const QueryOptions& q,
                 Output& out) {
  for (DocId d = 0; d < streams.size(); ++d) {
    Arena arena;
    CountMap all(&arena);
    for (const std::string& w : streams[d]) ++all[std::pmr::string(w)];
    std::vector<Row<Count>> terms;  // words with count >= --min-count, best first, --top of them
    for (const Row<Count>& term : by_count(all, 0)) {
      if (term.value >= q.min_count) terms.push_back(term);
    }
    if (q.top != 0 && terms.size() > q.top) terms.resize(q.top);

    if (out.json()) {
      Json list = Json::array();
      for (const auto& [word, head, count] : terms) {
        Json term;
        term["word"] = str(word);
        term["count"] = count;
        list.push_back(std::move(term));
      }
      Json row;
      row["doc"] = out.doc_json(d);
      row["terms"] = std::move(list);
      out.json_row(row);
    } else {
      std::string line = out.doc_tsv(d) + '\t';
      for (size_t i = 0; i < terms.size(); ++i) {
        if (i > 0) line += ' ';
        line += str(terms[i].key) + ':' + std::to_string(terms[i].value);
      }
      out.tsv_row(line);
    }
  }
}

void sequence_count(const std::vector<std::vector<std::string>>& streams, const QueryOptions& q,
                    Output& out) {
  if (q.per_doc) {
    for (DocId d = 0; d < streams.size(); ++d) {
      Arena arena;
      CountMap counts(&arena);
      for_each_sequence(streams[d], q.n, [&](const std::pmr::string& seq) { ++counts[seq]; });
      for (const auto& [seq, head, count] : by_count(counts, q.top)) {
        if (out.json()) {
          Json row;
          row["doc"] = out.doc_json(d);
          row["sequence"] = str(seq);
          row["count"] = count;
          out.json_row(row);
        } else {
          out.tsv_row(out.doc_tsv(d) + '\t' + str(seq) + '\t' + std::to_string(count));
        }
      }
    }
    return;
  }
  Arena arena;
  CountMap counts(&arena);
  counts.reserve(sequence_occurrences(streams, q.n));  // no rehashing while counting
  for (const auto& words : streams) {
    for_each_sequence(words, q.n, [&](const std::pmr::string& seq) { ++counts[seq]; });
  }
  for (const auto& [seq, head, count] : by_count(counts, q.top)) {
    if (out.json()) {
      Json row;
      row["sequence"] = str(seq);
      row["count"] = count;
      out.json_row(row);
    } else {
      out.tsv_row(str(seq) + '\t' + std::to_string(count));
    }
  }
}

void ranked_inverted_index(const std::vector<std::vector<std::string>>& streams,
                           const QueryOptions& q, Output& out) {
  // Documents are visited in id order, so a sequence's (doc, count) list gets one entry per
  // document, ascending by id: a new document appends, a repeat bumps the last entry.
  using Posting = std::pair<DocId, Count>;
  Arena arena;
  KeyMap<std::pmr::vector<Posting>> postings(&arena);
  postings.reserve(sequence_occurrences(streams, q.n));  // no rehashing while counting
  for (DocId d = 0; d < streams.size(); ++d) {
    for_each_sequence(streams[d], q.n, [&](const std::pmr::string& seq) {
      std::pmr::vector<Posting>& list = postings[seq];
      if (list.empty() || list.back().first != d) list.emplace_back(d, 0);
      ++list.back().second;
    });
  }
  for (const auto& [seq, head, docs] : by_key(postings)) {
    std::sort(docs->begin(), docs->end(), [](const Posting& a, const Posting& b) {
      if (a.second != b.second) return a.second > b.second;  // count desc
      return a.first < b.first;                              // doc id asc
    });
    if (out.json()) {
      Json list = Json::array();
      for (const auto& [d, count] : *docs) {
        Json entry;
        entry["doc"] = out.doc_json(d);
        entry["count"] = count;
        list.push_back(std::move(entry));
      }
      Json row;
      row["sequence"] = str(seq);
      row["docs"] = std::move(list);
      out.json_row(row);
    } else {
      std::string line = str(seq) + '\t';
      for (size_t i = 0; i < docs->size(); ++i) {
        if (i > 0) line += ' ';
        line += out.doc_tsv((*docs)[i].first) + ':' + std::to_string((*docs)[i].second);
      }
      out.tsv_row(line);
    }
  }
}

}  // namespace

std::string raw_reference_output(std::vector<RawDocument> docs, const QueryOptions& q,
                                 OutputFormat fmt) {
  const bool sequences = q.task == Task::kSequenceCount || q.task == Task::kRankedInvertedIndex;
  if (sequences && (q.n < 2 || q.n > 8)) {
    throw UsageError("--n must be between 2 and 8, got " + std::to_string(q.n));
  }
  std::stable_sort(docs.begin(), docs.end(), [](const RawDocument& a, const RawDocument& b) {
    return bytes_less(a.name, b.name);
  });
  const std::vector<std::vector<std::string>> streams = word_streams(docs, q);

  Output out(fmt, docs, q.ids);
  switch (q.task) {
    case Task::kWordCount:
      word_count(streams, q, out);
      break;
    case Task::kSort:
      sort_task(streams, out);
      break;
    case Task::kInvertedIndex:
      inverted_index(streams, out);
      break;
    case Task::kTermVector:
      term_vector(streams, q, out);
      break;
    case Task::kSequenceCount:
      sequence_count(streams, q, out);
      break;
    case Task::kRankedInvertedIndex:
      ranked_inverted_index(streams, q, out);
      break;
  }
  return out.finish();
}

}  // namespace gtadoc
