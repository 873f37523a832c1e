// `gtadoc serve`: the resident query service (docs/REFERENCE.md §8). Every rank opens the archive
// resident (its shards loaded once into its engine: GPU memory with the GPU engine). Rank 0 runs
// the HTTP front (http_server.h) and the executor: it takes queued queries one at a time,
// broadcasts each to every rank, and all ranks run it through the same pipeline as `gtadoc run`
// (coordinator/pipeline); rank 0 renders the rows into the response as they come, its own slice
// first, then each other rank's (sent piece by piece). The response waits for its client in
// memory (in a temporary file beyond a bound; response_pipe.h) and the executor goes on with the
// next query: the client's connection writes it at the client's pace, so no client holds the
// cluster. A query that fails on any rank gets a 4xx/5xx and the service goes on. SIGTERM/SIGINT:
// stop accepting, answer what is queued, stop every rank, exit 0.
#pragma once

#include <cstdint>
#include <string>

namespace gtadoc {

class Comm;

struct ServeOptions {
  std::string archive;
  std::string listen = "127.0.0.1:8080";  ///< HOST:PORT ([v6]:PORT); port 0 = any free port
  std::string token_file;                 ///< required for a non-loopback listen
  std::string engine = "auto";
  unsigned threads = 0;                 ///< CPU threads per rank (0 = default)
  unsigned http_threads = 2;            ///< rank 0's I/O threads
  size_t queue = 64;                    ///< queries that may wait; more get 503
  uint64_t cache_bytes = 256ull << 20;  ///< result cache bound (0 = off)
  uint64_t max_body = 1ull << 20;       ///< request body limit (413 above)
  double read_timeout_s = 10;           ///< a whole request must arrive within this (408)
  double header_timeout_s = 5;          ///< a new or idle connection's request headers, too
  double write_timeout_s = 10;          ///< a client accepting no response byte this long is cut
  double query_timeout_s = 60;          ///< from arrival to the last byte of the response
  size_t max_connections = 1024;
  uint64_t gpu_memory_limit = 0;  ///< --gpu-memory-limit BYTES (0: not given; worker/engine.h)
  /// Rank 0's cache of shard grammars for GET /v1/docs (0 = off; documents.h).
  uint64_t doc_cache_bytes = 256ull << 20;
};

/// Runs the service until SIGTERM/SIGINT (collective). Throws UsageError for bad options.
void serve(Comm& comm, const ServeOptions& options);

}  // namespace gtadoc
