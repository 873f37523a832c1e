#include "coordinator/pipeline/archive_session.h"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>

#include "cluster/assignment.h"
#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "cluster/cross_memory.h"
#include "cluster/nccl_comm.h"
#include "cluster/reduce.h"
#include "common/background_priority.h"
#include "common/cpus.h"
#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/recycled_arrays.h"
#include "common/settings.h"
#include "common/timer.h"
#include "coordinator/crash_report.h"
#include "formats/grammar_pieces.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

/// Passes `b` through `rewrite` (if any and `b` holds records), the time counted as collect.
void apply_rewrite(const ArchiveSession::KeyRewrite* rewrite, RecordBatch& b, QueryTimings& t) {
  if (rewrite == nullptr || b.size() == 0) return;
  Timer timer;
  (*rewrite)(b);
  t.collect += timer.seconds();
}

/// Fault injection for the failure tests: GTADOC_FAULT_INJECT="RANK:SHARD:kill|segv|throw" makes
/// that rank die by SIGKILL or SIGSEGV, or throw, when a query starts on that shard.
void maybe_inject_fault(const Comm& comm, uint32_t shard) {
  const std::optional<std::string> hook = settings::text_if_set("GTADOC_FAULT_INJECT");
  if (!hook) return;
  const char* spec = hook->c_str();
  int rank = -1;
  unsigned s = 0;
  char mode[16] = {0};
  if (std::sscanf(spec, "%d:%u:%15s", &rank, &s, mode) != 3) return;
  if (rank != comm.rank() || s != shard) return;
  if (std::string(mode) == "kill") ::raise(SIGKILL);
  if (std::string(mode) == "segv") ::raise(SIGSEGV);
  throw InputError("injected failure (GTADOC_FAULT_INJECT)");
}

std::string shard_where(uint32_t s) {
  return "shard " + std::to_string(s) + " (" + shard_file_name(s) + ")";
}

/// Rethrows `error` (an Error) with the shard named first.
[[noreturn]] void throw_in_shard(uint32_t s, const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    throw Error(e.kind(), shard_where(s) + ": " + e.what(), e.file().c_str(), e.line());
  }
}

uint64_t grammar_bytes(const ShardGrammar& g) {
  return g.symbols.size() * sizeof(Symbol) + g.rule_offsets.size() * sizeof(uint64_t) +
         g.rule_length.size() * sizeof(uint64_t) + g.rule_uses.size() * sizeof(uint32_t) +
         g.doc_root_offsets.size() * sizeof(uint64_t) + g.level_offsets.size() * sizeof(uint32_t);
}

int norm_slot(bool lowercase, bool alnum) {
  return (lowercase ? 1 : 0) + (alnum ? 2 : 0);
}

}  // namespace

ArchiveSession::ArchiveSession(Comm& comm, SessionOptions options)
    : comm_(comm), options_(std::move(options)), path_(options_.archive) {}

ArchiveSession::~ArchiveSession() {
  stop_background_ = true;
  if (background_.joinable()) background_.join();
  if (nccl_init_.valid()) {
    try {
      nccl_ = nccl_init_.get();
    } catch (...) {  // reported by the query that needed it, if any
    }
  }
  nccl_.reset();  // before the engine's CUDA context
  prefetch_.reset();
  loaded_.clear();  // before the engine that owns their device memory pool
}

