// The process's communicator: the only door to MPI in gtadoc (mpi.h is included by cluster/*.cpp
// and the cluster layer's private cluster/comm_mpi.h only, never by a public header). Comm::init
// decides once, at start, whether the process was started by an MPI launcher (mpirun/mpiexec,
// srun, PMI/PMIx; cluster/launcher.h): if so MPI is initialized (thread level FUNNELED, errors
// returned instead of aborting, so every failure becomes an InternalError through MPI_TRY);
// otherwise the process is one local rank and MPI is never touched (the single-node fallback,
// docs/REFERENCE.md §1). Without a launcher a job may also run as several ranks that are threads
// of this process (Comm::in_process_ranks: `gtadoc run --gpus N`, one GPU each), whose
// collectives read each other's memory (cluster/local_group.h). Every helper below works in all
// three modes; with one rank it is a local copy.
//
// A job of several MPI ranks also runs a heartbeat (cluster/heartbeat.h), started by init and
// stopped by finalize: a rank that stops answering (node, link, stopped process) ends the job
// after GTADOC_HEARTBEAT_TIMEOUT seconds with one line naming it, where MPI would wait forever.
// A single rank, in-process ranks and a process without MPI have none.
//
// Guarantees:
//  - All helpers are collective: every rank of the world must call them in the same order with
//    consistent arguments (same root, same op). Only the thread that called init may call them.
//  - No size limit: MPI counts are int, so messages above max_message_bytes() are split into
//    rounds internally; byte buffers larger than 2 GiB work.
//  - Results are deterministic: per-rank results are returned in rank order.
//  - finalize() is idempotent and also runs at process exit. After a failure on one rank, call
//    abort() (MPI_Abort), not finalize(), so no rank is left waiting in a collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gtadoc {

enum class ReduceOp { kSum, kMax, kMin };
class Heartbeat;
class LocalGroup;

class Comm {
 public:
  /// Initializes the world communicator once (later calls return the same object). Detects a
  /// launcher from the environment: OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK, PMI_SIZE,
  /// MV2_COMM_WORLD_SIZE, or SLURM_PROCID with SLURM_NTASKS > 1. GTADOC_MPI=0 forces the local
  /// mode, GTADOC_MPI=1 forces MPI. May consume MPI arguments from argc/argv. With several MPI
  /// ranks, starts the heartbeat; a bad GTADOC_HEARTBEAT_TIMEOUT throws UsageError on rank 0
  /// while the other ranks exit with its code, silently (one line for the job).
  static Comm& init(int& argc, char**& argv);
  /// When this process will start MPI (the launcher detection of init), sets what Open MPI and
  /// NCCL read from the environment at their start: Open MPI's shared-memory transport when every
  /// rank is on this node, NCCL's legacy buffers. setenv is not safe beside another thread's
  /// getenv (CUDA's start reads the environment on the warm-up thread), so the CLI calls this
  /// before any thread starts; init calls it too. Only the first call acts.
  static void prepare_environment();
  /// The communicator created by init. Throws InternalError when init was not called.
  static Comm& world();
  /// `n` ranks that are threads of this process, without MPI: element r is rank r's
  /// communicator, for the thread that runs rank r (each such thread calls its collectives).
  /// All ranks share this node (local_rank == rank).
  static std::vector<std::unique_ptr<Comm>> in_process_ranks(int n);

  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  /// Rank among the ranks on this node (shared-memory domain) and their number.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  /// What the start-up chose for MPI's transport (a line for the log), empty when nothing.
  const std::string& transport_note() const;
  /// True when MPI is in use (started by a launcher), even with a single rank.
  bool is_distributed() const { return distributed_; }
  /// True for the ranks made by in_process_ranks (several, or one).
  bool is_in_process() const { return group_ != nullptr; }
  /// What `make()` returns (a T), made once for the ranks of this process: in-process ranks share
  /// one value under `key` (the first to ask makes it, the others wait for it or its exception);
  /// any other rank makes its own. Not collective: a rank need not ask.
  template <typename T, typename F>
  std::shared_ptr<const T> made_once(const std::string& key, F&& make) {
    if (!group_) return std::make_shared<const T>(make());
    return std::static_pointer_cast<const T>(once_in_group(
        key, [&]() -> std::shared_ptr<const void> { return std::make_shared<const T>(make()); }));
  }
  /// In-process ranks: the other ranks' current and later collectives throw LocalGroupAborted
  /// (a rank that failed on its own calls it so that no thread waits for it). No-op otherwise.
  void abandon();

  void barrier();

