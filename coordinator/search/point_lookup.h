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

namespace gtadoc {

class ResidentPointLookup final : public PointLookup {
 public:
  explicit ResidentPointLookup(ResidentSearchIndex& index) : index_(index) {}
  std::optional<RecordBatch> records(const QueryOptions& q, const Normalization& norm,
                                     const std::vector<WordId>& words, unsigned threads) override;

 private:
  ResidentSearchIndex& index_;
};

}  // namespace gtadoc