std::unique_ptr<ArchiveSession> ArchiveSession::open(Comm& comm, const SessionOptions& options,
                                                     QueryTimings* timings) {
  Timer timer;
  std::unique_ptr<ArchiveSession> s(new ArchiveSession(comm, options));
  if (s->options_.max_piece_symbols == 0)
    s->options_.max_piece_symbols = settings::count("GTADOC_MAX_PIECE_SYMBOLS");
  // The archive's shard files (the grammar the engines traverse), listed once: they size both
  // the --engine auto choice and the shuffle's; 0 when the directory cannot be listed
  // (read_manifest then reports what is wrong).
  const uint64_t shard_bytes = shard_file_bytes(s->path_);
  run_collectively(comm, [&] {
    s->threads_ = options.threads != 0 ? options.threads
                                       : default_threads(static_cast<unsigned>(comm.local_size()));
    const std::string asked = options.engine;
    if (asked != "auto" && asked != "gpu" && asked != "cpu")
      throw UsageError("--engine: unknown engine '" + asked + "' (expected auto, gpu or cpu)");
    // --engine auto probes for a GPU when one could win; the probe initializes the CUDA driver
    // (0.1-0.3 s), so it runs on the engine's thread, with the engine's creation (for the GPU:
    // the CUDA context, another ~0.1 s), while this thread reads the manifest and starts the
    // shards' reads (their preparation depends on the engine: see the guess below).
    bool probe = false;
    double mb = 0;
    if (asked == "auto" && !options.resident) {
      mb = static_cast<double>(shard_bytes) / 1e6 / comm.size();
      probe = choose_auto_engine(options.auto_task, mb, s->threads_, true, nullptr) == "gpu";
    }
    const bool resident = options.resident;
    const Task task = options.auto_task;
    const int local_rank = comm.local_rank();
    const unsigned threads = s->threads_;
    const bool log = comm.rank() == 0;
    auto decided = std::make_shared<std::promise<std::string>>();
    std::shared_future<std::string> engine_name = decided->get_future().share();
    std::future<std::unique_ptr<Engine>> made = std::async(std::launch::async, [=] {
      std::string engine = asked;
      try {
        if (asked == "auto") {
          std::string why;
          if (resident) {
            engine = gpu_available() ? "gpu" : "cpu";
            why = engine == "gpu" ? "resident shards: a GPU is visible" : "no GPU is visible";
          } else {
            engine = choose_auto_engine(task, mb, threads, probe && gpu_available(), &why);
          }
          if (log) spdlog::info("--engine auto: {} ({})", engine, why);
        }
      } catch (...) {
        decided->set_exception(std::current_exception());
        throw;
      }
      decided->set_value(engine);
      return make_engine(engine, threads, local_rank);
    });
    try {
      Timer manifest_timer;
      // Ranks that are threads of one process read it once (the HDF5 library serializes their
      // reads) and share it, the dictionary with it.
      s->manifest_ = comm.made_once<Manifest>("manifest " + s->path_.string(), [&] {
        return read_manifest(s->path_, s->options_.words_on_demand
                                           ? ManifestRead::kWordsOnDemand
                                           : ManifestRead::kDeferDictionary);
      });
      spdlog::debug("manifest read in {:.3f} s", manifest_timer.seconds());
      std::vector<uint64_t> sizes;
      for (const auto& sh : s->manifest_->shards) sizes.push_back(sh.input_bytes);
      s->mine_ = assign_by_size(sizes, comm.size())[comm.rank()];
      // While the probe runs, the reads start as for the GPU when one is likely (its device
      // node exists); a wrong guess only costs the preparations, made again for the CPU.
      const bool ready = engine_name.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      std::error_code no_node;
      const std::string guess =
          ready || !probe || !fs::exists("/dev/nvidiactl", no_node) ? engine_name.get() : "gpu";
      auto start_reads = [&](const std::string& engine) {
        if (!s->mine_.empty())
          s->prefetch_ =
              std::make_unique<ShardPrefetcher>(s->path_, *s->manifest_, s->mine_, engine,
                                                s->threads_, s->options_.max_piece_symbols);
      };
      start_reads(guess);
      s->engine_name_ = engine_name.get();
      if (s->engine_name_ != guess) {
        s->prefetch_.reset();
        start_reads(s->engine_name_);
      }
      s->normalization(options.lowercase, options.alnum);
    } catch (...) {
      try {
        made.get();
      } catch (...) {
      }
      throw;
    }
    s->engine_ = made.get();
  });
  // NCCL's set-up (0.6-0.9 s on two GPUs) runs on a thread of its own while the shards load; the
  // first query that shuffles waits for it (nccl()). It starts once every rank has its engine: a
  // rank whose engine failed would leave the others' NCCL set-up waiting for it forever.
  std::string why;
  bool nccl = false;
  run_collectively(comm, [&] {
    // One query's task with a large shuffle (large_shuffle_task: by task, ranks and the shard
    // bytes per rank, read from the directory as the start-up did before narrowing the GPUs).
    const Task task = s->options_.auto_task;
    // Every rank on this node, pulls expected (and possible): the staged shuffle moves the
    // records as fast as NCCL would (cluster/cross_memory.h; ranks that are threads of one
    // process read each other's memory directly, cluster/local_group.h).
    const bool pulls =
        comm.local_size() == comm.size() && (comm.is_in_process() || cross_memory_expected());
    nccl = use_nccl_shuffle(
        comm, s->engine_name_ == "gpu", s->options_.resident,
        large_shuffle_task(task, comm.local_size(), shard_bytes / comm.size(), pulls), &why);
  });
  if (nccl) {
    auto starter = NcclComm::start(comm, gpu_device_of(comm.local_rank()));
    s->nccl_init_ = std::async(std::launch::async, std::move(starter));
  }
  if (comm.size() > 1 && comm.rank() == 0) spdlog::info("shuffle: {}", why);
  if (timings != nullptr) timings->open += timer.seconds();
  if (options.resident) {
    // Resident grammars are searched on the host (phrase search): the engine keeps them whole.
    s->engine_->keep_host_grammars(true);
    Timer load_timer;
    run_collectively(comm, [&] {
      while (s->prefetch_ && !s->prefetch_->done()) {
        Window w = s->next_window(s->prefetch_->remaining());
        s->load_window(w, s->loaded_, s->loaded_ids_);
        for (size_t k = 0; k < w.pieces.size(); ++k) {
          try {
            s->loaded_.push_back(s->engine_->load_prepared(w.pieces[k]));
            s->loaded_ids_.push_back(w.ids[k]);
          } catch (const Error&) {
            throw_in_shard(w.ids[k], std::current_exception());
          }
        }
      }
      s->prefetch_.reset();
      recycled::clear();  // no more shards to read
    });
    if (timings != nullptr) timings->load += load_timer.seconds();
  }
  return s;
}

