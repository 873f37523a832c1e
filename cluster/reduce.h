// The merge step of the map-reduce (docs/REFERENCE.md §7): an owner rank turns the records it
// received into one row per distinct key.
// Guarantees of reduce_records: afterwards the batch is sorted by key (lexicographic over the
// `width` u32 values, each compared as unsigned), keys are unique, and each count is the exact
// sum of the counts the key had before (u64, wrapping on overflow). The result does not depend
// on the input order or on `threads`. Width and row-major layout are kept.
#pragma once

#include "worker/records.h"

namespace gtadoc {

/// In place; `threads` = 0 uses every hardware thread (small batches use one).
void reduce_records(RecordBatch& batch, unsigned threads);

}  // namespace gtadoc
