// One query through the pipeline, on every rank: this rank's records (ArchiveSession::collect)
// -> point filters -> sequence keys in byte order -> partition -> shuffle -> reduce at the owner
// -> this rank's slice of the rows (cluster/rows) -> bytes, written to a file / parts / standard
// output (gtadoc run) or streamed to rank 0 in order (gtadoc serve). The same code answers both,
// so the service gives the same bytes as `gtadoc run`.
// With the GPU engine the records stay in GPU memory until the owner has reduced them there
// (worker/device_records.h): sequence ranks, partitioning and the reduce run on the device and,
// between ranks, NCCL moves them (cluster/nccl_comm.h; MPI when use_nccl_shuffle says so, and
// then the records come back to the host before the shuffle). Either way the bytes are the same.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cluster/rows/rank_rows.h"
#include "cluster/rows/render.h"
#include "cluster/rows/result_writer.h"
#include "cluster/rows/sequence_order.h"
#include "coordinator/pipeline/archive_session.h"
#include "coordinator/pipeline/query_spec.h"

namespace gtadoc {

class Comm;

/// The point filters of a query resolved against the archive: the normalized word ids asked for
/// (ascending, distinct; those in no document left out) and a mask over document ids.
struct PointFilter {
  bool words_given = false;
  std::vector<WordId> words;
  std::vector<uint8_t> docs;  ///< empty: no filter
  bool any() const { return words_given || !docs.empty(); }
};

/// Where a filtered query may take its records from instead of a traversal (the service's
/// search indexes of its resident grammars: coordinator/search/point_lookup.h).
class PointLookup {
 public:
  virtual ~PointLookup() = default;
  /// This rank's records of `q` whose keys hold one of `words` (PointFilter::words; for n-grams,
  /// any of their words), or nullopt when a traversal should answer. Any rank's nullopt sends
  /// every rank to the traversal.
  virtual std::optional<RecordBatch> records(const QueryOptions& q, const Normalization& norm,
                                             const std::vector<WordId>& words,
                                             unsigned threads) = 0;
};

/// False when GTADOC_DEVICE_RECORDS=0: the GPU engine's records then come back to the host
/// right after the traversal and every later stage runs there (for comparisons).
bool device_records_wanted();

/// Checks that every document the filter names exists (UsageError otherwise).
void check_filter_docs(const QuerySpec& spec, const Manifest& manifest);

/// Resolves spec.words (normalized like the query) and spec.docs (names or ids). Unknown words
/// select nothing; an unknown document name or id is a UsageError.
PointFilter resolve_filter(const QuerySpec& spec, const Manifest& manifest,
                           const Normalization& norm);

/// A rank's slice of a query's result, ready to render.
class QueryResult {
 public:
  RankRows rows;
  QueryOptions q;
  OutputFormat format = OutputFormat::kTsv;
  // Owned by the session, which outlives its results.
  const Normalization* norm = nullptr;
  const SequenceOrder* words_order = nullptr;  ///< sequence tasks
  const DocText* docs = nullptr;
  bool ranked_keys = false;  ///< n-grams hold sequence ranks (words_order maps them back)

  RenderContext context() const {
    return {q, norm->dict, *docs, format, ranked_keys ? words_order : nullptr};
  }
};

/// Collective: runs `spec` (validated) on the session. Failures of a rank's shards are raised
/// on every rank (CollectiveError). With `lookup` (given on every rank or on none), a query
/// filtered by words takes its records from it when it can (GTADOC_POINT_LOOKUP): the same rows.
std::unique_ptr<QueryResult> run_query(Comm& comm, ArchiveSession& session, const QuerySpec& spec,
                                       QueryTimings& t, PointLookup* lookup = nullptr);

/// Collective: writes the result to a file, parts or standard output (result_writer.h).
uint64_t write_query_result(Comm& comm, const QueryResult& result, const ResultTarget& target,
                            unsigned threads);

/// Collective: the whole result's bytes, in order, reach `sink` on rank 0 in pieces of about
/// `chunk_bytes` (rank 0's slice, then each other rank's, sent over MPI piece by piece; while
/// rank 0 streams, the other ranks render up to 256 MiB ahead and rank 0 receives up to 1 GiB
/// of their pieces ahead; no rank holds more). `sink` runs on another thread than the caller's,
/// one call at a time, in order. When `sink` returns false the rest is still drained
/// (every rank finishes the collective) but no longer handed to it. `expect`, when given, is
/// called on rank 0 before the first piece with the bytes that will reach `sink` (all ranks'
/// slices and the JSON trailer), e.g. to reserve a copy. Returns the result's bytes.
uint64_t stream_query_result(Comm& comm, const QueryResult& result, uint64_t chunk_bytes,
                             const std::function<bool(const char*, size_t)>& sink, unsigned threads,
                             const std::function<void(uint64_t)>& expect = nullptr);

}  // namespace gtadoc
