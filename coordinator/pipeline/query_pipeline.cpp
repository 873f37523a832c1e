#include "coordinator/pipeline/query_pipeline.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <string>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "cluster/device_shuffle.h"
#include "cluster/nccl_comm.h"
#include "cluster/partition.h"
#include "cluster/reduce.h"
#include "cluster/shuffle.h"
#include "common/cpus.h"
#include "common/error.h"
#include "common/parallel.h"
#include "common/settings.h"
#include "common/timer.h"

namespace gtadoc {

namespace {

constexpr int kStreamTag = 7301;

/// Where a record's words and document sit in its key (key_layout in worker/query.h).
struct KeyFields {
  uint32_t word_begin = 0, word_end = 0;  ///< words [word_begin, word_end)
  int doc = -1;                           ///< position of the document, -1 = none
};

KeyFields key_fields(const QueryOptions& q) {
  switch (q.task) {
    case Task::kWordCount:
    case Task::kSort:
      return {0, 1, -1};
    case Task::kInvertedIndex:
      return {0, 1, 1};
    case Task::kTermVector:
      return {1, 2, 0};
    case Task::kSequenceCount:
      return q.per_doc ? KeyFields{1, q.n + 1, 0} : KeyFields{0, q.n, -1};
    case Task::kRankedInvertedIndex:
      return {0, q.n, static_cast<int>(q.n)};
  }
  return {};
}

/// Keeps the records the filter selects, in order (in place).
void apply_filter(RecordBatch& r, const QueryOptions& q, const PointFilter& f) {
  if (!f.any()) return;
  const KeyFields k = key_fields(q);
  const uint32_t w = r.width;
  size_t out = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const uint32_t* key = r.keys.data() + i * w;
    bool keep = true;
    if (!f.docs.empty() && k.doc >= 0) {
      const uint32_t d = key[k.doc];
      keep = d < f.docs.size() && f.docs[d] != 0;
    }
    if (keep && f.words_given) {
      keep = false;
      for (uint32_t p = k.word_begin; p < k.word_end && !keep; ++p)
        keep = std::binary_search(f.words.begin(), f.words.end(), key[p]);
    }
    if (!keep) continue;
    if (out != i) {
      std::copy(key, key + w, r.keys.data() + out * w);
      r.counts[out] = r.counts[i];
    }
    ++out;
  }
  r.keys.resize(out * w);
  r.counts.resize(out);
}

/// The sequence keys of `r` (n values from `off`) rewritten into their ranks in `order`.
void keys_to_ranks(RecordBatch& r, const SequenceOrder& order, uint32_t off, uint32_t n,
                   unsigned threads) {
  const uint32_t w = r.width;
  GTADOC_EXPECTS(off + n <= w, "sequence keys wider than the records");
  parallel_for(r.size() / 4096 + 1, threads, [&](size_t b) {
    for (size_t i = b * 4096; i < std::min(r.size(), (b + 1) * 4096); ++i)
      order.to_ranks(r.keys.data() + i * w + off);
  });
}

/// How far a rank other than 0 renders ahead of rank 0's reading (stream_query_result): rank 0
/// takes the other ranks' slices only after streaming its own, and a slice rendered meanwhile
/// then goes at the speed of MPI instead of the renderer's.
constexpr uint64_t kRenderAheadBytes = uint64_t{256} << 20;

/// How far rank 0 receives the other ranks' pieces ahead of streaming them
/// (stream_query_result).
constexpr uint64_t kReceiveAheadBytes = uint64_t{1} << 30;

/// Byte pieces handed from one thread to another in order, at most `limit` bytes queued (or one
/// piece, whatever its size).
template <class Piece>
class PieceQueue {
 public:
  explicit PieceQueue(uint64_t limit) : limit_(limit) {}
  void push(Piece piece) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return queue_.empty() || queued_ + piece.size() <= limit_; });
    queued_ += piece.size();
    queue_.push_back(std::move(piece));
    cv_.notify_all();
  }
  /// The next piece; nothing once closed and empty.
  std::optional<Piece> pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !queue_.empty() || closed_; });
    if (queue_.empty()) return std::nullopt;
    Piece piece = std::move(queue_.front());
    queue_.pop_front();
    queued_ -= piece.size();
    cv_.notify_all();
    return piece;
  }
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Piece> queue_;
  uint64_t queued_ = 0, limit_;
  bool closed_ = false;
};

