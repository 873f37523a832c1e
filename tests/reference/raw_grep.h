// The raw-text reference for phrase search (`gtadoc grep`): phrase counts per document, totals
// per phrase, and matching lines, computed directly on the uncompressed documents with
// std::string words and a naive comparison at every word position. It shares no logic with the
// engines (no dictionary, no grammar, no index) and is what the tests compare `gtadoc grep`
// against, byte for byte. Words and normalization are those of docs/OUTPUT.md "Words"; rows,
// their order and their framing are those specified for `gtadoc grep`. Clarity first.
#pragma once

#include <string>
#include <vector>

#include "tests/reference/raw_reference.h"
#include "worker/query.h"

namespace gtadoc {

struct RawGrepOptions {
  std::vector<std::string> phrases;  ///< as given on the command line
  bool any = false;                  ///< --any (default --all)
  enum class Mode { kDocs, kCount, kLines } mode = Mode::kDocs;
  bool lowercase = false, alnum = false, ids = false;
};

/// Every phrase of `o` as its normalized words (words that --alnum drops removed), in the order
/// given. Throws UsageError when there is no phrase, or for the first phrase with no word left
/// ("phrase 2 ('...') has no words") or with more than 64 words ("phrase 1 has 65 words; a
/// phrase holds at most 64").
std::vector<std::vector<std::string>> raw_grep_phrases(const RawGrepOptions& o);

/// The exact output of `gtadoc grep` over `docs`. The documents are sorted by name (byte order,
/// stable for equal names) inside; a document's id is its index in that order. Throws
/// UsageError as raw_grep_phrases does.
std::string raw_grep_output(std::vector<RawDocument> docs, const RawGrepOptions& o,
                            OutputFormat fmt);

}  // namespace gtadoc
