// The engine interface's shared behaviour: preparing a shard on the host ahead of its load, and
// running a batch of shards one by one (engines that can traverse several shards in one pass
// override Engine::run_batch).
#include <memory>
#include <vector>

#include "common/parallel.h"
#include "common/settings.h"
#include "worker/engine.h"
#include "worker/plan/shard_layout.h"
#include "worker/plan/thread_pool.h"

namespace gtadoc {

PreparedShard prepare_shard(const std::string& engine, ShardGrammar grammar, unsigned threads) {
  PreparedShard out;
  if (engine == "gpu") {
    const plan::LayoutParts parts = plan::gpu_layout_parts();
    // The units-only layout (the bodies re-encoded on the device) is one pass over the units.
    threads = parts == plan::LayoutParts::kUnits ? 1 : resolve_threads(threads);
    std::unique_ptr<plan::ThreadPool> pool;
    if (threads > 1) pool = std::make_unique<plan::ThreadPool>(threads);
    out.layout = std::make_shared<plan::ShardLayout>(plan::build_shard_layout(
        grammar, plan::Exec{pool.get(), pool ? threads : 1}, nullptr, parts));
    plan::add_level_schedule(*out.layout, grammar);
  }
  out.grammar = std::move(grammar);
  return out;
}

GrammarChecks read_checks_for(const std::string& engine) {
  return engine == "gpu" && plan::gpu_layout_parts() != plan::LayoutParts::kAll &&
                 settings::flag("GTADOC_GPU_DEVICE_CHECKS")
             ? GrammarChecks::kFrame
             : GrammarChecks::kFull;
}

void check_bodies_on_host(PreparedShard& prepared, unsigned threads) {
  if (!prepared.bodies_unchecked) return;
  validate_grammar(prepared.grammar, *prepared.bodies_unchecked, threads);
  prepared.bodies_unchecked.reset();
}

std::vector<Engine::LoadOutcome> Engine::load_prepared_many(std::span<PreparedShard> shards) {
  std::vector<LoadOutcome> out(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    try {
      out[i].shard = load_prepared(shards[i]);
    } catch (...) {
      out[i].error = std::current_exception();
      break;
    }
  }
  return out;
}

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