/// Renders on a worker thread and hands the pieces to `fn` on the calling thread (MPI calls
/// must come from the thread that initialized MPI), up to kRenderAheadBytes (at least one
/// piece) rendered and not yet handed over.
void render_on_this_thread(const RowRenderer& renderer, uint64_t chunk_bytes,
                           const std::function<void(const char*, size_t)>& fn) {
  PieceQueue<std::string> pieces(kRenderAheadBytes);
  std::exception_ptr failure;
  std::thread worker([&] {
    try {
      renderer.render(chunk_bytes,
                      [&](const char* data, size_t size) { pieces.push(std::string(data, size)); });
    } catch (...) {
      failure = std::current_exception();
    }
    pieces.close();
  });
  std::exception_ptr sink_failure;
  while (std::optional<std::string> piece = pieces.pop()) {
    if (sink_failure) continue;  // drained, not handed over
    try {
      fn(piece->data(), piece->size());
    } catch (...) {
      sink_failure = std::current_exception();
    }
  }
  worker.join();
  if (failure) std::rethrow_exception(failure);
  if (sink_failure) std::rethrow_exception(sink_failure);
}

bool device_row_order_wanted() {
  return settings::flag("GTADOC_DEVICE_ROW_ORDER");
}

/// Records on a GPU reduced there, then downloaded. With `rows` (the owner's records of that
/// query) they are also put in row order there when the task's rows are count-ordered
/// (count_order_group; `ordered` says so), or else, for a count-ordered --top, cut to the
/// candidates for the first rows. Out of device memory, they come back as they are: the host
/// reduce and row plan that follow do the rest.
RecordBatch reduce_and_download(DeviceRecords& records, const QueryOptions* rows, bool& ordered) {
  ordered = false;
  try {
    records.reduce();
    if (rows != nullptr) {
      const std::optional<uint32_t> group = count_order_group(*rows);
      const uint64_t top = count_ordered(*rows) ? rows->top : 0;
      if (group.has_value() && device_row_order_wanted())
        ordered = records.order_by_count(*group, top);
      if (!ordered && top > 0) {
        records.keep_top_counts(top);
      }
    }
  } catch (const ResourceError& e) {
    spdlog::warn("reduce on the GPU: {}; reducing on the host", e.what());
  }
  return records.download();
}

/// Moves records partitioned by owner between the ranks' GPUs: over NCCL when the session has a
/// communicator, else over MPI staged through host memory (cluster/device_shuffle.h).
std::unique_ptr<DeviceRecords> move_device_records(Comm& comm, NcclComm* nccl,
                                                   DeviceRecords& records,
                                                   std::span<const uint64_t> offsets) {
  if (nccl != nullptr) return shuffle_device_records(comm, *nccl, records, offsets);
  return shuffle_device_records_mpi(comm, records, offsets);
}

/// The count-ordered row exchange of place_rank_rows, between GPUs: each owner reduces and
/// orders its records on its GPU (cut to --top), the ranks agree on (count, key) splitters
/// (choose_row_splitters, samples read from the GPUs), the ranges move between the GPUs
/// (move_device_records), and each rank
/// reduces and orders what it received, so that rank r holds the r-th range of the global
/// order. Collective. Returns false, before anything moved, when some rank could not order on
/// its GPU (the records are then reduced there, perhaps reordered: the caller's usual path
/// follows); `ordered` says whether this rank's received rows are in row order (else its host
/// orders them, out of device memory).
bool exchange_rows_on_gpus(Comm& comm, NcclComm* nccl, std::unique_ptr<DeviceRecords>& records,
                           const QueryOptions& q, const SequenceOrder* keys_order, bool& ordered) {
  auto reduce_and_order = [&] {
    bool ok = false;
    run_collectively(comm, [&] {
      try {
        records->reduce();
        ok = records->order_by_count(0, q.top);
      } catch (const ResourceError& e) {
        spdlog::warn("row order on the GPU: {}; ordering on the host", e.what());
      }
    });
    return ok;
  };
  ordered = false;
  if (!comm.allreduce_and(reduce_and_order())) return false;
  const CountKeyLess less{q.task == Task::kSequenceCount ? keys_order : nullptr};
  const RecordBatch splitters = choose_row_splitters(
      comm, records->size(), records->width(),
      [&](std::span<const uint64_t> at) { return records->rows_at(at); }, less);
  std::vector<uint64_t> offsets;
  run_collectively(comm, [&] { offsets = records->count_order_cuts(splitters); });
  records = move_device_records(comm, nccl, *records, offsets);
  ordered = reduce_and_order();
  return true;
}

}  // namespace