double ArchiveSession::warm_up() {
  Timer timer;
  if (!options_.resident || loaded_.empty()) return 0;
  // The document names, read at their first use, are read beside the engine's preparation: the
  // service's first index query then does not wait for them. A damaged table is reported by the
  // queries that need it.
  std::future<void> names = std::async(std::launch::async, [this] {
    try {
      (void)manifest_->doc_names.bytes();
    } catch (const std::exception&) {
    }
  });
  QueryOptions q;
  q.task = Task::kWordCount;
  q.top = 1;
  std::vector<LoadedShard*> ptrs;
  for (auto& l : loaded_) ptrs.push_back(l.get());
  std::future<void> order;
  try {
    const Normalization& norm = normalization(false, false);
    // The words' sequence order (what a first sequence query would make: 0.56 s for 30 M words
    // on the H100 host) made beside the engine's preparation, from the dictionary read above.
    order = std::async(std::launch::async, [this, n = QueryOptions{}.n] {
      try {
        (void)sequence_order(false, false, n);
      } catch (const std::exception&) {  // made again, and reported, by the query that needs it
      }
    });
    engine_->prepare_shards(ptrs, q, norm, threads_);
    std::vector<ShardRunStats> stats;
    engine_->run_batch(ptrs, q, norm, stats, threads_);
  } catch (const std::exception& e) {
    spdlog::warn("preparing the resident shards for queries failed ({}); the first query will",
                 e.what());
  }
  if (order.valid()) order.wait();
  return timer.seconds();
}

