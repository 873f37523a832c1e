// The service's point queries (docs/SERVICE.md "Point queries"): a query filtered by words takes
// its records from the search indexes of the rank's resident grammars (worker/search/
// point_records.h) instead of a traversal of every shard, when that costs less.
//
// Guarantees: the records are those the traversal gives, filtered (the same rows, byte for byte);
// `auto` (GTADOC_POINT_LOOKUP) uses the indexes only once they are built, and gives up on them
// for an n-gram task when some grammar's documents holding the words pass PointLimits.
#pragma once

#include "coordinator/pipeline/query_pipeline.h"
#include "coordinator/search/resident_index.h"
#include "worker/search/point_records.h"

namespace gtadoc {

/// Where the n-gram tasks give up on the indexes for an engine's traversal: the GPU engine's
/// traversal of a shard is fast, so past a share of a grammar's documents it answers; the CPU
/// engine's costs more than walking every document, so never (docs/SERVICE.md "Point queries").
PointLimits point_limits(std::string_view engine);

class ResidentPointLookup final : public PointLookup {
 public:
  ResidentPointLookup(ResidentSearchIndex& index, PointLimits limits)
      : index_(index), limits_(limits) {}
  std::optional<RecordBatch> records(const QueryOptions& q, const Normalization& norm,
                                     const std::vector<WordId>& words, unsigned threads) override;

 private:
  ResidentSearchIndex& index_;
  PointLimits limits_;
};

}  // namespace gtadoc
