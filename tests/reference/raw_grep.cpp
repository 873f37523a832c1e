// Raw-text reference for phrase search (`gtadoc grep`), written from its specification alone.
//
// Each document becomes its normalized word stream, every word kept with the byte offset where
// it starts in the document's text; each phrase becomes its normalized words, split and
// normalized exactly like a document. A phrase occurs at every stream position where all of its
// words compare equal, one by one (so overlapping occurrences all count). For --lines, an
// occurrence covers every line from the line of its first word to the line of its last word; a
// word's line is one plus the number of LF bytes before its offset.
#include "tests/reference/raw_grep.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "tests/reference/raw_rows.h"

namespace gtadoc {
namespace {

using rawref::Json;
using rawref::Rows;

constexpr size_t kMaxPhraseWords = 64;

bool is_ascii_whitespace(unsigned char c) {
  return c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0B || c == 0x0C || c == 0x0D;
}

/// A word of a document with the offset of its first byte in the document's text.
struct PlacedWord {
  std::string word;
  size_t offset;
};

/// The maximal runs of non-whitespace bytes of `text`, normalized, each with its start offset;
/// words that normalize to nothing (--alnum) are left out.
std::vector<PlacedWord> normalized_words(std::string_view text, bool lowercase, bool alnum) {
  std::vector<PlacedWord> words;
  size_t i = 0;
  while (i < text.size()) {
    if (is_ascii_whitespace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < text.size() && !is_ascii_whitespace(static_cast<unsigned char>(text[i]))) ++i;
    std::string word =
        rawref::normalize_word(std::string(text.substr(start, i - start)), lowercase, alnum);
    if (!word.empty()) words.push_back({std::move(word), start});
  }
  return words;
}

/// One occurrence of a phrase: the offsets of its first and of its last word.
struct Occurrence {
  size_t first_offset;
  size_t last_offset;
};

/// Every occurrence of `phrase` in `stream`, by position; overlapping occurrences included.
std::vector<Occurrence> find_occurrences(const std::vector<PlacedWord>& stream,
                                         const std::vector<std::string>& phrase) {
  std::vector<Occurrence> found;
  const size_t k = phrase.size();
  for (size_t i = 0; i + k <= stream.size(); ++i) {
    bool match = true;
    for (size_t j = 0; j < k && match; ++j) match = stream[i + j].word == phrase[j];
    if (match) found.push_back({stream[i].offset, stream[i + k - 1].offset});
  }
  return found;
}

/// The lines of one document: line L (from 1) runs from the byte after the (L-1)-th LF, or from
/// the start, up to the L-th LF, or to the end of the text.
class Lines {
 public:
  explicit Lines(const std::string& text) : text_(text) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') lf_.push_back(i);
    }
  }

  /// The line holding the byte at `offset`: one plus the number of LF bytes before it.
  uint64_t line_of(size_t offset) const {
    const auto lf_before = std::lower_bound(lf_.begin(), lf_.end(), offset) - lf_.begin();
    return 1 + static_cast<uint64_t>(lf_before);
  }

  /// Line `line`'s bytes without its LF.
  std::string text(uint64_t line) const {
    const size_t begin = line == 1 ? 0 : lf_[line - 2] + 1;
    const size_t end = line - 1 < lf_.size() ? lf_[line - 1] : text_.size();
    return text_.substr(begin, end - begin);
  }

 private:
  const std::string& text_;
  std::vector<size_t> lf_;  ///< offsets of the LF bytes, ascending
};

/// A phrase's printed form: its normalized words joined by one space.
std::string printed(const std::vector<std::string>& phrase) {
  std::string out;
  for (size_t j = 0; j < phrase.size(); ++j) {
    if (j > 0) out += ' ';
    out += phrase[j];
  }
  return out;
}

}  // namespace

