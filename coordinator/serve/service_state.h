// What the HTTP front (http_server.h) and the query executor (service.cpp) of `gtadoc serve`
// share: limits, the token, the result cache, the metrics, the open connections, the memory of
// responses waiting for their clients, and the bounded queue of queries waiting for the
// cluster. One query runs on the cluster at a time; the executor takes jobs in order and
// renders each response into the job's pipe (response_pipe.h), never touching a socket, while
// the connection's session writes the pipe's bytes to its client.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "coordinator/pipeline/query_spec.h"
#include "coordinator/serve/connection_table.h"
#include "coordinator/serve/metrics.h"
#include "coordinator/serve/response_pipe.h"
#include "coordinator/serve/result_cache.h"
#include "formats/archive.h"

namespace gtadoc {

using Clock = std::chrono::steady_clock;

class DocumentStore;

struct QueryJob {
  /// POST /v1/search (`search` holds the request; spec.format its format) or POST /v1/query.
  bool is_search = false;
  SearchSpec search;
  QuerySpec spec;
  std::string body;  ///< the request body (every rank parses the same text)
  std::string key;   ///< query_key(spec)
  std::string etag;
  /// Where the executor renders the whole response (and closes it); the connection's session
  /// writes it to the client.
  std::shared_ptr<ResponsePipe> pipe;
  bool keep_alive = true;
  bool http10 = false;  ///< an HTTP/1.0 client: no chunked encoding, close after the response
  bool fresh = false;   ///< Cache-Control: no-cache: run it even when the cache has the answer
  Clock::time_point received, deadline;
  const char* endpoint() const { return is_search ? "/v1/search" : "/v1/query"; }
  /// The metrics' task label.
  std::string task() const { return is_search ? "search" : task_name(spec.q.task); }
};

/// A bounded FIFO of jobs. push() fails when full or closed; pop() waits for a job and returns
/// null once the queue is closed and empty.
class JobQueue {
 public:
  explicit JobQueue(size_t capacity) : capacity_(capacity) {}
  enum class Push { kOk, kFull, kClosed };
  Push push(std::shared_ptr<QueryJob> job) {
    std::lock_guard lock(mu_);
    if (closed_) return Push::kClosed;
    if (jobs_.size() >= capacity_) return Push::kFull;
    jobs_.push_back(std::move(job));
    cv_.notify_one();
    return Push::kOk;
  }
  std::shared_ptr<QueryJob> pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !jobs_.empty() || closed_; });
    if (jobs_.empty()) return nullptr;
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
  }
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  size_t depth() const {
    std::lock_guard lock(mu_);
    return jobs_.size();
  }
  size_t capacity() const { return capacity_; }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<QueryJob>> jobs_;
  size_t capacity_;
  bool closed_ = false;
};

struct ServiceState {
  ServiceState(size_t queue_capacity, uint64_t cache_bytes, size_t max_connections,
               uint64_t response_memory)
      : queue(queue_capacity),
        cache(cache_bytes, std::max<uint64_t>(cache_bytes / 4, 1)),
        connection_table(max_connections),
        response_memory_shared(4 * response_memory),
        response_memory(response_memory) {}

  JobQueue queue;
  ResultCache cache;
  Metrics metrics;
  ConnectionTable connection_table;
  ResponseMemory response_memory_shared;  ///< all responses waiting for their clients
  uint64_t response_memory;               ///< one response's bytes in memory; the rest spills
  std::string spill_dir;                  ///< where responses spill ($TMPDIR, else /tmp)
  const Manifest* manifest = nullptr;     ///< of the resident archive (immutable while serving)
  DocumentStore* documents = nullptr;     ///< GET /v1/docs (rank 0's; documents.h)
  std::string token;                      ///< empty = no authentication (loopback only)
  std::string archive_json;               ///< GET /v1/archive
  std::string etag_prefix;                ///< the archive's id
  uint64_t max_body = 1 << 20;
  std::chrono::milliseconds read_timeout{10000}, query_timeout{60000};
  std::chrono::milliseconds header_timeout{5000}, write_timeout{10000};
  std::atomic<size_t> connections{0};  ///< open connections (sessions still running)
  /// Responses being written or waiting for the executor (the drain at shutdown waits for 0).
  std::atomic<size_t> responses_writing{0};
  std::atomic<bool> draining{false};
};

/// The ETag of a query's response: the archive id and a hash of the normalized query.
std::string query_etag(const ServiceState& state, const std::string& key);
/// A JSON error body: {"error": message, "status": code}.
std::string error_body(int status, const std::string& message);
/// Content type of a format.
const char* content_type(OutputFormat f);

}  // namespace gtadoc