bool device_records_wanted() {
  return settings::flag("GTADOC_DEVICE_RECORDS");
}

void check_filter_docs(const QuerySpec& spec, const Manifest& manifest) {
  if (!spec.docs_given) return;
  QuerySpec docs_only = spec;
  docs_only.words.clear();
  docs_only.words_given = false;
  resolve_filter(docs_only, manifest, Normalization{});
}

PointFilter resolve_filter(const QuerySpec& spec, const Manifest& manifest,
                           const Normalization& norm) {
  PointFilter f;
  if (spec.words_given) {
    f.words_given = true;
    for (const std::string& word : spec.words) {
      const std::string w = normalize_word(word, spec.q.lowercase, spec.q.alnum);
      if (w.empty()) continue;
      const WordId id = norm.dict.find(w);
      if (id < norm.dict.size()) f.words.push_back(id);
    }
    std::sort(f.words.begin(), f.words.end());
    f.words.erase(std::unique(f.words.begin(), f.words.end()), f.words.end());
  }
  if (spec.docs_given) {
    const size_t docs = manifest.docs.size();
    f.docs.assign(std::max<size_t>(1, docs), 0);
    for (const std::string& name : spec.docs) {
      const DocId d = manifest.doc_names.find(name);
      if (d >= docs) throw UsageError("\"docs\": no document named '" + name + "' in the archive");
      f.docs[d] = 1;
    }
    for (uint64_t id : spec.doc_ids) {
      if (id >= docs)
        throw UsageError("\"docs\": document id " + std::to_string(id) + " is out of range (the " +
                         "archive has " + std::to_string(docs) + " documents)");
      f.docs[id] = 1;
    }
  }
  return f;
}