void ArchiveSession::prepare_in_background() {
  if (!options_.resident || loaded_.empty() || background_.joinable()) return;
  background_ = std::thread([this] {
    lower_to_background_priority();
    Timer timer;
    size_t done = 0;
    try {
      for (auto& shard : loaded_) {
        if (stop_background_) return;
        engine_->prepare_in_background(*shard);
        ++done;
      }
    } catch (const std::exception& e) {
      spdlog::warn(
          "preparing the resident shards in the background stopped after {} ({}); "
          "queries build the rest",
          done, e.what());
      return;
    }
    if (engine_->name() == "cpu")  // the engines that build anything there
      spdlog::info("{} resident shards prepared in the background in {:.2f}s", done,
                   timer.seconds());
  });
}

NcclComm* ArchiveSession::nccl() {
  if (nccl_init_.valid()) {  // the first call: collective (every rank started the set-up)
    std::string error;
    try {
      nccl_ = nccl_init_.get();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!comm_.allreduce_and(error.empty())) {
      spdlog::warn("NCCL set-up failed ({}); the shuffle uses MPI",
                   error.empty() ? "on another rank" : error);
      nccl_.reset();
    }
  }
  return nccl_.get();
}

// The dictionary-sized tables below are made once per process: ranks that are threads of one
// process share them (Comm::made_once), the maker using every such rank's threads.
std::vector<std::pair<uint32_t, const ShardGrammar*>> ArchiveSession::resident_grammars() const {
  std::vector<std::pair<uint32_t, const ShardGrammar*>> out;
  for (size_t i = 0; i < loaded_.size(); ++i)
    out.emplace_back(loaded_ids_[i], &loaded_[i]->grammar());
  return out;
}

const Normalization& ArchiveSession::normalization(bool lowercase, bool alnum) {
  const int slot = norm_slot(lowercase, alnum);
  std::shared_ptr<const Normalization>& norm = norms_[slot];
  if (!norm)
    norm = comm_.made_once<Normalization>(
        "normalization " + std::to_string(slot) + " " + path_.string(),
        [&] { return normalize_dictionary(manifest_->dict, lowercase, alnum); });
  return *norm;
}

const SequenceOrder& ArchiveSession::sequence_order(bool lowercase, bool alnum, uint32_t n) {
  const int slot = norm_slot(lowercase, alnum);
  std::shared_ptr<const SequenceOrder>& order = orders_[{slot, n}];
  if (!order) {
    const Dictionary& dict = normalization(lowercase, alnum).dict;
    const unsigned threads =
        comm_.is_in_process() ? threads_ * static_cast<unsigned>(comm_.local_size()) : threads_;
    Timer timer;
    order = comm_.made_once<SequenceOrder>(
        "sequence order " + std::to_string(slot) + " " + std::to_string(n) + " " + path_.string(),
        [&] { return SequenceOrder(dict, n, threads); });
    spdlog::debug("sequence order of {} words ({}): {:.3f} s", dict.size(),
                  order->identity() ? "their ids" : "sorted", timer.seconds());
  }
  return *order;
}

const DocText& ArchiveSession::doc_text(const QueryOptions& q, OutputFormat format) {
  if (!rows_show_documents(q)) return no_documents_;  // the names are then never read
  const bool ids = q.ids;
  const bool quoted = format != OutputFormat::kTsv;  // JSON and NDJSON print the same names
  std::unique_ptr<DocText>& text = doc_texts_[{ids, quoted}];
  if (!text) text = std::make_unique<DocText>(manifest_->doc_names, ids, format, threads_);
  return *text;
}