std::vector<std::vector<std::string>> raw_grep_phrases(const RawGrepOptions& o) {
  if (o.phrases.empty()) throw UsageError("at least one PHRASE is required");
  std::vector<std::vector<std::string>> phrases;
  for (size_t p = 0; p < o.phrases.size(); ++p) {
    std::vector<std::string> words;
    for (PlacedWord& w : normalized_words(o.phrases[p], o.lowercase, o.alnum)) {
      words.push_back(std::move(w.word));
    }
    const std::string number = std::to_string(p + 1);
    if (words.empty()) {
      throw UsageError("phrase " + number + " ('" + o.phrases[p] + "') has no words");
    }
    if (words.size() > kMaxPhraseWords) {
      throw UsageError("phrase " + number + " has " + std::to_string(words.size()) +
                       " words; a phrase holds at most " + std::to_string(kMaxPhraseWords));
    }
    phrases.push_back(std::move(words));
  }
  return phrases;
}

std::string raw_grep_output(std::vector<RawDocument> docs, const RawGrepOptions& o,
                            OutputFormat fmt) {
  const std::vector<std::vector<std::string>> phrases = raw_grep_phrases(o);
  std::stable_sort(docs.begin(), docs.end(), [](const RawDocument& a, const RawDocument& b) {
    return rawref::bytes_less(a.name, b.name);
  });

  Rows out(fmt, docs, o.ids);
  std::vector<uint64_t> totals(phrases.size(), 0);  // --count: sums over the selected documents
  for (DocId d = 0; d < docs.size(); ++d) {
    const std::vector<PlacedWord> stream = normalized_words(docs[d].text, o.lowercase, o.alnum);
    std::vector<std::vector<Occurrence>> found;
    std::vector<uint64_t> counts;
    for (const std::vector<std::string>& phrase : phrases) {
      found.push_back(find_occurrences(stream, phrase));
      counts.push_back(found.back().size());
    }

    // One phrase: its count > 0 (--all and --any agree). Several: every one (--all) or at
    // least one (--any).
    const auto positive = [](uint64_t c) { return c > 0; };
    const bool selected = o.any ? std::any_of(counts.begin(), counts.end(), positive)
                                : std::all_of(counts.begin(), counts.end(), positive);
    if (!selected) continue;

    switch (o.mode) {
      case RawGrepOptions::Mode::kDocs:
        if (out.json()) {
          Json row;
          row["doc"] = out.doc_json(d);
          if (phrases.size() == 1) {
            row["count"] = counts[0];
          } else {
            row["counts"] = counts;
          }
          out.json_row(row);
        } else {
          std::string line = out.doc_tsv(d);
          for (uint64_t c : counts) line += '\t' + std::to_string(c);
          out.tsv_row(line);
        }
        break;
      case RawGrepOptions::Mode::kCount:
        for (size_t p = 0; p < phrases.size(); ++p) totals[p] += counts[p];
        break;
      case RawGrepOptions::Mode::kLines: {
        const Lines lines(docs[d].text);
        std::set<uint64_t> matching;  // ascending, each line once
        for (const std::vector<Occurrence>& occurrences : found) {
          for (const Occurrence& occ : occurrences) {
            const uint64_t last = lines.line_of(occ.last_offset);
            for (uint64_t l = lines.line_of(occ.first_offset); l <= last; ++l) matching.insert(l);
          }
        }
        for (uint64_t l : matching) {
          if (out.json()) {
            Json row;
            row["doc"] = out.doc_json(d);
            row["line"] = l;
            row["text"] = lines.text(l);
            out.json_row(row);
          } else {
            out.tsv_row(out.doc_tsv(d) + ':' + std::to_string(l) + ':' + lines.text(l));
          }
        }
        break;
      }
    }
  }

  if (o.mode == RawGrepOptions::Mode::kCount) {
    for (size_t p = 0; p < phrases.size(); ++p) {
      if (out.json()) {
        Json row;
        row["phrase"] = printed(phrases[p]);
        row["count"] = totals[p];
        out.json_row(row);
      } else {
        out.tsv_row(printed(phrases[p]) + '\t' + std::to_string(totals[p]));
      }
    }
  }
  return out.finish();
}

}  // namespace gtadoc
