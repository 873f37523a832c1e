// A rank's slice of the global result: after the shuffle and reduce, every rank plans its rows
// so that concatenating the slices of ranks 0, 1, ... in order is the whole result, with no
// gather of rows anywhere (docs/REFERENCE.md §7).
//  - Tasks ordered by their key (sort, inverted-index, term-vector, sequence-count --per-doc,
//    ranked-inverted-index) are range-partitioned in the shuffle (see key_layout and
//    partition.h), so an owner's rows are already one contiguous range of the result.
//  - Count-ordered tasks (word-count, sequence-count) are hash-partitioned; owners then cut
//    their rows locally to --top, agree on sampled (count, key) splitters and exchange rows
//    (integers: counts and word ids) so that rank r holds the r-th range of the global order;
//    the global --top keeps the first K rows of the concatenation (each rank sends at most K).
//    A --top of at most kTopRowsToRoot rows skips the splitters: every rank sends its first K
//    rows to rank 0 (one exchange of at most K rows per rank), which merges them.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "cluster/rows/row_plan.h"
#include "cluster/rows/sequence_order.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc {

class Comm;

struct RankRows {
  RecordBatch records;      ///< the records the plan refers to
  RowPlan plan;             ///< this rank's rows in order
  uint64_t first_row = 0;   ///< global index of this rank's first row
  uint64_t total_rows = 0;  ///< rows of the whole result
};

/// The largest count-ordered --top whose candidates go to rank 0 (top_rows_to_root).
inline constexpr uint64_t kTopRowsToRoot = uint64_t{1} << 16;
/// Whether place_rank_rows sends a count-ordered query's rows to rank 0 whole, not by ranges:
/// --top K with 0 < K <= kTopRowsToRoot (each rank then holds at most K candidates: two
/// collectives instead of four). GTADOC_TOP_TO_ROOT=0 turns it off (benchmarks compare the two
/// paths; the answer is the same). Rows the GPUs already exchanged (`exchanged`) do not move.
bool top_rows_to_root(const QueryOptions& q);

/// Global row order of the count-ordered tasks on (count, key): count desc, then the key in
/// output order (word id, or with `order` the n-gram's joined bytes).
struct CountKeyLess {
  const SequenceOrder* order;
  bool operator()(uint64_t ca, const uint32_t* ka, uint64_t cb, const uint32_t* kb) const {
    if (ca != cb) return ca > cb;
    return order != nullptr ? order->less(ka, kb) : ka[0] < kb[0];
  }
};

/// One row per record of `r`, in `less` order: the merge of its sorted runs (sizes `runs`, in
/// order; no two rows equal). Parallel on `threads`; the result does not depend on them.
RowPlan merge_row_runs(const RecordBatch& r, const std::vector<size_t>& runs,
                       const CountKeyLess& less, unsigned threads);

/// Collective. `reduced`: this owner's records sorted by key with unique keys; `doc_begin`,
/// `doc_end`: the documents this rank owns (term-vector rows). `order` must be given for the
/// sequence tasks.
/// `doc_rows`: term-vector only the documents it marks get rows (see RowPlanContext).
/// `exchanged`: see place_rank_rows.
RankRows plan_rank_rows(Comm& comm, RecordBatch reduced, const QueryOptions& q,
                        const SequenceOrder* order, DocId doc_begin, DocId doc_end,
                        unsigned threads, const std::vector<uint8_t>* doc_rows = nullptr,
                        bool exchanged = false);

/// Collective. The second half of plan_rank_rows, for records whose plan is already made (by
/// plan_rows, or plan_ordered_rows when the GPU ordered them): the count-ordered row exchange
/// between ranks (unless `exchanged`: the rows already are this rank's range of the global
/// order, as the GPUs' exchange leaves them), the global row numbering and the global --top.
RankRows place_rank_rows(Comm& comm, RecordBatch records, RowPlan plan, const QueryOptions& q,
                         const SequenceOrder* order, unsigned threads, bool exchanged = false);

/// The rows at the given positions of a rank's ordered rows (host or device: DeviceRecords::
/// rows_at), as records in that order.
using RowsAt = std::function<RecordBatch(std::span<const uint64_t>)>;

/// Collective: parts - 1 splitter rows (count, key) drawn from every rank's `n` rows of key
/// width `w`, ordered by `less` (row_at fetches the sampled ones), each sample weighted by the
/// rows it stands for; the same on every rank. Rank p then owns the rows r with
/// splitter[p - 1] < r <= splitter[p] (the count-ordered row exchange).
RecordBatch choose_row_splitters(Comm& comm, uint64_t n, uint32_t w, const RowsAt& rows_at,
                                 const CountKeyLess& less);

}  // namespace gtadoc