RecordBatch ArchiveSession::collect(const QueryOptions& q, const Normalization& norm,
                                    QueryTimings& t, std::unique_ptr<DeviceRecords>* on_device,
                                    const KeyRewrite* rewrite) {
  struct Keeping {  // the engine keeps records on its device for this call only
    Engine* engine;
    ~Keeping() {
      if (engine != nullptr) engine->keep_records(false);
    }
  } keeping{on_device != nullptr ? engine_.get() : nullptr};
  if (on_device != nullptr) engine_->keep_records(true);
  RecordBatch out =
      options_.resident ? collect_resident(q, norm, t) : collect_streaming(q, norm, t, rewrite);
  if (options_.resident) apply_rewrite(rewrite, out, t);  // the streaming path did, per batch
  if (on_device != nullptr) {
    Timer timer;
    *on_device = engine_->take_records(key_layout(q).width);
    t.collect += timer.seconds();
  }
  set_crash_context(comm_.size() > 1 ? "rank " + std::to_string(comm_.rank()) +
                                           " (after its shards, exchanging results)"
                                     : "");
  return out;
}

RecordBatch ArchiveSession::run_loaded(std::vector<std::unique_ptr<LoadedShard>>& loaded,
                                       const std::vector<uint32_t>& ids, const QueryOptions& q,
                                       const Normalization& norm, QueryTimings& t, bool batched,
                                       bool show_progress) {
  const std::string rank = comm_.size() > 1 ? "rank " + std::to_string(comm_.rank()) + ": " : "";
  for (uint32_t id : ids) {
    set_crash_context(rank + shard_where(id));
    try {
      maybe_inject_fault(comm_, id);
    } catch (const Error& e) {
      throw Error(e.kind(), shard_where(id) + ": " + e.what(), e.file().c_str(), e.line());
    }
  }
  std::string where;
  for (uint32_t id : ids) where += (where.empty() ? "" : ", ") + std::to_string(id);
  if (ids.size() != 1) where = "shards " + where;
  if (ids.size() == 1) where = shard_where(ids[0]);
  set_crash_context(rank + where);
  std::vector<LoadedShard*> ptrs;
  for (auto& l : loaded) ptrs.push_back(l.get());
  std::vector<ShardRunStats> stats;
  Timer timer;
  RecordBatch batch;
  double prepared_s = 0;  // Engine::prepare_shards, counted as init
  try {
    Timer prepare;
    if (!batched) engine_->prepare_vocabularies(ptrs, norm, threads_);
    engine_->prepare_shards(ptrs, q, norm, threads_);
    prepared_s = prepare.seconds();
    if (batched) {
      // Resident shards show no progress; streamed ones (the CPU engine's, side by side) count
      // as traversed when the batch is done.
      Progress progress(
          "traversing", ptrs.size(), "shards",
          show_progress && !options_.resident && options_.progress && comm_.rank() == 0);
      batch = engine_->run_batch(ptrs, q, norm, stats, threads_);
      progress.add(ptrs.size());
    } else {  // the shards in turn (Engine::run_batch's default), showing progress
      Progress progress("traversing", ptrs.size(), "shards",
                        show_progress && options_.progress && comm_.rank() == 0);
      std::vector<RecordBatch> parts;
      stats.assign(ptrs.size(), ShardRunStats{});
      for (size_t i = 0; i < ptrs.size(); ++i) {
        parts.push_back(engine_->run(*ptrs[i], q, norm, stats[i]));
        progress.add(1);
      }
      batch = concatenate(std::move(parts), key_layout(q).width, threads_);
    }
  } catch (const Error& e) {
    throw Error(e.kind(), where + ": " + e.what(), e.file().c_str(), e.line());
  }
  double init = 0, traversal = 0;
  for (size_t i = 0; i < stats.size(); ++i) {
    init += stats[i].init_s;
    traversal += stats[i].traversal_s;
    t.traversals.push_back(
        std::string(traversal_name(stats[i].traversal)) +
        (stats[i].selector_reason.empty() ? "" : ": " + stats[i].selector_reason));
    spdlog::info("shard {}: {} traversal ({}), init {:.3f}s traversal {:.3f}s",
                 i < ids.size() ? ids[i] : 0, traversal_name(stats[i].traversal),
                 stats[i].selector_reason, stats[i].init_s, stats[i].traversal_s);
  }
  if (prepared_s > 0) spdlog::debug("shards prepared for the query in {:.3f}s", prepared_s);
  t.init += init + prepared_s;
  t.traversal += traversal;
  t.collect += std::max(0.0, timer.seconds() - init - prepared_s - traversal);
  return batch;
}

