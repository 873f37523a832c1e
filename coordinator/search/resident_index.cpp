#include "coordinator/search/resident_index.h"

#include <spdlog/spdlog.h>

#include "common/background_priority.h"
#include "common/parallel.h"
#include "common/timer.h"

namespace gtadoc {

ResidentSearchIndex::ResidentSearchIndex(
    std::vector<std::pair<uint32_t, const ShardGrammar*>> grammars, unsigned threads)
    : grammars_(std::move(grammars)), indexes_(grammars_.size()) {
  built_ = std::async(std::launch::async, [this, threads] {
             Timer timer;
             // At background priority, with the threads it starts: built beside the first
             // queries at equal priority, the indexes took half the CPUs those queries ran on (a
             // first CPU-engine word count 2.0-2.8x the later ones on two cores). A search
             // waiting for them leaves its CPUs to them.
             const bool background = lower_to_background_priority();
             // With the kept lengths of the identity (normalize_dictionary's key 1), which every
             // query without normalization reads: its first query does not compute them.
             Normalization identity;
             identity.cache_key = 1;
             parallel_for(grammars_.size(), threads, [&](size_t i) {
               indexes_[i] = std::make_unique<ShardSearchIndex>(*grammars_[i].second);
               indexes_[i]->capped_lengths(*grammars_[i].second, identity);
             });
             seconds_ = timer.seconds();
             uint64_t bytes = 0;  // not bytes(): built_ is not set yet while this runs
             for (const auto& index : indexes_) bytes += index->bytes();
             spdlog::debug("search indexes of {} resident grammars built in {:.3f} s ({} bytes{})",
                           grammars_.size(), seconds_, bytes,
                           background ? ", at background priority" : "");
           }).share();
}

ResidentSearchIndex::~ResidentSearchIndex() {
  if (built_.valid()) built_.wait();
}

std::vector<SearchTarget> ResidentSearchIndex::targets() {
  built_.get();
  std::vector<SearchTarget> out;
  for (size_t i = 0; i < grammars_.size(); ++i)
    out.push_back({grammars_[i].first, grammars_[i].second, indexes_[i].get()});
  return out;
}

uint64_t ResidentSearchIndex::bytes() const {
  if (built_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return 0;
  uint64_t total = 0;
  for (const auto& index : indexes_)
    if (index) total += index->bytes();
  return total;
}

}  // namespace gtadoc
