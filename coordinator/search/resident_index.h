// The search indexes of a rank's resident grammars (worker/search/shard_index.h), built on
// threads of their own at background priority (common/background_priority.h) once the service
// is up, so that neither its start nor its first queries wait for them; the first search waits
// for what is not built yet. Owned by the service beside its session.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "coordinator/search/phrase_search.h"

namespace gtadoc {

class ResidentSearchIndex {
 public:
  /// Starts building an index of each (shard, grammar) on `threads` threads (0: every usable
  /// CPU). The grammars must outlive this object.
  ResidentSearchIndex(std::vector<std::pair<uint32_t, const ShardGrammar*>> grammars,
                      unsigned threads);
  ~ResidentSearchIndex();
  ResidentSearchIndex(const ResidentSearchIndex&) = delete;
  ResidentSearchIndex& operator=(const ResidentSearchIndex&) = delete;

  /// Every grammar with its index (waits for the build; rethrows its error).
  std::vector<SearchTarget> targets();
  /// Whether the build has ended (targets() then returns at once).
  bool ready() const {
    return built_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
  /// Bytes the indexes take (0 until built).
  uint64_t bytes() const;
  /// Seconds the build took (0 until built).
  double build_seconds() const { return seconds_; }

 private:
  std::vector<std::pair<uint32_t, const ShardGrammar*>> grammars_;
  std::vector<std::unique_ptr<ShardSearchIndex>> indexes_;
  std::shared_future<void> built_;
  double seconds_ = 0;
};

}  // namespace gtadoc