RecordBatch ArchiveSession::collect_resident(const QueryOptions& q, const Normalization& norm,
                                             QueryTimings& t) {
  return run_loaded(loaded_, loaded_ids_, q, norm, t, true);
}

RecordBatch ArchiveSession::collect_streaming(const QueryOptions& q, const Normalization& norm,
                                              QueryTimings& t, const KeyRewrite* rewrite) {
  // Reads run ahead of loading (ShardPrefetcher). The CPU engine loads shards until a batch is
  // due (batch_due), runs them side by side (CpuEngine::run_batch) while the reads go on, and
  // drops them: their arrays are the next shards' (recycle_grammar), so memory stays bounded by
  // a batch and is not touched fresh for every shard. The GPU engine runs each window of
  // shards, one shard after the other, on a thread of its own while the next window loads (its
  // load lanes and the query have streams of their own), and drops them: the per-shard set-up
  // and traversal overlap the reads and loads of the shards behind instead of following the last
  // one. When the engine runs out of memory while loading, the window still running ends first
  // and the load is tried again; then the shards loaded so far run and are dropped, and loading
  // goes on with the rest.
  std::vector<RecordBatch> parts;
  std::vector<std::unique_ptr<LoadedShard>> loaded;
  std::vector<uint32_t> ids;
  if (!prefetch_ || !prefetch_->fresh())  // a later query (or one after a failure) reads again
    prefetch_ = std::make_unique<ShardPrefetcher>(path_, *manifest_, mine_, engine_name_, threads_,
                                                  options_.max_piece_symbols);
  // The CPU engine runs its shards side by side (CpuEngine::run_batch); the GPU engine runs them
  // in turn here, window by window (its batched pass is for resident shards), its progress that
  // of the loads.
  const bool side_by_side = engine_name_ == "cpu";
  // The window running beside the loads (GPU engine), its records appended to `parts` in order.
  std::future<RecordBatch> running;
  struct JoinRunning {  // an error thrown while a window runs waits for it (its error is dropped)
    std::future<RecordBatch>& f;
    ~JoinRunning() {
      if (f.valid()) f.wait();
    }
  } join_running{running};
  auto rewritten = [&](RecordBatch&& b) {
    apply_rewrite(rewrite, b, t);
    return std::move(b);
  };
  auto finish_running = [&] {
    if (running.valid()) parts.push_back(rewritten(running.get()));
  };
  auto flush = [&] {
    finish_running();
    if (loaded.empty()) return;
    const size_t batch_shards = loaded.size();
    Timer ran;
    RecordBatch records = run_loaded(loaded, ids, q, norm, t, side_by_side, side_by_side);
    const double run_s = ran.seconds();
    Timer rewrite_timer;
    parts.push_back(rewritten(std::move(records)));
    const double rewrite_s = rewrite_timer.seconds();
    loaded.clear();  // the CPU engine's shards give their arrays to the next reads
    ids.clear();
    if (side_by_side) {
      // A combiner: the batch's equal keys summed now, while the next shards are read, so that
      // the reduce meets fewer records, in one sorted run per batch (merged, not sorted).
      Timer combine;
      const size_t before = parts.back().size();
      reduce_records(parts.back(), threads_);
      t.collect += combine.seconds();
      spdlog::debug(
          "batch of {} shards: ran {:.3f}s, keys rewritten {:.3f}s, {} records combined "
          "into {} in {:.3f}s",
          batch_shards, run_s, rewrite_s, before, parts.back().size(), combine.seconds());
    }
  };
  auto run_beside = [&] {
    finish_running();
    if (loaded.empty()) return;
    running = std::async(std::launch::async, [this, &q, &norm, &t, batch = std::move(loaded),
                                              batch_ids = std::move(ids)]() mutable {
      RecordBatch out = run_loaded(batch, batch_ids, q, norm, t, false, false);
      batch.clear();  // the shards are freed on the thread that ran them
      return out;
    });
    loaded.clear();
    ids.clear();
  };
  Progress progress("loading", mine_.size(), "shards", options_.progress && comm_.rank() == 0);
  while (!prefetch_->done()) {
    Timer load_timer;
    Window w = next_window(prefetch_->remaining());
    const double read_wait = load_timer.seconds();
    // Side by side where the engine can (Engine::load_lanes); what did not load so, for want of
    // memory or because an earlier shard of the window failed, is loaded below one by one.
    load_window(w, loaded, ids);
    // Pieces (when a shard exceeds max_piece_symbols) are loaded in order. When the engine's
    // memory is full, what is loaded runs as one batch and is dropped; a shard or piece that
    // does not fit on its own is halved by documents until its pieces do.
    for (size_t k = 0; k < w.pieces.size(); ++k) {
      const uint32_t s = w.ids[k];
      set_crash_context((comm_.size() > 1 ? "rank " + std::to_string(comm_.rank()) + ": " : "") +
                        shard_where(s));
      try {
        loaded.push_back(engine_->load_prepared(w.pieces[k]));  // w.pieces[k] kept if it throws
      } catch (const ResourceError&) {
        if (running.valid()) {  // the window running beside holds memory until it ends
          finish_running();
          --k;
          continue;
        }
        // Records the engine keeps on its device (device-resident records) go to host memory
        // first: the loads and the batch's query need the room.
        const bool spilled = engine_->spill_records();
        if (!loaded.empty()) {
          spdlog::info("engine memory full after {} shards or pieces: running them as one batch",
                       ids.size());
          t.load += load_timer.seconds();
          flush();
          load_timer = Timer();
        } else if (!spilled) {
          if (w.pieces[k].grammar.num_docs <= 1)  // one document alone does not fit
            throw_in_shard(s, std::current_exception());
          try {
            check_bodies_on_host(w.pieces[k], threads_);  // the split reads the bodies
          } catch (const Error&) {
            throw_in_shard(s, std::current_exception());
          }
          std::vector<ShardGrammar> halves =
              split_by_documents(w.pieces[k].grammar, w.pieces[k].grammar.symbols.size() / 2);
          spdlog::info("{}: does not fit the engine's memory: {} documents in {} pieces",
                       shard_where(s), w.pieces[k].grammar.num_docs, halves.size());
          w.pieces.erase(w.pieces.begin() + static_cast<std::ptrdiff_t>(k));
          w.ids.erase(w.ids.begin() + static_cast<std::ptrdiff_t>(k));
          for (size_t h = 0; h < halves.size(); ++h) {
            w.pieces.insert(w.pieces.begin() + static_cast<std::ptrdiff_t>(k + h),
                            PreparedShard{std::move(halves[h]), nullptr, {}});
            w.ids.insert(w.ids.begin() + static_cast<std::ptrdiff_t>(k + h), s);
          }
        }
        --k;  // retry this position
        continue;
      } catch (const Error&) {
        throw_in_shard(s, std::current_exception());
      }
      w.pieces[k] = PreparedShard{};
      ids.push_back(s);
    }
    spdlog::debug("{} shards: waited {:.3f} s for the reads, loaded in {:.3f} s, by {:.3f} s",
                  w.shards, read_wait, std::max(0.0, load_timer.seconds() - read_wait),
                  prefetch_->elapsed());
    t.load += load_timer.seconds();
    if (!side_by_side)
      run_beside();
    else if (batch_due(loaded))
      flush();  // their memory goes to the next shards' reads (recycle_grammar)
    progress.add(w.shards);
  }
  progress.finish();
  recycled::clear();  // no more shards to read
  flush();
  recycled::clear();  // nor the last batch's
  Timer concat;
  RecordBatch out = concatenate(std::move(parts), key_layout(q).width, threads_);
  t.collect += concat.seconds();
  return out;
}

