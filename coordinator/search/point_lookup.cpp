#include "coordinator/search/point_lookup.h"

#include <spdlog/spdlog.h>

#include <atomic>

#include "common/parallel.h"
#include "common/settings.h"
#include "common/timer.h"
#include "worker/search/point_records.h"

namespace gtadoc {

PointLimits point_limits(std::string_view engine) {
  if (engine == "gpu") return PointLimits{};
  return PointLimits{0, 0};
}

std::optional<RecordBatch> ResidentPointLookup::records(const QueryOptions& q,
                                                        const Normalization& norm,
                                                        const std::vector<WordId>& words,
                                                        unsigned threads) {
  const bool forced = settings::word("GTADOC_POINT_LOOKUP") == "index";
  if (!forced && !index_.ready()) return std::nullopt;  // a traversal does not wait for the build
  const Timer timer;
  const std::vector<SearchTarget> targets = index_.targets();
  const PointWords point = point_words(words, norm, threads);
  const PointLimits limits = forced ? PointLimits{0, 0} : limits_;
  std::vector<std::optional<RecordBatch>> parts(targets.size());
  std::atomic<bool> gave_up = false;
  parallel_for(targets.size(), threads, [&](size_t i) {
    if (gave_up.load(std::memory_order_relaxed)) return;
    parts[i] = point_records(*targets[i].grammar, *targets[i].index, q, norm, point, limits);
    if (!parts[i]) gave_up = true;
  });
  if (gave_up) {
    spdlog::debug("point lookup: {} words held by too many documents; traversing", words.size());
    return std::nullopt;
  }
  std::vector<RecordBatch> batches;
  batches.reserve(parts.size());
  for (auto& p : parts) batches.push_back(std::move(*p));
  RecordBatch out = concatenate(std::move(batches), key_layout(q).width, threads);
  spdlog::debug("point lookup: {} records of {} words from {} grammars in {:.4f}s", out.size(),
                point.words.size(), targets.size(), timer.seconds());
  return out;
}

}  // namespace gtadoc
