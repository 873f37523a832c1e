// ShardPrefetcher (coordinator/pipeline/shard_prefetch.h).
#include "coordinator/pipeline/shard_prefetch.h"

#include <algorithm>
#include <memory>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/parallel.h"
#include "common/settings.h"

namespace gtadoc {

unsigned ShardPrefetcher::depth_for(const std::string& engine, unsigned threads) {
  if (const auto d = settings::count_if_set("GTADOC_PREFETCH_DEPTH"))
    return static_cast<unsigned>(*d);
  if (engine != "gpu") return std::clamp(resolve_threads(threads) / 4, 2u, 16u);
  return std::clamp(resolve_threads(threads), 2u, 16u);
}

unsigned ShardPrefetcher::threads_each_for(unsigned threads) {
  if (const auto t = settings::count_if_set("GTADOC_PREPARE_THREADS"))
    return static_cast<unsigned>(*t);
  return std::min(2u, std::max(1u, threads));
}

unsigned ShardPrefetcher::reads_at_once_for(unsigned depth, unsigned threads) {
  if (const auto r = settings::count_if_set("GTADOC_READS_AT_ONCE"))
    return std::min(depth, static_cast<unsigned>(*r));
  return std::min(depth, std::max(2u, threads / 2));
}

ShardPrefetcher::ShardPrefetcher(std::filesystem::path archive, const Manifest& manifest,
                                 std::vector<uint32_t> shards, std::string engine, unsigned threads,
                                 uint64_t prepare_bound)
    : archive_(std::move(archive)),
      manifest_(manifest),
      shards_(std::move(shards)),
      engine_(std::move(engine)),
      depth_(depth_for(engine_, threads)),
      threads_(resolve_threads(threads)),
      threads_each_(threads_each_for(threads_)),
      reads_at_once_(reads_at_once_for(depth_, threads_)),
      prepare_bound_(prepare_bound) {
  fill();
}

ShardPrefetcher::~ShardPrefetcher() {
  for (auto& f : inflight_)
    if (f.valid()) f.wait();
}

uint64_t ShardPrefetcher::manifest_symbols(uint32_t id) const {
  return id < manifest_.shards.size() ? manifest_.shards[id].symbols : 0;
}

void ShardPrefetcher::fill() {
  while (started_ < shards_.size() && inflight_.size() < depth_) {
    const uint32_t id = shards_[started_];
    const uint64_t symbols = manifest_symbols(id);
    if (!inflight_.empty() && symbols_in_flight_ + symbols > kSymbolBudget) break;
    // Reads start in shard order. A read enters HDF5 (under the process's lock) only to open its
    // file and locate its chunks; it reads their bytes and decodes them outside the lock, so reads
    // run side by side, reads_at_once_ at a time (a read waits for the one reads_at_once_ before
    // it, so the earlier shards, which the loads wait for first, end first). The first shard's
    // read, which the first load waits for, runs alone on every thread; the others start when it
    // ends. Each preparation starts after its read, with the read's threads where it uses threads
    // (prepare_shard), the first load waiting for the first shard's too.
    const unsigned threads = started_ == 0 ? threads_ : threads_each_;
    // The read to wait for: the one reads_at_once_ before, else the first (itself waits for none).
    std::shared_future<void> previous =
        reads_.size() >= reads_at_once_ ? reads_.front() : first_read_;
    if (reads_.size() >= reads_at_once_) reads_.pop_front();
    auto read_done = std::make_shared<std::promise<void>>();
    reads_.push_back(read_done->get_future().share());
    if (started_ == 0) first_read_ = reads_.back();
    // A shard to be prepared for the GPU engine has only its frame checked here, its bodies on
    // the device at its load (read_checks_for); one too large to prepare is split on the host,
    // which needs it whole.
    const GrammarChecks checks = prepare_bound_ != 0 && symbols > prepare_bound_
                                     ? GrammarChecks::kFull
                                     : read_checks_for(engine_);
    inflight_.push_back(std::async(std::launch::async, [this, id, threads, previous, read_done,
                                                        checks] {
      ShardGrammar g;
      ShardReadTimes spent;
      double read_from = 0, read_to = 0;
      try {
        if (previous.valid()) previous.wait();
        read_from = clock_.seconds();
        g = read_shard_grammar(archive_, manifest_, id, threads, &spent, checks);
        read_to = clock_.seconds();
      } catch (...) {
        read_done->set_value();
        throw;
      }
      read_done->set_value();
      const std::string file = (archive_ / shard_file_name(id)).string();
      if (prepare_bound_ != 0 && g.symbols.size() > prepare_bound_) {
        // The manifest said it was smaller: validated whole for its split.
        if (checks == GrammarChecks::kFrame) validate_grammar(g, file, threads);
        return PreparedShard{std::move(g), nullptr, {}};
      }
      PreparedShard p = prepare_shard(engine_, std::move(g), threads);
      if (checks == GrammarChecks::kFrame) p.bodies_unchecked = file;
      const h5::BatchRead::Times& d = spent.steps;
      spdlog::debug(
          "shard {}: read {:.3f}-{:.3f} s {} (ms: lock wait {:.2f} open {:.2f} data {:.2f} "
          "[locate {:.2f} touch {:.2f}; thread-ms: pread {:.2f} checksum {:.2f} inflate {:.2f} "
          "unpack {:.2f}] checks {:.2f} validate {:.2f}), prepared by {:.3f} s",
          id, read_from, read_to, spent.located ? "by its chunk maps" : "through HDF5",
          spent.lock_wait * 1e3, spent.open * 1e3, spent.data * 1e3, d.locate * 1e3, d.touch * 1e3,
          d.pread * 1e3, d.checksum * 1e3, d.inflate * 1e3, d.unpack * 1e3, spent.checks * 1e3,
          spent.validate * 1e3, clock_.seconds());
      return p;
    }));
    symbols_in_flight_ += symbols;
    ++started_;
  }
}

PreparedShard ShardPrefetcher::next(uint32_t* id) {
  const uint32_t shard = shards_.at(taken_);
  if (id != nullptr) *id = shard;
  std::future<PreparedShard> f = std::move(inflight_.front());
  inflight_.pop_front();
  ++taken_;
  symbols_in_flight_ -= manifest_symbols(shard);
  fill();  // the next shards start before this one is waited for
  return f.get();
}

}  // namespace gtadoc
