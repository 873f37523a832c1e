// An archive opened on every rank for queries: the manifest, this rank's shards (balanced by
// size), the engine, and the normalizations queries asked for. Shared by `gtadoc run`, which
// opens it streaming (each query reads this rank's shards, loads them into the engine and drops
// them), and `gtadoc serve`, which opens it resident (the shards are loaded once, into GPU memory
// with the GPU engine, and every query runs on them).
//
// Guarantees: open() is collective and fails on every rank together (CollectiveError) or on
// none; collect() returns this rank's records of a query over all its shards (one
// Engine::run_batch over the shards loaded; streaming falls back to smaller batches when the
// engine runs out of memory while loading); nothing a query does changes what is resident.
// Resident shards run as one batch (the GPU engine builds a merged DAG of them once, ~0.3 s for
// 500 MB, and reuses it for every later query); streaming runs them one by one, since a single
// query would pay that merge for a gain of milliseconds.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/nccl_comm.h"
#include "cluster/rows/render.h"
#include "cluster/rows/sequence_order.h"
#include "coordinator/pipeline/shard_prefetch.h"
#include "formats/archive.h"
#include "worker/engine.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc {

class Comm;

struct SessionOptions {
  std::string archive;
  std::string engine = "auto";  ///< auto | gpu | cpu
  unsigned threads = 0;         ///< CPU threads of this rank (0 = default_threads)
  bool resident = false;        ///< load the shards at open() and keep them
  /// `--engine auto` for one query (run): the task and normalization it will need (the task also
  /// picks the shuffle between GPUs: use_nccl_shuffle). The service (resident) picks the GPU
  /// whenever one is visible.
  Task auto_task = Task::kWordCount;
  bool lowercase = false, alnum = false;
  bool progress = false;  ///< show this rank's shards loaded and traversed (rank 0 only)
  /// A shard whose grammar holds more symbols is loaded as document-range pieces of at most this
  /// many (formats/grammar_pieces.h); 0 = the environment's GTADOC_MAX_PIECE_SYMBOLS, or no bound.
  /// Independently, a shard the engine cannot load for lack of memory (ResourceError) is halved
  /// into pieces until they load.
  uint64_t max_piece_symbols = 0;
  /// The dictionary read only for the words a query's rows print (ManifestRead::kWordsOnDemand),
  /// read whole only if something else needs it: for one query whose rows are few (run of a
  /// word count with --top). Otherwise it is read whole on a thread beside the shards' reads.
  bool words_on_demand = false;
};

/// Seconds spent per stage of a query on this rank.
struct QueryTimings {
  double open = 0, load = 0, init = 0, traversal = 0, collect = 0, shuffle = 0, merge = 0,
         write = 0;
  std::vector<std::string> traversals;  ///< per shard of this rank: "top-down: reason"
  uint64_t records = 0;        ///< this rank's records entering the shuffle (after filters)
  uint64_t shuffle_bytes = 0;  ///< bytes this rank sent to other ranks in the shuffle
};

