// The engine interface's shared behaviour: running a batch of shards one by one (engines that
// can traverse several shards in one pass override Engine::run_batch).
#include <vector>

#include "worker/engine.h"

namespace gtadoc {

RecordBatch Engine::run_batch(std::span<LoadedShard* const> shards, const QueryOptions& q,
                              const Normalization& norm, std::vector<ShardRunStats>& stats,
                              unsigned threads) {
  std::vector<RecordBatch> batches;
  batches.reserve(shards.size());
  stats.assign(shards.size(), ShardRunStats{});
  for (size_t i = 0; i < shards.size(); ++i) batches.push_back(run(*shards[i], q, norm, stats[i]));
  return concatenate(std::move(batches), key_layout(q).width, threads);
}

}  // namespace gtadoc
