// A document's text rebuilt from its shard: its words (the grammar's segment of the document,
// expanded), the whitespace between them (the layout's gaps: a document of n words has n + 1,
// leading, between words and trailing, each an index into the shard's whitespace dictionary) and
// the words' bytes (the manifest's dictionary). The text is gap 0, word 0, gap 1, word 1, ...,
// word n-1, gap n. `gtadoc decompress` and the service's GET /v1/docs both rebuild documents
// with it.
//
// Every size comes from the manifest and is checked against what the shard holds before
// anything is allocated by it: a document's words against what its segment expands to (from the
// grammar's rule lengths, without expanding), its bytes against the sum of its words' and gaps'
// lengths. A mismatch is an InputError naming the shard's file (a crafted or corrupted archive).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"
#include "formats/archive.h"

namespace gtadoc {

/// Where each document of shard `shard` starts in the shard's gaps (num_docs + 1 entries, the
/// last one the shard's number of gaps), from the manifest's document table.
std::vector<uint64_t> document_gap_starts(const Manifest& manifest, uint32_t shard);

/// Number of words document `d` (shard-local) of `g` expands to, from its segment and the rule
/// lengths (nothing expanded).
uint64_t segment_words(const ShardGrammar& g, uint32_t d);

/// Expands document `doc` (a global id, of shard `shard`) of `g` into `words` (global word ids;
/// replaced), once its segment is known to expand to the manifest's number of words. Throws
/// InputError "<archive>/shard-NNNNN.h5: document D (NAME) expands to N words, the manifest says
/// M" otherwise.
void expand_checked(const std::filesystem::path& archive, const Manifest& manifest, uint32_t shard,
                    const ShardGrammar& g, DocId doc, std::vector<WordId>& words);

/// The text of one document as a sequence of pieces (gap 0, word 0, ..., gap n), read from any
/// byte on, piece by piece. Holds references to the manifest, the whitespace dictionary, the
/// words and the gaps, which must outlive it.
class DocumentText {
 public:
  /// Document `doc` (a global id) of `archive`: `words` its global word ids (expand_checked),
  /// `gaps` its words.size() + 1 ids into `ws_dict`. Checks the gaps' number and ids and the
  /// text's size (one pass over the pieces) against the manifest's bytes before any text is
  /// sized by it; throws InputError "<file>: document D (NAME) expands to N bytes, the manifest
  /// says M" (or names the gap that is wrong).
  DocumentText(const std::filesystem::path& archive, const Manifest& manifest, DocId doc,
               const std::vector<std::string>& ws_dict, std::span<const WordId> words,
               std::span<const uint32_t> gaps);

  /// Bytes of the whole text (the manifest's).
  uint64_t size() const { return size_; }
  /// Moves the read position to byte `pos` (at most size()): a pass over the pieces before it.
  void seek(uint64_t pos);
  /// Appends the next bytes from the read position to `out`, at most `max`; returns how many
  /// (0 at the end).
  uint64_t read(std::string& out, uint64_t max);
  /// Appends bytes [begin, end) of the text to `out` (end at most size()).
  void append(uint64_t begin, uint64_t end, std::string& out);

 private:
  std::string_view piece(uint64_t i) const;  ///< piece i: a gap when i is even, else a word
  const char* dict_bytes_;
  const uint64_t* dict_offsets_;
  const std::vector<std::string>& ws_dict_;
  std::span<const WordId> words_;
  std::span<const uint32_t> gaps_;
  uint64_t size_ = 0;
  uint64_t pieces_ = 0;
  uint64_t piece_ = 0;  ///< read position: piece and byte within it
  uint64_t offset_ = 0;
};

/// "<archive>/shard-NNNNN.h5: document D (NAME)", NAME with non-printable bytes escaped: how
/// the errors above name a document.
std::string document_what(const std::filesystem::path& archive, const Manifest& manifest,
                          DocId doc);

}  // namespace gtadoc
