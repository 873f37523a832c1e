// The raw-text reference: every task of docs/REFERENCE.md §3-§4 computed directly on the
// uncompressed documents with std::string words and standard maps. It shares no logic with the
// engines (no dictionary, no grammar, no records) and is what the tests compare them against, byte
// for byte. Clarity first; it is still fine for tens of megabytes of text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "worker/query.h"

namespace gtadoc {

struct RawDocument {
  std::string name;  ///< document name, any bytes
  std::string text;  ///< document contents, any bytes
};

/// The exact output (docs/OUTPUT.md) of the task in `q` over `docs`. The documents are sorted
/// by name (byte order, stable for equal names) inside; a document's id is its index in that
/// order. Uses q.task, q.n, q.per_doc, q.lowercase, q.alnum, q.top, q.min_count, q.ids;
/// q.top is taken as given (the term-vector default of 10 is the caller's business).
/// Throws UsageError when a sequence task has q.n outside 2..8.
std::string raw_reference_output(std::vector<RawDocument> docs, const QueryOptions& q,
                                 OutputFormat fmt);

namespace rawref {

/// Maximal runs of non-whitespace bytes (whitespace: 0x20 0x09 0x0A 0x0B 0x0C 0x0D).
std::vector<std::string> split_words(std::string_view text);
/// --lowercase and --alnum applied to one word; an empty result means the word is dropped.
std::string normalize_word(std::string word, bool lowercase, bool alnum);
/// A document name for a TSV field: tab -> "\t", newline -> "\n", backslash -> "\\".
std::string escape_tsv_name(std::string_view name);
/// Byte order (unsigned bytes, a proper prefix sorts first).
bool bytes_less(std::string_view a, std::string_view b);

}  // namespace rawref
}  // namespace gtadoc
