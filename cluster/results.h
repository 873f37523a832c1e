// The last stage of a query: an owner rank's reduced records (sorted by key, keys unique) become
// output rows in the task's total order (SPEC §4), with --top / --min-count applied where the
// owner already has complete data; rows of all ranks are then merged by the same order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/archive.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc {

/// One output line (TSV text or one JSON object) with the keys that order it: rows compare by
/// (k1, k2, key) ascending. Counts that sort descending are stored as ~count.
struct OutputRow {
  uint64_t k1 = 0, k2 = 0;
  std::string key;
  std::string text;  ///< without the trailing newline / separator
  friend bool operator<(const OutputRow& a, const OutputRow& b) {
    if (a.k1 != b.k1) return a.k1 < b.k1;
    if (a.k2 != b.k2) return a.k2 < b.k2;
    return a.key < b.key;
  }
};

struct ResultContext {
  const QueryOptions& q;
  const Normalization& norm;
  const std::vector<DocEntry>& docs;
  OutputFormat format = OutputFormat::kTsv;
  /// term-vector: documents this rank owns (each gets a row even without records).
  std::vector<DocId> owned_docs;
};

/// Where built rows go: kept (to be merged with other owners' rows) or, when this owner's rows
/// are the whole result (one rank), rendered straight into the result bytes, which keeps memory
/// at the size of the output.
class RowSink {
 public:
  RowSink(OutputFormat format, bool render_directly) : format_(format), direct_(render_directly) {}
  bool direct() const { return direct_; }
  void add(OutputRow&& row);
  std::vector<OutputRow> take_rows() { return std::move(rows_); }
  /// The finished result bytes (same as render_rows of the rows added); direct sinks only.
  std::string take_rendered();

 private:
  OutputFormat format_;
  bool direct_;
  std::vector<OutputRow> rows_;
  std::string out_;
  uint64_t count_ = 0;
};

/// Builds this owner's rows, sorted, with per-owner limits applied, into `sink`.
void build_rows(const RecordBatch& reduced, const ResultContext& ctx, RowSink& sink);
/// The same, kept as rows.
std::vector<OutputRow> build_rows(const RecordBatch& reduced, const ResultContext& ctx);

/// Merges the sorted row lists of all owners (in place into the first) and applies --top for
/// tasks whose limit is global (word-count, sequence-count without --per-doc).
std::vector<OutputRow> merge_rows(std::vector<std::vector<OutputRow>> parts, const QueryOptions& q);

/// The bytes of a result file: TSV lines, or a JSON array with one row object per line.
std::string render_rows(const std::vector<OutputRow>& rows, OutputFormat format);

/// TSV escaping of a document name: tab, newline and backslash become \t, \n, \\.
std::string escape_tsv_name(const std::string& name);

/// Serialization of rows for the gather to rank 0.
std::string serialize_rows(const std::vector<OutputRow>& rows);
std::vector<OutputRow> deserialize_rows(const std::string& bytes);

}  // namespace gtadoc
