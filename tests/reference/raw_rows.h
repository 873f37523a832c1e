// The raw-text references' output framing (docs/OUTPUT.md): TSV rows each ending with '\n';
// JSON as "[\n", the row objects separated by ",\n", then "\n]\n" ("[\n]\n" with no rows), the
// objects compact, keys in insertion order, strings rendered by nlohmann's dump with invalid
// UTF-8 replaced (error_handler_t::replace). Shared by raw_reference.cpp and raw_grep.cpp only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/types.h"
#include "tests/reference/raw_reference.h"
#include "worker/query.h"

namespace gtadoc::rawref {

using Json = nlohmann::ordered_json;

/// Collects the rows and frames them; documents are written by name or, with `ids`, by id.
class Rows {
 public:
  Rows(OutputFormat fmt, const std::vector<RawDocument>& docs, bool ids)
      : json_(fmt == OutputFormat::kJson), docs_(docs), ids_(ids) {}

  bool json() const { return json_; }

  void tsv_row(const std::string& row) {
    text_ += row;
    text_ += '\n';
  }
  void json_row(const Json& row) {
    if (rows_ > 0) text_ += ",\n";
    text_ += row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    ++rows_;
  }

  /// A document as a TSV field: its escaped name, or its decimal id with --ids.
  std::string doc_tsv(DocId d) const {
    return ids_ ? std::to_string(d) : escape_tsv_name(docs_[d].name);
  }
  /// A document as a JSON value: its name as a string, or its id as a number with --ids.
  Json doc_json(DocId d) const { return ids_ ? Json(d) : Json(docs_[d].name); }

  std::string finish() {
    if (!json_) return std::move(text_);
    if (rows_ == 0) return "[\n]\n";
    return "[\n" + text_ + "\n]\n";
  }

 private:
  bool json_;
  const std::vector<RawDocument>& docs_;
  bool ids_;
  std::string text_;
  uint64_t rows_ = 0;
};

}  // namespace gtadoc::rawref
