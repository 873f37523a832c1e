// Rows of one owner in output order, as integer indices into its reduced records: what each
// output line holds and in which order, decided on integer keys (counts, word ids, which are in
// byte order, document ids, sequence ranks) without building a single string. Rendering
// (render.h) turns a plan into bytes.
//
// Guarantees of plan_rows: rows follow the task's total order of docs/REFERENCE.md §4; --top and
// --min-count are applied where the owner has complete data (per document, per row; the global
// --top of word-count and sequence-count is a prefix of the plan: the caller cuts it); the plan
// does not depend on `threads`.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "cluster/rows/sequence_order.h"
#include "common/big_alloc.h"
#include "common/types.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc {

struct RowPlan {
  /// Record indices in output order; empty when every record is used in its own order
  /// (record i is position i).
  UninitVector<uint64_t> order;
  /// Row r covers positions [row_begin[r], row_begin[r + 1]); empty when every row is one
  /// position (then rows() == positions).
  std::vector<uint64_t> row_begin;
  /// term-vector: the document of each row (a document without kept words has an empty row).
  std::vector<DocId> row_doc;
  /// Positions when order is empty.
  uint64_t positions = 0;

  uint64_t rows() const {
    if (!row_begin.empty()) return row_begin.size() - 1;
    return order.empty() ? positions : order.size();
  }
  uint64_t record_at(uint64_t pos) const { return order.empty() ? pos : order[pos]; }
  std::pair<uint64_t, uint64_t> row_range(uint64_t r) const {
    if (row_begin.empty()) return {r, r + 1};
    return {row_begin[r], row_begin[r + 1]};
  }
  /// Keeps only the first `rows` rows (no effect when rows >= rows()).
  void truncate(uint64_t rows);
};

/// What the plan needs besides the records.
struct RowPlanContext {
  const QueryOptions& q;
  const SequenceOrder* order = nullptr;  ///< sequence tasks: the joined-bytes order
  /// term-vector: this owner's documents [doc_begin, doc_end); each gets a row.
  DocId doc_begin = 0, doc_end = 0;
  unsigned threads = 1;
  /// term-vector: when given, only documents d with (*doc_rows)[d] != 0 get a row (the
  /// service's point filter on documents).
  const std::vector<uint8_t>* doc_rows = nullptr;
};

/// Tasks whose rows are ordered by count first (word-count, sequence-count without --per-doc):
/// owners hold hash partitions, so their rows interleave in the global order.
bool count_ordered(const QueryOptions& q);

/// `reduced` must be sorted by key with unique keys (reduce_records).
RowPlan plan_rows(const RecordBatch& reduced, const RowPlanContext& ctx);

/// Tasks whose rows are the reduced records reordered by count (DeviceRecords::order_by_count
/// does it where the records are): the number of leading key values that group records into
/// one row (0 for word-count and sequence-count, where every record is a row ordered by
/// (count desc, key asc); n for ranked-inverted-index, whose postings are ordered by (count
/// desc, document asc) within a row). None for the other tasks: their rows are planned here.
std::optional<uint32_t> count_order_group(const QueryOptions& q);

/// The plan of records already in row order (reduced records reordered as count_order_group
/// says, a count-ordered --top already cut): plan_rows' rows, without reordering anything.
/// Key order must be output order: sequence keys in an identity `order` (ranks, or word ids
/// where they sort as the joined bytes do).
RowPlan plan_ordered_rows(const RecordBatch& ordered, const QueryOptions& q,
                          const SequenceOrder* order, unsigned threads);

}  // namespace gtadoc
