// The service's point queries (docs/SERVICE.md "Point queries"): a query filtered by words takes
// its records from the search indexes of the rank's resident grammars (worker/search/
// point_records.h) instead of a traversal of every shard, when that costs less.
//
// Guarantees: the records are those the traversal gives, filtered (the same rows, byte for byte);
// `auto` (GTADOC_POINT_LOOKUP) uses the indexes only once they are built, and only when the
// rank's point_cost over its grammars is at most kTraversalPasses passes over them (a filter of
// many common words traverses instead; word-count and sort, whose counts are looked up, never).
#pragma once

#include "coordinator/pipeline/query_pipeline.h"
#include "coordinator/search/resident_index.h"
#include "worker/search/point_records.h"

namespace gtadoc {

/// What a traversal costs in passes over the grammars (point_cost's unit): a filtered query's
/// records leave the GPU and are filtered on the host, so even the GPU engine's traversal costs
/// several passes (docs/PERFORMANCE.md "Point queries").
inline constexpr double kTraversalPasses = 4;

class ResidentPointLookup final : public PointLookup {
 public:
  explicit ResidentPointLookup(ResidentSearchIndex& index) : index_(index) {}
  std::optional<RecordBatch> records(const QueryOptions& q, const Normalization& norm,
                                     const std::vector<WordId>& words, unsigned threads) override;

 private:
  ResidentSearchIndex& index_;
};

}  // namespace gtadoc