std::vector<PreparedShard> ArchiveSession::pieces_of(PreparedShard p) const {
  const uint64_t bound = options_.max_piece_symbols;
  std::vector<PreparedShard> pieces;
  const ShardGrammar& g = p.grammar;
  if (bound == 0 || g.symbols.size() <= bound || g.num_docs <= 1) {
    pieces.push_back(std::move(p));
    return pieces;
  }
  check_bodies_on_host(p, threads_);  // the split reads the bodies
  for (ShardGrammar& piece : split_by_documents(g, bound))
    pieces.push_back(PreparedShard{std::move(piece), nullptr, {}});
  spdlog::info("shard of documents {}..{}: {} symbols, loaded as {} document-range pieces",
               g.first_doc, g.first_doc + g.num_docs - 1, g.symbols.size(), pieces.size());
  return pieces;
}

bool ArchiveSession::batch_due(const std::vector<std::unique_ptr<LoadedShard>>& loaded) const {
  // Enough shards for every thread to take a few (CpuEngine::run_batch: a slot per shard), and
  // enough symbols that a batch is much more than its set-up.
  const size_t threads = resolve_threads(threads_);
  if (loaded.size() < kBatchShardsPerThread * threads) return false;
  const uint64_t batch_symbols = settings::count("GTADOC_CPU_BATCH_SYMBOLS");
  uint64_t symbols = 0;
  for (const auto& shard : loaded) symbols += shard->grammar().symbols.size();
  if (symbols < batch_symbols) return false;
  spdlog::debug("{} shards of {} symbols run as a batch", loaded.size(), symbols);
  return true;
}

