// The engine interface every traversal engine (cpu, gpu) implements. An engine loads a shard
// once (host or device memory, load-time precomputation such as parent lists) and then answers
// any number of queries on it; each query returns the shard's locally aggregated records.
// All engines return the same set of records for the same shard and query.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/grammar.h"
#include "worker/device_records.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc {

/// Timings of one query on one shard, in seconds, and the traversal actually used.
struct ShardRunStats {
  double init_s = 0;       ///< pre-pass: normalization remap upload, head/tail, sizing
  double traversal_s = 0;  ///< the traversal itself, including local aggregation
  Traversal traversal = Traversal::kTopDown;
  std::string selector_reason;  ///< why auto chose it (empty when forced)
};

namespace plan {
struct ShardLayout;
}

/// A shard read and prepared on the host for an engine's load (prepare_shard): the grammar and,
/// for the GPU engine, the plan layer's shard layout (worker/plan/shard_layout.h) that its load
/// would otherwise build.
struct PreparedShard {
  ShardGrammar grammar;
  /// Null: the load builds what it needs. The engine that loads the shard may take its arrays.
  std::shared_ptr<plan::ShardLayout> layout;
  /// Set when the grammar was read with only its frame checked (GrammarChecks::kFrame): the
  /// name its errors carry (the shard file). The GPU engine's load then checks the bodies on the
  /// device; anything else that reads the bodies calls check_bodies_on_host first.
  std::optional<std::string> bodies_unchecked;
};

/// The checks a read for `engine`'s prepare_shard and load needs: the frame alone where the
/// engine's load checks the bodies itself (the GPU engine, building its bags on the device,
/// unless GTADOC_GPU_DEVICE_CHECKS=0), else all of them.
GrammarChecks read_checks_for(const std::string& engine);

/// Validates the bodies of a grammar read with only its frame checked (a no-op otherwise), on
/// `threads` threads: InputError as the read would have thrown.
void check_bodies_on_host(PreparedShard& prepared, unsigned threads = 0);

/// The host-side load work of `engine` ("gpu", "cpu") for one shard, with no engine object and
/// no device: thread-safe, so a caller prepares shards ahead, several at once, while the engine
/// starts (CUDA context) or loads others. `threads` for the work (0 = every usable CPU; the GPU
/// engine's units-only layout is one pass on the calling thread). The CPU engine builds its
/// layout lazily at the first query: for it the grammar passes through.
PreparedShard prepare_shard(const std::string& engine, ShardGrammar grammar, unsigned threads);

/// A shard resident in an engine (host structures or device memory). Owned by the caller.
class LoadedShard {
 public:
  virtual ~LoadedShard() = default;
  virtual const ShardGrammar& grammar() const = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  /// Takes the grammar (moved in) and does the load-time precomputation.
  virtual std::unique_ptr<LoadedShard> load(ShardGrammar grammar) = 0;
  /// Loads a shard that prepare_shard prepared for this engine (the same result as load() of its
  /// grammar), taking its grammar. When the load fails for want of memory (ResourceError) an
  /// engine that can fail so (the GPU engine) leaves `prepared` as it was, so the caller can
  /// split it and retry without a copy. The default ignores the layout.
  virtual std::unique_ptr<LoadedShard> load_prepared(PreparedShard& prepared) {
    check_bodies_on_host(prepared);
    return load(std::move(prepared.grammar));
  }
  /// What load_prepared_many made of one shard: `shard` when loaded; else `error` when its load
  /// threw (the shard as load_prepared leaves it after that error), or neither when its load was
  /// not tried (an earlier shard's failed: the caller loads it on its own).
  struct LoadOutcome {
    std::unique_ptr<LoadedShard> shard;
    std::exception_ptr error;
  };
  /// Shards load_prepared_many loads side by side: the number the caller hands it at once, for
  /// several loads to overlap (1: the engine loads one shard at a time).
  virtual unsigned load_lanes() const { return 1; }
  /// Loads several prepared shards, each as load_prepared would, possibly side by side; returns
  /// one outcome per shard, in order. After a failure, shards not yet started are left untried.
  /// The default loads them in turn.
  virtual std::vector<LoadOutcome> load_prepared_many(std::span<PreparedShard> shards);
  /// Runs a query on a loaded shard. Records use global document ids and normalized word ids.
  virtual RecordBatch run(LoadedShard& shard, const QueryOptions& q, const Normalization& norm,
                          ShardRunStats& stats) = 0;
  /// Called before `q` runs on these shards (run in turn, or run_batch): builds, several at once on
  /// `threads` (0 = every usable CPU), what the engine would otherwise build for each shard when
  /// its turn comes (the CPU engine's lazily built shard structures, the GPU engine's traversal
  /// estimates). Changes no result.
  virtual void prepare_shards(std::span<LoadedShard* const> shards, const QueryOptions& q,
                              const Normalization& norm, unsigned threads) {
    (void)shards, (void)q, (void)norm, (void)threads;
  }
  /// Builds, on the calling thread, what the first query of any task would build for `shard`
  /// (the CPU engine's full shard layout), holding the engine's query lock for that one shard
  /// only: a resident process calls it shard by shard between and beside queries, so that no
  /// first query pays for it and none waits longer than one shard's build. Changes no result;
  /// nothing by default.
  virtual void prepare_in_background(LoadedShard& shard) { (void)shard; }
  /// Called before a query runs on these shards one by one (not as one batch): builds each
  /// shard's vocabulary of `norm` ahead, several at once on `threads` (0 = all), where the engine
  /// would otherwise build them one after the other on its own thread. Changes no result.
  virtual void prepare_vocabularies(std::span<LoadedShard* const> shards, const Normalization& norm,
                                    unsigned threads) {
    (void)shards, (void)norm, (void)threads;
  }
  /// Runs a query on several loaded shards of this engine (a rank's resident shards) and
  /// returns the records of all of them in one batch: each shard's records locally aggregated,
  /// the same multiset of (key, count) that running them one by one and concatenating gives
  /// (keys may repeat across shards; the reduce merges them). `stats` gets one entry per shard,
  /// in order. The default runs the shards in turn; an engine may traverse them together in one
  /// pass (the GPU engine). `threads`: for the host-side concatenation (0 = all).
  virtual RecordBatch run_batch(std::span<LoadedShard* const> shards, const QueryOptions& q,
                                const Normalization& norm, std::vector<ShardRunStats>& stats,
                                unsigned threads);