  /// Replaces `buf` on every rank with root's `buf` (size included).
  void broadcast(std::vector<uint8_t>& buf, int root = 0);
  /// broadcast() for ranks that may wait long (a service between queries): the ranks other
  /// than root poll for the message and sleep between polls instead of spinning a core.
  void broadcast_idle(std::vector<uint8_t>& buf, int root = 0);
  /// Point to point: `buf` (any size) to rank `dest`; recv_bytes from `source`, same `tag`.
  void send_bytes(std::span<const uint8_t> buf, int dest, int tag);
  std::vector<uint8_t> recv_bytes(int source, int tag);
  /// Every rank's `value`, indexed by rank, on every rank.
  std::vector<uint64_t> allgather(uint64_t value);
  /// `value` reduced over all ranks, on every rank.
  uint64_t allreduce(uint64_t value, ReduceOp op);
  /// Element-wise reduction of `values` in place (same length on every rank).
  void allreduce(std::span<uint64_t> values, ReduceOp op);
  /// Logical AND / OR over all ranks.
  bool allreduce_and(bool value);
  bool allreduce_or(bool value);
  /// Gathers variable-size buffers: on root, element r is rank r's `buf`; elsewhere empty.
  std::vector<std::vector<uint8_t>> gather(std::span<const uint8_t> buf, int root = 0);
  /// Like gather, but every rank receives every rank's buffer.
  std::vector<std::vector<uint8_t>> allgather_bytes(std::span<const uint8_t> buf);
  /// send[d] goes to rank d; returns what rank r sent to this rank at index r.
  std::vector<uint64_t> alltoall(std::span<const uint64_t> send);

  /// Personalized all-to-all: `send` holds the data for rank 0, then rank 1, ..., and
  /// send_counts[d] (elements, size() entries) is how much goes to rank d. Returns the data
  /// received, grouped by source rank in rank order; recv_counts (if given) gets the number of
  /// elements from each source.
  std::vector<uint8_t> alltoallv(std::span<const uint8_t> send, std::span<const size_t> send_counts,
                                 std::vector<size_t>* recv_counts = nullptr);
  std::vector<uint32_t> alltoallv(std::span<const uint32_t> send,
                                  std::span<const size_t> send_counts,
                                  std::vector<size_t>* recv_counts = nullptr);
  std::vector<uint64_t> alltoallv(std::span<const uint64_t> send,
                                  std::span<const size_t> send_counts,
                                  std::vector<size_t>* recv_counts = nullptr);

  /// Personalized all-to-all of records (`width` uint32 key values and one uint64 count each)
  /// in place, without staging: to rank d go send_count[d] records starting at record
  /// send_first[d] of (keys, counts); from rank s come recv_count[s] records (what s sends
  /// here), written from record recv_first[s] of (out_keys, out_counts). Counts and positions
  /// are in records and must be below 2^31; the caller exchanged the counts (alltoall).
  void alltoallv_records(uint32_t width, const uint32_t* keys, const uint64_t* counts,
                         std::span<const size_t> send_count, std::span<const size_t> send_first,
                         uint32_t* out_keys, uint64_t* out_counts,
                         std::span<const size_t> recv_count, std::span<const size_t> recv_first);

  /// Ends the whole job with `code`: MPI_Abort when distributed (the heartbeat's peers told first,
  /// so that they do not report this process as lost), std::exit for a lone process;
  /// in-process ranks: abandon(), then throws LocalGroupAborted (the process goes on).
  [[noreturn]] void abort(int code);
  /// Finalizes MPI if this process initialized it, then stops the heartbeat (a goodbye to its
  /// peers). Idempotent; also called at exit.
  void finalize();

  /// Largest single MPI message (bytes) before a helper splits it into rounds. Default 1 GiB;
  /// tests lower it to exercise the split paths. Must be equal on all ranks.
  size_t max_message_bytes() const { return max_message_bytes_; }
  void set_max_message_bytes(size_t bytes);

 private:
  struct Mpi;  // MPI handles; defined in comm_mpi.h so mpi.h stays out of this header
  Comm();

  template <typename T>
  std::vector<T> alltoallv_impl(std::span<const T> send, std::span<const size_t> send_counts,
                                std::vector<size_t>* recv_counts);
  void bcast_raw(void* data, size_t bytes, int root);
  std::shared_ptr<const void> once_in_group(
      const std::string& key, const std::function<std::shared_ptr<const void>()>& make);

  void start_heartbeat();

  std::unique_ptr<Mpi> mpi_;
  std::unique_ptr<Heartbeat> heartbeat_;  // several MPI ranks only
  std::shared_ptr<LocalGroup> group_;     // in-process ranks only
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  bool distributed_ = false;
  bool finalized_ = false;
  size_t max_message_bytes_ = size_t{1} << 30;
};

}  // namespace gtadoc
