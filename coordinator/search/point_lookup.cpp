#include "coordinator/search/point_lookup.h"

#include <spdlog/spdlog.h>

#include <numeric>

#include "common/parallel.h"
#include "common/settings.h"
#include "common/timer.h"
#include "worker/search/point_records.h"

namespace gtadoc {

std::optional<RecordBatch> ResidentPointLookup::records(const QueryOptions& q,
                                                        const Normalization& norm,
                                                        const std::vector<WordId>& words,
                                                        unsigned threads) {
  const bool forced = settings::word("GTADOC_POINT_LOOKUP") == "index";
  if (!forced && !index_.ready()) return std::nullopt;  // a traversal does not wait for the build
  const Timer timer;
  const std::vector<SearchTarget> targets = index_.targets();
  const PointWords point = point_words(words, norm, threads);
  // Counts are looked up, whatever the words (a binary search per grammar and member, done once,
  // by point_records): only the other tasks' lookups may cost more than a traversal.
  const bool counts = q.task == Task::kWordCount || q.task == Task::kSort;
  // The grammars holding a word, and what the lookup costs against a traversal (serial: a few
  // binary searches per grammar).
  std::vector<size_t> holding;
  double lookup = 0, passes = 0;
  if (counts) {
    holding.resize(targets.size());
    std::iota(holding.begin(), holding.end(), size_t{0});
  } else {
    for (size_t i = 0; i < targets.size(); ++i) {
      const PointCost c = point_cost(*targets[i].grammar, *targets[i].index, point);
      lookup += c.lookup;
      passes += c.pass;
      if (c.lookup > 0) holding.push_back(i);
    }
  }
  if (!forced && !counts && lookup > kTraversalPasses * passes) {
    spdlog::debug("point lookup: {} words would cost {:.1f} passes over the grammars; traversing",
                  point.words.size(), lookup / passes);
    return std::nullopt;
  }
  std::vector<RecordBatch> batches(holding.size());
  auto one = [&](size_t j) {
    const SearchTarget& t = targets[holding[j]];
    batches[j] = point_records(*t.grammar, *t.index, q, norm, point);
  };
  // Counts (a binary search per grammar and member) and a rare word's grammars: the thread pool
  // would cost more than the lookups.
  if (counts || holding.size() <= 4) {
    for (size_t j = 0; j < holding.size(); ++j) one(j);
  } else {
    parallel_for(holding.size(), threads, one);
  }
  RecordBatch out = concatenate(std::move(batches), key_layout(q).width, counts ? 1 : threads);
  spdlog::debug(
      "point lookup: {} records of {} words from {} of {} grammars in {:.4f}s "
      "(estimated {:.3f} passes)",
      out.size(), point.words.size(), holding.size(), targets.size(), timer.seconds(),
      passes > 0 ? lookup / passes : 0.0);
  return out;
}

}  // namespace gtadoc