std::unique_ptr<QueryResult> run_query(Comm& comm, ArchiveSession& session, const QuerySpec& spec,
                                       QueryTimings& t, PointLookup* lookup) {
  auto result = std::make_unique<QueryResult>();
  QueryResult& res = *result;
  res.q = spec.q;
  res.q.threads = session.threads();
  res.format = spec.format;
  const QueryOptions& q = res.q;
  const unsigned threads = q.threads;
  const Manifest& m = session.manifest();

  RecordBatch local;
  PointFilter filter;
  // With the GPU engine the records stay on the GPU until they are reduced (device_records_wanted):
  // with one rank straight away; with several they move between the GPUs (NCCL, or MPI staged
  // through host memory: reduced on this rank's GPU first, fewer records to move) and their
  // owner reduces them on its GPU. Point filters are applied on the host, so a filtered query
  // takes the host path, and so does a job where some rank has no device records (a mixed job:
  // --engine auto on nodes with and without GPUs) or GTADOC_SHUFFLE=host.
  std::unique_ptr<DeviceRecords> on_device;
  NcclComm* nccl = nullptr;
  std::optional<RecordBatch> looked_up;
  bool host_ranked = false;  // collect rewrote the host records' sequence keys into ranks
  const bool may_look_up =
      lookup != nullptr && spec.words_given && settings::word("GTADOC_POINT_LOOKUP") != "traversal";
  run_collectively(comm, [&] {
    res.norm = &session.normalization(q.lowercase, q.alnum);
    filter = resolve_filter(spec, m, *res.norm);
    if (may_look_up) {
      Timer lookup_timer;
      looked_up = lookup->records(q, *res.norm, filter.words, threads);
      t.traversal += lookup_timer.seconds();
    }
  });
  // The index answers only if it can on every rank (else every rank traverses).
  const bool indexed = may_look_up && comm.allreduce_and(looked_up.has_value());
  run_collectively(comm, [&] {
    if (indexed) {
      local = std::move(*looked_up);
      apply_filter(local, q, filter);  // the documents asked for
      return;
    }
    const bool device = !filter.any() && session.engine_name() == "gpu" && device_records_wanted();
    if (device && comm.size() > 1) {
      Timer wait;  // NCCL's set-up, when the shards loaded faster
      nccl = session.nccl();
      t.init += wait.seconds();
    }
    // Sequence keys into byte-order ranks (below) as the records are collected, before the CPU
    // engine's batches combine: they then reach the reduce as a few sorted runs, merged rather
    // than sorted again. Not with a filter, which compares word ids.
    ArchiveSession::KeyRewrite to_ranks;
    if (is_sequence_task(q.task) && !filter.any()) {
      to_ranks = [&](RecordBatch& b) {
        const SequenceOrder& order = session.sequence_order(q.lowercase, q.alnum, q.n);
        if (!order.identity()) keys_to_ranks(b, order, q.per_doc ? 1 : 0, q.n, threads);
        host_ranked = true;
      };
    }
    local = session.collect(q, *res.norm, t, device ? &on_device : nullptr,
                            to_ranks ? &to_ranks : nullptr);
    apply_filter(local, q, filter);
  });
  // With NCCL every rank holds device records; otherwise a job may mix engines (--engine auto on
  // nodes with and without GPUs), so the collectives below are called on every rank.
  Timer shuffle_timer;
  const KeyLayout layout = key_layout(q);
  const uint32_t parts = static_cast<uint32_t>(comm.size());
  // Sequence rows order by their joined bytes. When that is not the word-id order (a word holds
  // a byte below 0x20), n-grams are rewritten into ranks here, once, so that every later stage
  // (range partitioning, reduce, row order) orders integer tuples; rendering maps them back.
  std::optional<SequenceOrder> ranks_order;
  const SequenceOrder* keys_order = nullptr;
  if (is_sequence_task(q.task)) {
    res.words_order = &session.sequence_order(q.lowercase, q.alnum, q.n);
    if (res.words_order->identity()) {
      keys_order = res.words_order;
    } else {
      res.ranked_keys = true;
      ranks_order = SequenceOrder::of_ranks(q.n);
      keys_order = &*ranks_order;
      const uint32_t off = q.per_doc ? 1 : 0;
      const SequenceOrder& order = *res.words_order;
      run_collectively(comm, [&] {  // on every rank: a mixed job's CPU ranks hold none
        if (on_device != nullptr) on_device->map_keys(off, q.n - 1, order.space_ranks());
      });
      if (!host_ranked) keys_to_ranks(local, order, off, q.n, threads);
    }
  }
  // Whether the records move between the GPUs (collective: every rank must hold device records).
  const bool device_shuffle =
      parts > 1 && comm.allreduce_and(on_device != nullptr) && device_shuffle_wanted();
  if (device_shuffle && nccl == nullptr) {  // over MPI: reduced here first, fewer records to move
    Timer step;
    run_collectively(comm, [&] {
      try {
        on_device->reduce();
      } catch (const ResourceError& e) {
        spdlog::warn("reduce on the GPU before the shuffle: {}; shuffling unreduced", e.what());
      }
    });
    spdlog::debug("local reduce on the GPU: {} records in {:.3f}s", on_device->size(),
                  step.seconds());
  }
  if (parts > 1 && !device_shuffle) {  // the host shuffle follows
    Timer step;
    run_collectively(comm, [&] {  // on every rank: a mixed job's CPU ranks hold none
      bool ordered = false;
      if (on_device != nullptr) local = reduce_and_download(*on_device, nullptr, ordered);
    });
    if (on_device != nullptr)
      spdlog::debug("local reduce on the GPU and download: {} records in {:.3f}s", local.size(),
                    step.seconds());
    on_device.reset();
  }
  t.records += on_device != nullptr ? on_device->size() : local.size();
  std::vector<uint32_t> splitters;
  RecordBatch owned;
  std::unique_ptr<DeviceRecords> owned_on_device;
  if (parts == 1) {  // one owner: nothing to partition or move
    owned = std::move(local);
    owned_on_device = std::move(on_device);
  } else if (device_shuffle) {  // partitioned on the GPU, moved between the GPUs
    const uint64_t n = on_device->size();
    if (layout.range_partition) {
      std::vector<uint32_t> candidates;
      run_collectively(comm, [&] {
        candidates = on_device->strided_first_values(std::min<uint64_t>(n, kSplitterCandidates));
      });
      splitters = choose_range_splitters(comm, std::move(candidates), n, parts);
    }
    std::vector<uint64_t> offsets;
    Timer step;
    run_collectively(comm, [&] { offsets = on_device->partition(layout, parts, splitters); });
    const double partition_s = step.seconds();
    const uint32_t me = static_cast<uint32_t>(comm.rank());
    t.shuffle_bytes += (n - (offsets[me + 1] - offsets[me])) * shuffle_record_bytes(layout.width);
    owned_on_device = move_device_records(comm, nccl, *on_device, offsets);
    on_device.reset();
    spdlog::debug("device shuffle: {} records, partition {:.5f}s, {} {:.5f}s", n, partition_s,
                  nccl != nullptr ? "NCCL" : "MPI via host memory", step.seconds() - partition_s);
  } else {
    if (layout.range_partition) splitters = choose_range_splitters(comm, local, parts);
    PartitionedRecords partitioned = partition_records(local, layout, parts, splitters, threads);
    local = RecordBatch{};
    const uint32_t me = static_cast<uint32_t>(comm.rank());
    t.shuffle_bytes += (partitioned.records.size() - partitioned.part_size(me)) *
                       shuffle_record_bytes(partitioned.records.width);
    owned = shuffle_records(comm, partitioned);
  }
  t.shuffle += shuffle_timer.seconds();

  Timer merge_timer;
  bool ordered = false;    // the owner's records are in row order (on the GPU)
  bool exchanged = false;  // count-ordered rows: already this rank's range (on the GPUs)
  if (owned_on_device != nullptr && device_shuffle && count_ordered(q) &&
      device_row_order_wanted()) {
    exchanged = exchange_rows_on_gpus(comm, nccl, owned_on_device, q, keys_order, ordered);
    if (exchanged) {
      run_collectively(comm, [&] { owned = owned_on_device->download(); });
      owned_on_device.reset();
      spdlog::debug("row exchange on the GPUs and download: {} rows in {:.3f}s", owned.size(),
                    merge_timer.seconds());
    }
  }
  if (owned_on_device != nullptr) {  // the owner's reduce on its GPU, then the download
    run_collectively(comm, [&] { owned = reduce_and_download(*owned_on_device, &q, ordered); });
    owned_on_device.reset();
    spdlog::debug("reduce{} on the GPU and download: {} records in {:.3f}s",
                  ordered ? " and row order" : "", owned.size(), merge_timer.seconds());
  }
  if (!ordered) {
    reduce_records(owned, threads);
    spdlog::debug("reduce: {} records in {:.3f}s", owned.size(), merge_timer.seconds());
  }
  // term-vector: every document of this rank's range gets a row, with words or without.
  const DocId num_docs = static_cast<DocId>(m.docs.size());
  DocId doc_begin = 0, doc_end = num_docs;
  if (q.task == Task::kTermVector && parts > 1) {
    const int r = comm.rank();
    doc_begin = r == 0 ? 0 : std::min(splitters[r - 1], num_docs);
    doc_end = r + 1 == comm.size() ? num_docs : std::min(splitters[r], num_docs);
    doc_end = std::max(doc_begin, doc_end);
  }
  if (ordered) {
    RowPlan plan = plan_ordered_rows(owned, q, keys_order, threads);
    res.rows =
        place_rank_rows(comm, std::move(owned), std::move(plan), q, keys_order, threads, exchanged);
  } else {
    res.rows = plan_rank_rows(comm, std::move(owned), q, keys_order, doc_begin, doc_end, threads,
                              filter.docs.empty() ? nullptr : &filter.docs, exchanged);
  }
  {
    // The words, read on a thread of their own since the manifest was opened, are needed from
    // here on (the rows); the wait is the part of that read the query did not hide.
    const Timer wait;
    const Dictionary& dict = res.norm->dict;
    if (dict.fetches_some() && q.task == Task::kWordCount) {
      // Only the rows' words (SessionOptions::words_on_demand): read alone.
      std::vector<WordId> ids;
      ids.reserve(res.rows.plan.rows());
      for (uint64_t row = 0; row < res.rows.plan.rows(); ++row)
        ids.push_back(res.rows.records.keys[res.rows.plan.record_at(row) * res.rows.records.width]);
      dict.fetch(ids);
      spdlog::debug("{} words of the dictionary read for the rows", ids.size());
    } else {
      (void)dict.bytes();
    }
    if (wait.seconds() >= 1e-3) spdlog::debug("waited {:.3f}s for the dictionary", wait.seconds());
  }
  t.merge += merge_timer.seconds();
  res.docs = &session.doc_text(q, res.format);
  return result;
}

