#include "formats/document_text.h"

#include <algorithm>

#include "common/error.h"

namespace gtadoc {

std::vector<uint64_t> document_gap_starts(const Manifest& m, uint32_t shard) {
  const ShardEntry& e = m.shards.at(shard);
  std::vector<uint64_t> at(e.num_docs + 1ull, 0);
  for (uint32_t i = 0; i < e.num_docs; ++i)
    at[i + 1] = at[i] + m.docs.at(e.first_doc + i).words + 1;
  return at;
}

uint64_t segment_words(const ShardGrammar& g, uint32_t d) {
  const auto [begin, end] = g.doc_segment(d);
  const uint32_t V = g.num_words;
  uint64_t words = 0;
  for (uint64_t i = begin; i < end; ++i) {
    const Symbol s = g.symbols[i];
    const uint64_t n = s < V ? 1 : is_boundary(s) ? 0 : g.rule_length[rule_of(s, V)];
    if (__builtin_add_overflow(words, n, &words)) return ~uint64_t{0};  // matches no table
  }
  return words;
}

std::string document_what(const std::filesystem::path& archive, const Manifest& m, DocId doc) {
  const DocEntry& e = m.docs.at(doc);
  return (archive / shard_file_name(e.shard)).string() + ": document " + std::to_string(doc) +
         " (" + printable_name(m.doc_names[doc]) + ")";
}

void expand_checked(const std::filesystem::path& archive, const Manifest& m, uint32_t shard,
                    const ShardGrammar& g, DocId doc, std::vector<WordId>& words) {
  const ShardEntry& e = m.shards.at(shard);
  if (doc < e.first_doc || doc - e.first_doc >= e.num_docs || g.num_docs != e.num_docs)
    throw InputError(document_what(archive, m, doc) + ": not a document of shard " +
                     std::to_string(shard));
  const uint32_t d = doc - e.first_doc;
  const uint64_t expected = m.docs[doc].words, found = segment_words(g, d);
  if (found != expected)
    throw InputError(document_what(archive, m, doc) + " expands to " + std::to_string(found) +
                     " words, the manifest says " + std::to_string(expected));
  words.clear();
  expand_document(g, d, words);
}

DocumentText::DocumentText(const std::filesystem::path& archive, const Manifest& m, DocId doc,
                           const std::vector<std::string>& ws_dict, std::span<const WordId> words,
                           std::span<const uint32_t> gaps)
    : dict_bytes_(m.dict.bytes().data()),
      dict_offsets_(m.dict.offsets().data()),
      ws_dict_(ws_dict),
      words_(words),
      gaps_(gaps) {
  auto what = [&] { return document_what(archive, m, doc); };
  if (gaps.size() != words.size() + 1)
    throw InputError(what() + ": " + std::to_string(gaps.size()) + " gaps for " +
                     std::to_string(words.size()) +
                     " words (the layout does not match the grammar)");
  const uint64_t dict_size = m.dict.offsets().size() - 1;
  for (const uint32_t gap : gaps) {
    if (gap >= ws_dict.size())
      throw InputError(what() + ": gap id " + std::to_string(gap) +
                       " out of range (whitespace dictionary has " +
                       std::to_string(ws_dict.size()) + " entries)");
    size_ += ws_dict[gap].size();
  }
  for (const WordId w : words) {
    if (w >= dict_size) throw InputError(what() + ": word id beyond the dictionary");
    size_ += dict_offsets_[w + 1] - dict_offsets_[w];
  }
  if (size_ != m.docs.at(doc).bytes)
    throw InputError(what() + " expands to " + std::to_string(size_) +
                     " bytes, the manifest says " + std::to_string(m.docs[doc].bytes));
  pieces_ = 2 * words.size() + 1;
}

std::string_view DocumentText::piece(uint64_t i) const {
  if (i % 2 == 0) return ws_dict_[gaps_[i / 2]];
  const WordId w = words_[i / 2];
  return {dict_bytes_ + dict_offsets_[w],
          static_cast<size_t>(dict_offsets_[w + 1] - dict_offsets_[w])};
}

void DocumentText::seek(uint64_t pos) {
  GTADOC_EXPECTS(pos <= size_, "DocumentText::seek beyond the text");
  piece_ = 0;
  offset_ = 0;
  while (piece_ < pieces_) {
    const uint64_t len = piece(piece_).size();
    if (pos < len) break;
    pos -= len;
    ++piece_;
  }
  offset_ = pos;  // 0 at the end
}

uint64_t DocumentText::read(std::string& out, uint64_t max) {
  uint64_t done = 0;
  while (done < max && piece_ < pieces_) {
    const std::string_view p = piece(piece_);
    const uint64_t take = std::min<uint64_t>(p.size() - offset_, max - done);
    out.append(p.data() + offset_, take);
    done += take;
    offset_ += take;
    if (offset_ == p.size()) {
      ++piece_;
      offset_ = 0;
    }
  }
  return done;
}

void DocumentText::append(uint64_t begin, uint64_t end, std::string& out) {
  GTADOC_EXPECTS(begin <= end && end <= size_, "DocumentText::append: range beyond the text");
  seek(begin);
  out.reserve(out.size() + (end - begin));
  read(out, end - begin);
}

}  // namespace gtadoc
