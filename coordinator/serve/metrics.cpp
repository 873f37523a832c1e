#include "coordinator/serve/metrics.h"

#include <fmt/format.h>

#include "coordinator/serve/result_cache.h"

namespace gtadoc {

namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

void Metrics::request(const std::string& endpoint, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::query(const std::string& task, int status, double seconds, bool cached) {
  std::lock_guard lock(mu_);
  ++queries_[{task, status}];
  if (cached) cache_hits_++;
  if (status != 200) return;
  for (Histogram* h : {&latency_[task], cached ? &cached_latency_[task] : nullptr}) {
    if (h == nullptr) continue;
    for (size_t i = 0; i < kBuckets.size(); ++i)
      if (seconds <= kBuckets[i]) ++h->buckets[i];
    ++h->count;
    h->sum += seconds;
  }
}

void Metrics::set_rank_memory(std::vector<uint64_t> resident, std::vector<uint64_t> gpu_used,
                              std::vector<uint64_t> gpu_total) {
  std::lock_guard lock(mu_);
  resident_ = std::move(resident);
  gpu_used_ = std::move(gpu_used);
  gpu_total_ = std::move(gpu_total);
}

void Metrics::set_search_index(std::vector<uint64_t> bytes) {
  std::lock_guard lock(mu_);
  search_index_ = std::move(bytes);
}

std::string Metrics::render(const ResultCache& cache) const {
  std::lock_guard lock(mu_);
  std::string out;
  header(out, "gtadoc_http_requests_total", "counter",
         "HTTP requests by endpoint and status code.");
  for (const auto& [k, v] : requests_)
    out += fmt::format("gtadoc_http_requests_total{{endpoint=\"{}\",code=\"{}\"}} {}\n", k.first,
                       k.second, v);
  header(out, "gtadoc_queries_total", "counter", "Queries by task and HTTP status.");
  for (const auto& [k, v] : queries_)
    out +=
        fmt::format("gtadoc_queries_total{{task=\"{}\",code=\"{}\"}} {}\n", k.first, k.second, v);
  auto histogram = [&](const char* name, const char* help,
                       const std::map<std::string, Histogram>& hs) {
    header(out, name, "histogram", help);
    for (const auto& [task, h] : hs) {
      for (size_t i = 0; i < kBuckets.size(); ++i)
        out += fmt::format("{}_bucket{{task=\"{}\",le=\"{}\"}} {}\n", name, task, kBuckets[i],
                           h.buckets[i]);
      out += fmt::format("{}_bucket{{task=\"{}\",le=\"+Inf\"}} {}\n", name, task, h.count);
      out += fmt::format("{}_sum{{task=\"{}\"}} {}\n", name, task, h.sum);
      out += fmt::format("{}_count{{task=\"{}\"}} {}\n", name, task, h.count);
    }
  };
  histogram("gtadoc_query_duration_seconds",
            "Latency of successful queries, from the request to the last byte rendered, cached or "
            "not.",
            latency_);
  histogram("gtadoc_cached_query_duration_seconds",
            "Latency of successful queries answered from the result cache.", cached_latency_);
  header(out, "gtadoc_queue_depth", "gauge", "Queries waiting for the cluster.");
  out += fmt::format("gtadoc_queue_depth {}\n", queue_depth_.load());
  header(out, "gtadoc_queue_capacity", "gauge", "Queries that may wait before 503s.");
  out += fmt::format("gtadoc_queue_capacity {}\n", queue_capacity_.load());
  header(out, "gtadoc_queries_in_flight", "gauge", "Queries running on the cluster (0 or 1).");
  out += fmt::format("gtadoc_queries_in_flight {}\n", in_flight_.load());
  header(out, "gtadoc_cache_hits_total", "counter", "Queries answered from the result cache.");
  out += fmt::format("gtadoc_cache_hits_total {}\n", cache_hits_.load());
  header(out, "gtadoc_cache_misses_total", "counter", "Queries the cache could not answer.");
  out += fmt::format("gtadoc_cache_misses_total {}\n", cache_misses_.load());
  header(out, "gtadoc_cache_bytes", "gauge", "Bytes of response bodies in the result cache.");
  out += fmt::format("gtadoc_cache_bytes {}\n", cache.bytes());
  header(out, "gtadoc_cache_entries", "gauge", "Responses in the result cache.");
  out += fmt::format("gtadoc_cache_entries {}\n", cache.entries());
  header(out, "gtadoc_cache_capacity_bytes", "gauge", "Bound of the result cache.");
  out += fmt::format("gtadoc_cache_capacity_bytes {}\n", cache.capacity());
  header(out, "gtadoc_http_responses_cut_total", "counter",
         "Responses cut because the client did not read them in time or went away.");
  out += fmt::format("gtadoc_http_responses_cut_total {}\n", responses_cut_.load());
  header(out, "gtadoc_http_connections_evicted_total", "counter",
         "Idle or slow connections closed to make room for new ones at --max-connections.");
  out += fmt::format("gtadoc_http_connections_evicted_total {}\n", connections_evicted_.load());
  header(out, "gtadoc_response_spilled_bytes_total", "counter",
         "Response bytes kept in temporary files while their clients read them.");
  out += fmt::format("gtadoc_response_spilled_bytes_total {}\n", bytes_spilled_.load());
  header(out, "gtadoc_doc_cache_bytes", "gauge",
         "Bytes of shard grammars rank 0 keeps for GET /v1/docs.");
  out += fmt::format("gtadoc_doc_cache_bytes {}\n", doc_cache_bytes_.load());
  header(out, "gtadoc_doc_cache_entries", "gauge", "Shard grammars kept for GET /v1/docs.");
  out += fmt::format("gtadoc_doc_cache_entries {}\n", doc_cache_entries_.load());
  header(out, "gtadoc_doc_cache_capacity_bytes", "gauge",
         "Bound of the shard grammars kept for GET /v1/docs (--doc-cache-bytes).");
  out += fmt::format("gtadoc_doc_cache_capacity_bytes {}\n", doc_cache_capacity_.load());
  header(out, "gtadoc_doc_cache_hits_total", "counter",
         "Documents whose shard grammar was in the cache.");
  out += fmt::format("gtadoc_doc_cache_hits_total {}\n", doc_cache_hits_.load());
  header(out, "gtadoc_doc_cache_misses_total", "counter",
         "Documents whose shard grammar had to be read.");
  out += fmt::format("gtadoc_doc_cache_misses_total {}\n", doc_cache_misses_.load());
  header(out, "gtadoc_resident_bytes", "gauge", "Grammar bytes resident per rank.");
  for (size_t r = 0; r < resident_.size(); ++r)
    out += fmt::format("gtadoc_resident_bytes{{rank=\"{}\"}} {}\n", r, resident_[r]);
  header(out, "gtadoc_search_index_bytes", "gauge",
         "Host memory of each rank's phrase-search indexes (0 until built).");
  for (size_t r = 0; r < search_index_.size(); ++r)
    out += fmt::format("gtadoc_search_index_bytes{{rank=\"{}\"}} {}\n", r, search_index_[r]);
  header(out, "gtadoc_gpu_memory_used_bytes", "gauge",
         "Device memory in use on each rank's GPU (0 without a GPU).");
  for (size_t r = 0; r < gpu_used_.size(); ++r)
    out += fmt::format("gtadoc_gpu_memory_used_bytes{{rank=\"{}\"}} {}\n", r, gpu_used_[r]);
  header(out, "gtadoc_gpu_memory_total_bytes", "gauge",
         "Device memory of each rank's GPU (0 without a GPU).");
  for (size_t r = 0; r < gpu_total_.size(); ++r)
    out += fmt::format("gtadoc_gpu_memory_total_bytes{{rank=\"{}\"}} {}\n", r, gpu_total_[r]);
  return out;
}

}  // namespace gtadoc