  /// From now on, shards loaded keep their whole grammar on the host (LoadedShard::grammar(), rule
  /// bodies included), for host-side work on resident shards (phrase search, the service). Off
  /// (the default), an engine may drop what it holds on its device: the GPU engine hands the
  /// symbols' memory to the next shard's read. The CPU engine always keeps them.
  virtual void keep_host_grammars(bool on) { (void)on; }

  /// Device-resident records: while on, run() and run_batch() keep the records they
  /// produce in the engine's device memory and return empty batches (of the key width);
  /// take_records() hands over every record kept since keep_records(true), as one set, in the
  /// order the runs produced them, and turns keeping off. Engines without a device ignore
  /// keep_records, and their take_records returns nullptr.
  virtual void keep_records(bool on) { (void)on; }
  /// Moves the records kept so far from device memory to host memory (they stay part of what
  /// take_records() hands over, in the same order), so that loads and queries find the memory;
  /// false when nothing was kept there.
  virtual bool spill_records() { return false; }
  virtual std::unique_ptr<DeviceRecords> take_records(uint32_t width) {
    (void)width;
    return nullptr;
  }
};

/// The CPU engine (worker/cpu). `threads` = 0 uses every hardware thread.
std::unique_ptr<Engine> make_cpu_engine(unsigned threads);

}  // namespace gtadoc

namespace gtadoc {

/// True when this build has the GPU engine and a CUDA device is visible.
bool gpu_available();
/// CUDA devices visible to this process (0 without the GPU engine or a driver).
int gpu_count();
/// The device the GPU engine of local rank `local_rank` uses (local rank % visible devices).
int gpu_device_of(int local_rank);
/// Device memory of the GPU that local rank `local_rank` uses (local rank % visible devices):
/// bytes in use (by every process) and in total. False without a GPU.
bool gpu_memory(int local_rank, uint64_t* used, uint64_t* total);
/// The GPU engine on `device` (worker/gpu). Throws ResourceError when no GPU is usable.
std::unique_ptr<Engine> make_gpu_engine(int device);

/// Caps the device memory of the GPU engines made from now on in this process at `bytes`, resident
/// shards and queries together (`gtadoc run` and `serve` --gpu-memory-limit); 0 takes the cap
/// back. The CPU engine ignores it.
void set_gpu_memory_limit(uint64_t bytes);
/// The cap a GPU engine made now takes, in bytes: set_gpu_memory_limit's, else
/// GTADOC_GPU_MEMORY_LIMIT's (common/settings.h), else 0 (the whole device).
uint64_t gpu_memory_limit();

/// Starts CUDA and the primary context of the device make_gpu_engine(local_rank) will use, on a
/// thread of its own, so that CUDA's start-up (0.25-0.4 s) overlaps what the process does
/// before it asks for the engine (MPI's start, reading the manifest). For a process told to use
/// the GPU engine; make_gpu_engine waits for it. GTADOC_GPU_WARMUP=0 turns it off; a no-op in a
/// build without the GPU engine.
/// `devices` > 1 (a run on several GPUs of one process): the devices from the local rank's on,
/// each on its own thread.
void warm_up_gpu(int local_rank, int devices = 1);
/// Waits for a warm-up still in progress (a process that started one and exits without asking
/// for the engine calls it first: CUDA's own teardown at exit must not meet the warm-up thread).
void finish_gpu_warm_up();

/// Creates the engine for `--engine gpu|cpu` ("auto" must be resolved by choose_auto_engine
/// first; if passed it means gpu when available, else cpu). `local_rank` chooses the device
/// (local rank % visible devices). Throws UsageError for an unknown name and ResourceError for
/// gpu without a GPU.
std::unique_ptr<Engine> make_engine(const std::string& name, unsigned threads, int local_rank);

/// `--engine auto`: "gpu" or "cpu", whichever is expected to finish a fresh `gtadoc run` first,
/// with the reason in `why`. End-to-end cost model measured on an H200 host with 32 cores
/// (docs/PERFORMANCE.md, "End to end"): with G = grammar bytes (shard files) per rank in MB
/// and T CPU threads, the CPU engine takes about G * (serial + parallel / T) seconds, the GPU
/// engine G * gpu plus a start-up (CUDA context, device upload) ~0.55 s longer than the CPU's;
/// per-task constants. The GPU is chosen only when `gpu_visible` (gpu_available()) and it is
/// expected to win: small archives and cheap tasks run on the CPU, where CUDA start-up dominates.
std::string choose_auto_engine(Task task, double grammar_mb_per_rank, unsigned threads,
                               bool gpu_visible, std::string* why);

}  // namespace gtadoc
