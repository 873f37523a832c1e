// The service's metrics in the Prometheus text exposition format (GET /metrics): requests by
// endpoint and status code, queries by task and status, query latency histograms by task,
// queue depth, cache hits / misses / bytes, responses cut for clients that did not read them,
// connections cut to make room for new ones, response bytes spilled to temporary files, the
// document store's grammar cache (GET /v1/docs), bytes resident and GPU memory per rank.
// Thread-safe: counters are updated by the HTTP threads and the query executor.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace gtadoc {

class ResultCache;

class Metrics {
 public:
  /// Upper bounds of the latency histogram buckets, seconds.
  static constexpr std::array<double, 14> kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

  /// An HTTP request finished: `endpoint` ("/v1/query", "/metrics", "other", ...), status code.
  void request(const std::string& endpoint, int status);
  /// A query finished (from the cache or executed) with `status` after `seconds`.
  void query(const std::string& task, int status, double seconds, bool cached);
  void cache_miss() { cache_misses_++; }
  void set_queue_depth(int64_t depth) { queue_depth_ = depth; }
  void set_queue_capacity(int64_t n) { queue_capacity_ = n; }
  void set_in_flight(int64_t n) { in_flight_ = n; }
  /// A response was cut: its client did not read it in time or went away.
  void response_cut() { responses_cut_++; }
  /// A connection was cut to make room for a new one (connection_table.h).
  void connection_evicted() { connections_evicted_++; }
  /// Bytes of a response that went to its temporary file (response_pipe.h).
  void response_spilled(uint64_t bytes) { bytes_spilled_ += bytes; }
  /// The document store's grammar cache (GET /v1/docs; documents.h), as of now.
  void set_doc_cache(uint64_t bytes, uint64_t entries, uint64_t capacity, uint64_t hits,
                     uint64_t misses) {
    doc_cache_bytes_ = bytes;
    doc_cache_entries_ = entries;
    doc_cache_capacity_ = capacity;
    doc_cache_hits_ = hits;
    doc_cache_misses_ = misses;
  }
  /// Per rank: grammar bytes resident and GPU memory (used, total; zeros without a GPU).
  /// Bytes of each rank's phrase-search indexes (0 while they are being built).
  void set_search_index(std::vector<uint64_t> bytes);
  void set_rank_memory(std::vector<uint64_t> resident, std::vector<uint64_t> gpu_used,
                       std::vector<uint64_t> gpu_total);

  /// The exposition text, with the cache's gauges.
  std::string render(const ResultCache& cache) const;

 private:
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> buckets{};
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::pair<std::string, int>, uint64_t> queries_;
  std::map<std::string, Histogram> latency_;  ///< by task (uncached and cached together)
  std::map<std::string, Histogram> cached_latency_;
  std::atomic<uint64_t> cache_hits_{0}, cache_misses_{0};
  std::atomic<uint64_t> responses_cut_{0}, connections_evicted_{0}, bytes_spilled_{0};
  std::atomic<int64_t> queue_depth_{0}, queue_capacity_{0}, in_flight_{0};
  std::atomic<uint64_t> doc_cache_bytes_{0}, doc_cache_entries_{0}, doc_cache_capacity_{0},
      doc_cache_hits_{0}, doc_cache_misses_{0};
  std::vector<uint64_t> resident_, gpu_used_, gpu_total_, search_index_;
};

}  // namespace gtadoc