class ArchiveSession {
 public:
  /// Collective. Creates the engine while the manifest is read and (streaming) the first shard
  /// is read; resident: loads every shard of this rank.
  static std::unique_ptr<ArchiveSession> open(Comm& comm, const SessionOptions& options,
                                              QueryTimings* timings = nullptr);
  ~ArchiveSession();
  ArchiveSession(const ArchiveSession&) = delete;
  ArchiveSession& operator=(const ArchiveSession&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const Manifest& manifest() const { return *manifest_; }
  Engine& engine() { return *engine_; }
  const Engine& engine() const { return *engine_; }
  const std::string& engine_name() const { return engine_name_; }
  unsigned threads() const { return threads_; }
  const std::vector<uint32_t>& shards() const { return mine_; }
  bool resident() const { return options_.resident; }
  /// Grammar bytes (symbols) of the shards resident on this rank.
  uint64_t resident_bytes() const { return resident_bytes_; }
  /// Resident: each loaded shard or document-range piece of one, as (shard id, its grammar: the
  /// host copy every engine keeps), in load order.
  std::vector<std::pair<uint32_t, const ShardGrammar*>> resident_grammars() const;

  /// Resident shards: runs a word count over them on this rank and drops its records, so that
  /// what the engine builds on a first query and reuses (the GPU engine's merged DAG of the
  /// shards, its traversal estimates) is built now, not in a client's first query. Local to this
  /// rank (no collective, no fault injection); a failure is logged and left to the first query.
  /// Returns the seconds it took.
  double warm_up();
  /// Resident shards: starts building, on a thread of its own at background priority, shard by
  /// shard, what any first query would build for them (Engine::prepare_in_background: the CPU
  /// engine's full layouts, which a first query other than a word count would otherwise build,
  /// about 2x a later sequence count on 1 GB). Queries run beside it; each waits at most for
  /// one shard's build. Stopped (after the shard under way) when the session ends. A failure is
  /// logged and leaves the rest to the queries.
  void prepare_in_background();

  /// The dictionary normalized by these options, computed once per combination.
  const Normalization& normalization(bool lowercase, bool alnum);
  /// The byte order of n-grams of that normalization, computed once per combination and n.
  const SequenceOrder& sequence_order(bool lowercase, bool alnum, uint32_t n);
  /// Every document as `q`'s rows print it (ids or names, TSV or JSON), computed once per kind;
  /// an empty table when its rows show no documents (the names are then not read).
  const DocText& doc_text(const QueryOptions& q, OutputFormat format);

  /// Rewrites the keys of a batch of records in place (the pipeline's n-grams into byte-order
  /// ranks), called on the calling thread.
  using KeyRewrite = std::function<void(RecordBatch&)>;
  /// This rank's records of query `q` over all its shards (collective only through the
  /// failures: call inside run_collectively). Errors name the shard. With `on_device` and an
  /// engine that has a device, the records stay in its memory and come back there (the
  /// returned batch is then empty); other engines leave *on_device null. With `rewrite`, every
  /// record returned on the host has been through it, and the CPU engine's batches go through
  /// it before they are combined, so that they stay sorted runs in the rewritten order (the
  /// owner's reduce then merges them instead of sorting them all again).
  RecordBatch collect(const QueryOptions& q, const Normalization& norm, QueryTimings& t,
                      std::unique_ptr<DeviceRecords>* on_device = nullptr,
                      const KeyRewrite* rewrite = nullptr);
  /// The NCCL communicator between the ranks' GPUs, or null when the shuffle uses MPI
  /// (use_nccl_shuffle, decided at open, or a set-up that failed on some rank: then MPI from
  /// then on, with a warning). The first call waits for the set-up and is collective.
  NcclComm* nccl();

 private:
  ArchiveSession(Comm& comm, SessionOptions options);
  RecordBatch collect_resident(const QueryOptions& q, const Normalization& norm, QueryTimings& t);
  RecordBatch collect_streaming(const QueryOptions& q, const Normalization& norm, QueryTimings& t,
                                const KeyRewrite* rewrite);
  /// The grammar as it is loaded: whole, or document-range pieces (options_.max_piece_symbols).
  std::vector<PreparedShard> pieces_of(PreparedShard p) const;
  /// Pieces of the next prepared shards, with their shard ids.
  struct Window {
    std::vector<PreparedShard> pieces;
    std::vector<uint32_t> ids;
    size_t shards = 0;
  };
  /// Takes the next shards from the prefetcher (as many as the engine loads side by side, twice
  /// over: Engine::load_lanes) and splits them into pieces; a read's error names its shard.
  Window next_window(size_t limit);
  /// A streamed query's shards loaded by the CPU engine run as a batch once there are at least
  /// kBatchShardsPerThread per thread holding at least GTADOC_CPU_BATCH_SYMBOLS symbols together.
  static constexpr size_t kBatchShardsPerThread = 4;
  bool batch_due(const std::vector<std::unique_ptr<LoadedShard>>& loaded) const;
  /// Loads what the window holds side by side (Engine::load_prepared_many), appending the
  /// loaded shards to `loaded` and `ids` and removing them from the window: what stays there,
  /// unchanged and in order, failed for want of memory or was not tried (an earlier one
  /// failed), for the caller to load one by one. Other errors are thrown, naming the shard.
  void load_window(Window& w, std::vector<std::unique_ptr<LoadedShard>>& loaded,
                   std::vector<uint32_t>& ids);
  /// `batched`: one Engine::run_batch over the shards (the GPU engine merges them into one DAG,
  /// worth it when the set is queried again); else the shards one after the other.
  /// `show_progress`: a "traversing" progress line (rank 0, --progress or a terminal).
  RecordBatch run_loaded(std::vector<std::unique_ptr<LoadedShard>>& loaded,
                         const std::vector<uint32_t>& ids, const QueryOptions& q,
                         const Normalization& norm, QueryTimings& t, bool batched,
                         bool show_progress = true);

  Comm& comm_;
  SessionOptions options_;
  std::filesystem::path path_;
  std::shared_ptr<const Manifest> manifest_;  ///< shared by the ranks of one process
  std::unique_ptr<Engine> engine_;
  std::string engine_name_;
  unsigned threads_ = 1;
  std::vector<uint32_t> mine_;
  std::vector<std::unique_ptr<LoadedShard>> loaded_;  ///< resident: shards (or their pieces)
  std::vector<uint32_t> loaded_ids_;                  ///< resident: the shard of each loaded_
  uint64_t resident_bytes_ = 0;
  // Shared by the ranks that are threads of one process (Comm::made_once): made once each.
  std::map<int, std::shared_ptr<const Normalization>> norms_;
  std::map<std::pair<int, uint32_t>, std::shared_ptr<const SequenceOrder>> orders_;
  std::map<std::pair<bool, bool>, std::unique_ptr<DocText>> doc_texts_;
  DocText no_documents_;
  /// Reads and prepares this rank's shards ahead of their load, started during open().
  std::unique_ptr<ShardPrefetcher> prefetch_;
  std::future<std::unique_ptr<NcclComm>> nccl_init_;  ///< NCCL's set-up, started at open()
  std::unique_ptr<NcclComm> nccl_;
  std::atomic<bool> stop_background_{false};
  std::thread background_;  ///< prepare_in_background's; joined first when the session ends
};

}  // namespace gtadoc
