// ShardPrefetcher: a rank's shards read ahead of their load and prepared on the host for the
// engine (prepare_shard: the GPU engine's shard layout), several at once, so that reading,
// preparing and the engine's own start-up and loads overlap. Shards come out in order; what a
// shard's read or preparation threw is rethrown when that shard is taken.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "common/timer.h"
#include "formats/archive.h"
#include "worker/engine.h"

namespace gtadoc {

class ShardPrefetcher {
 public:
  /// Starts reading `shards` of `archive` (whose manifest must outlive this object) in order.
  /// Up to depth_for(engine, threads) shards are in flight, more than one only while their
  /// manifest symbol counts stay within kSymbolBudget. Reads start in shard order: the first
  /// shard's alone, the others once it ended, reads_at_once_for(depth, threads) at a time; the
  /// first shard is prepared on `threads` threads (0: every usable CPU), the others on
  /// threads_each_for(threads). A shard of more than `prepare_bound` symbols (0: no bound) is
  /// read but not prepared: it will be loaded in document-range pieces, which the load prepares.
  ShardPrefetcher(std::filesystem::path archive, const Manifest& manifest,
                  std::vector<uint32_t> shards, std::string engine, unsigned threads,
                  uint64_t prepare_bound);
  /// Waits for the work in flight (its results and errors are dropped).
  ~ShardPrefetcher();
  ShardPrefetcher(const ShardPrefetcher&) = delete;
  ShardPrefetcher& operator=(const ShardPrefetcher&) = delete;

  /// True while no shard has been taken.
  bool fresh() const { return taken_ == 0; }
  /// True once every shard has been taken.
  bool done() const { return taken_ == shards_.size(); }
  /// Shards not yet taken by next().
  size_t remaining() const { return shards_.size() - taken_; }
  /// The next shard (id in `id`), waiting for it if needed; starts more work behind it.
  PreparedShard next(uint32_t* id);
  /// Seconds since this prefetcher started (the timeline of its -vv messages).
  double elapsed() const { return clock_.seconds(); }

  /// Symbols in flight beyond the first shard: about 24 bytes each while prepared (1.5 GB).
  static constexpr uint64_t kSymbolBudget = uint64_t{64} << 20;
  /// Shards read and prepared at once: for the GPU engine one per thread, up to 16 (its layouts
  /// scale better across shards than within one; with 8 at once on 16 cores the reads of the
  /// ninth shard on waited for the first loads: docs/PERFORMANCE.md, "Scale"); the CPU engine only
  /// reads ahead, a quarter of the threads' count of shards (2 to 16: reads decode on every
  /// thread, and an archive of many small shards is read at the speed of several side by side).
  /// GTADOC_PREFETCH_DEPTH (1-256) overrides it (measurements).
  static unsigned depth_for(const std::string& engine, unsigned threads);
  /// Threads preparing each shard after the first: two (one where `threads` is 1), so that the
  /// few shards whose reads end last are prepared on more than one thread while the earlier ones
  /// are loaded, and the many shards in flight do not crowd the cores (257 shards of 8 GB on 32
  /// cores, one H200: the load took 2.55 s with 2 each, 3.0 s with 8; docs/PERFORMANCE.md,
  /// "Scale"). GTADOC_PREPARE_THREADS (1-4096) overrides it (measurements).
  static unsigned threads_each_for(unsigned threads);
  /// Shard reads run at once after the first shard's: half of `threads` (at least 2), at most
  /// `depth`. A read enters HDF5 only to open its file and locate its chunks (0.4 ms under the
  /// lock for a 5 MB shard), and reads, decodes and validates outside the HDF5 lock on the
  /// threads its preparation gets (two), so reads run side by side and together use every
  /// core. 513 shards of 5 MB on 32 cores (docs/PERFORMANCE.md, "Scale"): the GPU load took
  /// 3.3-3.5 s with 8 at once, 2.6 s with 16, 2.9 s with 32 (each read then took longer: 34, 43
  /// and 45 ms).
  static unsigned reads_at_once_for(unsigned depth, unsigned threads);

 private:
  void fill();
  /// The shard's symbols as the manifest records them (the in-flight budget's unit).
  uint64_t manifest_symbols(uint32_t id) const;

  std::filesystem::path archive_;
  const Manifest& manifest_;
  std::vector<uint32_t> shards_;
  std::string engine_;
  unsigned depth_, threads_, threads_each_, reads_at_once_;
  uint64_t prepare_bound_;
  size_t started_ = 0, taken_ = 0;
  uint64_t symbols_in_flight_ = 0;
  std::deque<std::future<PreparedShard>> inflight_;
  /// Reads in flight (see fill()): at most reads_at_once_ at a time.
  std::shared_future<void> first_read_;  ///< the first shard's read, which the others wait for
  std::deque<std::shared_future<void>> reads_;  ///< the last reads_at_once_ reads started
  Timer clock_;                                 ///< since construction: the reads' timeline (-vv)
};

}  // namespace gtadoc