ArchiveSession::Window ArchiveSession::next_window(size_t limit) {
  const unsigned lanes = engine_->load_lanes();
  const size_t want = std::min<size_t>(limit, lanes > 1 ? size_t{2} * lanes : 1);
  Window w;
  for (; w.shards < want && !prefetch_->done(); ++w.shards) {
    uint32_t id = 0;
    try {
      PreparedShard p = prefetch_->next(&id);
      if (options_.resident) resident_bytes_ += grammar_bytes(p.grammar);
      for (PreparedShard& piece : pieces_of(std::move(p))) {
        w.pieces.push_back(std::move(piece));
        w.ids.push_back(id);
      }
    } catch (const Error& e) {
      throw Error(e.kind(), shard_where(id) + ": " + e.what(), e.file().c_str(), e.line());
    }
  }
  return w;
}

void ArchiveSession::load_window(Window& w, std::vector<std::unique_ptr<LoadedShard>>& loaded,
                                 std::vector<uint32_t>& ids) {
  if (w.pieces.size() < 2 || engine_->load_lanes() < 2) return;
  std::vector<Engine::LoadOutcome> got = engine_->load_prepared_many(w.pieces);
  Window rest;
  rest.shards = w.shards;
  for (size_t k = 0; k < w.pieces.size(); ++k) {
    if (got[k].shard) {
      loaded.push_back(std::move(got[k].shard));
      ids.push_back(w.ids[k]);
      continue;
    }
    if (got[k].error) {
      try {
        std::rethrow_exception(got[k].error);
      } catch (const ResourceError&) {  // loaded again on its own, after what did load
      } catch (const Error&) {
        throw_in_shard(w.ids[k], std::current_exception());
      }
    }
    rest.pieces.push_back(std::move(w.pieces[k]));
    rest.ids.push_back(w.ids[k]);
  }
  w = std::move(rest);
}

}  // namespace gtadoc
