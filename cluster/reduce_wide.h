// The sort-and-sum of records whose keys have 2 to 4 values (document-keyed word records, n-grams
// up to 3 words with or without a document), for reduce_records (cluster/reduce.h).
//
// Each record becomes a 24-byte entry holding its whole key (two 64-bit halves) and its count,
// so no pass reads the batch's keys at random. One most-significant-digit pass makes the entries
// from the batch's arrays and spreads them over up to 1,024 buckets by the key's highest varying
// bits; each bucket, a small fraction of the batch, is then sorted on its own by
// least-significant-digit passes over the bits that vary inside it, in cache and in parallel over
// the buckets. Equal keys are summed into a fresh row-major batch.
#pragma once

#include <cstdint>

#include "worker/records.h"

namespace gtadoc {

/// Sorts `batch` (width 2 to 4) by key and sums equal keys, on `threads` threads (at least 1).
void reduce_wide_keys(RecordBatch& batch, unsigned threads);

}  // namespace gtadoc