uint64_t write_query_result(Comm& comm, const QueryResult& result, const ResultTarget& target,
                            unsigned threads) {
  GTADOC_EXPECTS(result.format != OutputFormat::kNdjson, "ndjson is a service format");
  return write_result(comm, result.rows, result.context(), target, threads);
}

uint64_t stream_query_result(Comm& comm, const QueryResult& result, uint64_t chunk_bytes,
                             const std::function<bool(const char*, size_t)>& sink, unsigned threads,
                             const std::function<void(uint64_t)>& expect) {
  const Timer timer;  // for the -vv timeline of the stream
  const RenderContext ctx = result.context();
  const RowRenderer renderer(result.rows.records, result.rows.plan, ctx, result.rows.first_row == 0,
                             threads);
  const uint64_t bytes = renderer.bytes();
  const double planned = timer.seconds();
  const std::string_view trailer = json_trailer(result.format, result.rows.total_rows);
  uint64_t total = trailer.size();  // every rank's slice (one small collective) and the trailer
  for (uint64_t b : comm.allgather(bytes)) total += b;
  if (comm.rank() == 0 && expect) expect(total);
  if (comm.rank() != 0) {
    // Pieces go to rank 0 one at a time (MPI_Send returns when rank 0 has taken it, for large
    // pieces), then an empty piece ends this rank's slice.
    double sending = 0;
    render_on_this_thread(renderer, chunk_bytes, [&](const char* data, size_t size) {
      const Timer send;
      comm.send_bytes({reinterpret_cast<const uint8_t*>(data), size}, 0, kStreamTag);
      sending += send.seconds();
    });
    comm.send_bytes({}, 0, kStreamTag);
    spdlog::debug(
        "stream: slice of {} bytes planned in {:.3f}s, rendered and sent by {:.3f}s ({:.3f}s in "
        "sends), {} threads, {} CPUs in this thread's affinity",
        bytes, planned, timer.seconds(), sending, threads, affinity_cpus());
    return bytes;
  }
  bool wanted = true;
  auto give = [&](const char* data, size_t size) {
    if (wanted && size > 0) wanted = sink(data, size);
  };
  // A giver thread streams this rank's slice, then the other ranks' pieces in order; meanwhile
  // this thread (MPI's) receives those pieces, up to kReceiveAheadBytes ahead of the giver, so
  // that moving the other slices between processes overlaps streaming this one.
  PieceQueue<std::vector<uint8_t>> remote(kReceiveAheadBytes);
  std::exception_ptr failure;
  double own_done = 0, received = 0;
  std::thread giver([&] {
    try {
      renderer.render(chunk_bytes, give);
    } catch (...) {
      failure = std::current_exception();
    }
    own_done = timer.seconds();
    while (std::optional<std::vector<uint8_t>> piece = remote.pop()) {
      if (failure) continue;  // drained, not given
      try {
        give(reinterpret_cast<const char*>(piece->data()), piece->size());
      } catch (...) {
        failure = std::current_exception();
      }
    }
  });
  try {
    for (int r = 1; r < comm.size(); ++r) {
      for (;;) {
        std::vector<uint8_t> piece = comm.recv_bytes(r, kStreamTag);
        if (piece.empty()) break;
        remote.push(std::move(piece));
      }
    }
    received = timer.seconds();
  } catch (...) {
    remote.close();
    giver.join();
    throw;
  }
  remote.close();
  giver.join();
  if (failure) std::rethrow_exception(failure);
  give(trailer.data(), trailer.size());
  spdlog::debug(
      "stream: {} bytes, this rank's {} planned in {:.3f}s and given by {:.3f}s, the other ranks' "
      "received by {:.3f}s, all given by {:.3f}s; {} threads, {} CPUs in this thread's affinity",
      total, bytes, planned, own_done, received, timer.seconds(), threads, affinity_cpus());
  return total;
}

}  // namespace gtadoc
