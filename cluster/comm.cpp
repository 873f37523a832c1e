// Comm: MPI world communicator with a no-MPI single-rank fallback. See comm.h.
#include "cluster/comm.h"

// The C API only: keep the deprecated C++ bindings (which need libmpi_cxx) out.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cluster/heartbeat.h"
#include "cluster/local_group.h"
#include "common/error.h"
#include "common/settings.h"

namespace gtadoc {

namespace {
Heartbeat* g_heartbeat = nullptr;  // the world communicator's, while it runs
}  // namespace

namespace detail {

[[noreturn]] void throw_mpi_error(int code, const char* expr, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING + 1] = {};
  int len = 0;
  std::string reason;
  if (MPI_Error_string(code, text, &len) == MPI_SUCCESS && len > 0) {
    reason.assign(text, static_cast<size_t>(len));
  } else {
    reason = "MPI error code " + std::to_string(code);
  }
  // Name the MPI function, not the whole argument list, to keep the message on one line.
  std::string call(expr ? expr : "?");
  if (auto paren = call.find('('); paren != std::string::npos) call.resize(paren);
  std::string where;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int rank = -1;
    if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS) {
      where = " (rank " + std::to_string(rank) + ")";
    }
  }
  // A peer that is gone makes MPI calls fail too: when the heartbeat finds which (it then ends
  // the process, naming the rank and its host), that line is the one to print, not this one.
  if (g_heartbeat != nullptr) g_heartbeat->settle(std::chrono::milliseconds(1500));
  throw InternalError("MPI call " + call + " failed: " + reason + where, file, line);
}

}  // namespace detail

struct Comm::Mpi {
  MPI_Comm world = MPI_COMM_NULL;  // private duplicate of MPI_COMM_WORLD
  MPI_Comm node = MPI_COMM_NULL;   // ranks sharing this node's memory
  bool owns_init = false;          // this process called MPI_Init_thread
  std::string pml_note;            // prefer_shared_memory_pml's choice, or node_layout_note
};

namespace {

std::unique_ptr<Comm> g_world;  // destroyed at exit, which finalizes MPI

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

/// `read()` of a setting read before MPI starts, or nullopt when its value is bad: the CLI's check
/// of every setting, once MPI runs, then says so in one line for the job.
template <typename Read>
auto before_mpi(Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

bool launched_by_mpi() {
  const std::optional<bool> force = before_mpi([] { return settings::flag_if_set("GTADOC_MPI"); });
  if (force) return *force;
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"}) {
    if (env_set(name)) return true;
  }
  if (env_set("SLURM_PROCID")) {
    const char* ntasks = std::getenv("SLURM_NTASKS");
    if (ntasks != nullptr && std::atol(ntasks) > 1) return true;
  }
  return false;
}

/// Open MPI within one node: its own shared-memory path (pml ob1 over the vader btl) starts in
/// ~0.1 s where UCX's pml takes ~0.3 s (MPI_Init of 4 ranks on the H200 x4 host and of 2 on the
/// dev VM), and moved gtadoc's MPI shuffles by -10..+8 %. Taken when
/// every rank of the job is on this node and no pml was chosen (OMPI_MCA_pml, which `mpirun --mca
/// pml X` also sets); GTADOC_MPI_PML=default leaves Open MPI's own choice. Returns the log line.
std::string prefer_shared_memory_pml() {
  const std::optional<std::string_view> keep =
      before_mpi([] { return settings::word_if_set("GTADOC_MPI_PML"); });
  if (keep == "default") return "";
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (size == nullptr || local == nullptr || std::strcmp(size, local) != 0) return "";
  if (env_set("OMPI_MCA_pml")) return "";
  setenv("OMPI_MCA_pml", "ob1", 1);
  return "MPI: every rank on this node, Open MPI's shared-memory transport (pml ob1; "
         "GTADOC_MPI_PML=default leaves Open MPI's choice)";
}

/// "MPI: 4 ranks on 2 nodes (a: ranks 0-1; b: ranks 2-3), ...": the nodes as MPI's shared-memory
/// split grouped the ranks (each node named by its first rank's processor name). Collective.
std::string node_layout_note(MPI_Comm world, MPI_Comm node) {
  struct Entry {
    int first;  // the node's lowest world rank
    char name[64];
  };
  int rank = 0, size = 0, len = 0;
  MPI_TRY(MPI_Comm_rank(world, &rank));
  MPI_TRY(MPI_Comm_size(world, &size));
  Entry mine{};
  MPI_TRY(MPI_Allreduce(&rank, &mine.first, 1, MPI_INT, MPI_MIN, node));
  char name[MPI_MAX_PROCESSOR_NAME + 1] = {};
  MPI_TRY(MPI_Get_processor_name(name, &len));
  std::snprintf(mine.name, sizeof mine.name, "%s", name);
  std::vector<Entry> all(static_cast<size_t>(size));
  MPI_TRY(MPI_Allgather(&mine, sizeof(Entry), MPI_BYTE, all.data(), sizeof(Entry), MPI_BYTE, world));
  std::string nodes;
  int count = 0;
  for (int first = 0; first < size; ++first) {
    if (all[static_cast<size_t>(first)].first != first) continue;  // not a node's first rank
    std::string ranks;  // runs of consecutive ranks as a-b
    for (int r = first; r < size; ++r) {
      if (all[static_cast<size_t>(r)].first != first) continue;
      int last = r;
      while (last + 1 < size && all[static_cast<size_t>(last + 1)].first == first) ++last;
      ranks += (ranks.empty() ? "" : ",") + std::to_string(r) +
               (last > r ? "-" + std::to_string(last) : "");
      r = last;
    }
    nodes += std::string(count++ == 0 ? "" : "; ") + all[static_cast<size_t>(first)].name +
             ": ranks " + ranks;
  }
  return "MPI: " + std::to_string(size) + " ranks on " + std::to_string(count) + " nodes (" +
         nodes + "); between nodes Open MPI's network transport, no cross-memory reads";
}

/// Test hook GTADOC_FAULT_PAUSE="RANK:CALL:SECONDS[:FILE]": rank RANK of an MPI job sleeps
/// SECONDS on entering the helper CALL (barrier, broadcast, send_bytes, gather, alltoall,
/// alltoallv, alltoallv_records), after one line on standard error, so that a failure test can
/// strike while the other ranks wait in that collective. Once per process; with FILE, at every
/// such call that finds FILE, which it removes (once across restarts of a service).
void fault_pause(const char* call, int rank) {
  struct Spec {
    int rank = -1;
    std::string call, file;
    int seconds = 0;
  };
  static const Spec spec = [] {
    Spec s;
    const std::optional<std::string> v = settings::text_if_set("GTADOC_FAULT_PAUSE");
    if (!v) return s;
    std::vector<std::string> f(1);
    for (char c : *v) {
      if (c == ':' && f.size() < 4)
        f.emplace_back();
      else
        f.back() += c;
    }
    if (f.size() < 3) return s;
    s.rank = std::atoi(f[0].c_str());
    s.call = f[1];
    s.seconds = std::atoi(f[2].c_str());
    if (f.size() == 4) s.file = f[3];
    return s;
  }();
  if (spec.rank != rank || spec.call != call) return;
  if (spec.file.empty()) {
    static std::atomic<bool> done{false};
    if (done.exchange(true)) return;
  } else if (::unlink(spec.file.c_str()) != 0) {
    return;
  }
  std::fprintf(stderr, "gtadoc: test hook: rank %d pauses %d s in %s\n", rank, spec.seconds, call);
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::seconds(spec.seconds));
}

/// NCCL's buffers through cudaMalloc and CUDA IPC instead of its cuMem* path
/// (NCCL_CUMEM_ENABLE=0), unless the user chose: on the H200 x4 host, `gtadoc run` with the NCCL
/// shuffle on 4 GPUs, alternated, init 2.9-3.2 -> 1.9 s, total 3.9-4.2 -> 2.8 s
/// (sequence-count) and 5.3 -> 4.3-4.7 s (ranked-inverted-index); on 2 GPUs within the noise
/// (docs/PERFORMANCE.md). Set here, before MPI and
/// any thread start (setenv is not safe beside other threads' getenv); NCCL reads it at its
/// first communicator.
void prefer_legacy_nccl_buffers() {
  if (!env_set("NCCL_CUMEM_ENABLE")) setenv("NCCL_CUMEM_ENABLE", "0", 1);
}

template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<uint8_t>() {
  return MPI_BYTE;
}
template <>
MPI_Datatype mpi_type<uint32_t>() {
  return MPI_UINT32_T;
}
template <>
MPI_Datatype mpi_type<uint64_t>() {
  return MPI_UINT64_T;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  GTADOC_FAIL("unknown ReduceOp");
}

// MPI rejects nothing for zero counts, but some implementations dislike null buffers.
template <typename T>
T* nonnull(T* p) {
  static T dummy{};
  return p != nullptr ? p : &dummy;
}
template <typename T>
const T* nonnull(const T* p) {
  static const T dummy{};
  return p != nullptr ? p : &dummy;
}

int to_int(size_t v) {
  GTADOC_EXPECTS(v <= static_cast<size_t>(INT_MAX), "MPI count exceeds INT_MAX");
  return static_cast<int>(v);
}

size_t ceil_div(size_t a, size_t b) {
  return (a + b - 1) / b;
}

}  // namespace

Comm::Comm() : mpi_(std::make_unique<Mpi>()) {}

Comm::~Comm() {
  finalize();
}

const std::string& Comm::transport_note() const {
  return mpi_->pml_note;
}

namespace {
std::once_flag g_environment_once;
std::string g_pml_note;  ///< prefer_shared_memory_pml's line, for the log once MPI runs
}  // namespace

void Comm::prepare_environment() {
  std::call_once(g_environment_once, [] {
    if (!launched_by_mpi()) return;
    int initialized = 0;
    MPI_TRY(MPI_Initialized(&initialized));
    if (initialized) return;
    g_pml_note = prefer_shared_memory_pml();
    prefer_legacy_nccl_buffers();
  });
}

Comm& Comm::init(int& argc, char**& argv) {
  if (g_world) return *g_world;
  std::unique_ptr<Comm> comm(new Comm());
  if (launched_by_mpi()) {
    int initialized = 0;
    MPI_TRY(MPI_Initialized(&initialized));
    if (!initialized) {
      prepare_environment();
      comm->mpi_->pml_note = g_pml_note;
      int provided = 0;
      MPI_TRY(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
      comm->mpi_->owns_init = true;
    }
    MPI_TRY(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_dup(MPI_COMM_WORLD, &comm->mpi_->world));
    MPI_TRY(MPI_Comm_set_errhandler(comm->mpi_->world, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_rank(comm->mpi_->world, &comm->rank_));
    MPI_TRY(MPI_Comm_size(comm->mpi_->world, &comm->size_));
    MPI_TRY(MPI_Comm_split_type(comm->mpi_->world, MPI_COMM_TYPE_SHARED, comm->rank_, MPI_INFO_NULL,
                                &comm->mpi_->node));
    MPI_TRY(MPI_Comm_rank(comm->mpi_->node, &comm->local_rank_));
    MPI_TRY(MPI_Comm_size(comm->mpi_->node, &comm->local_size_));
    comm->distributed_ = true;
    // Ranks on several nodes (the same answer on every rank): the log's line says how MPI
    // grouped them, as the node-local decisions see it.
    if (comm->local_size_ != comm->size_)
      comm->mpi_->pml_note = node_layout_note(comm->mpi_->world, comm->mpi_->node);
    if (comm->size_ > 1) comm->start_heartbeat();
  }
  g_world = std::move(comm);
  return *g_world;
}

std::vector<std::unique_ptr<Comm>> Comm::in_process_ranks(int n) {
  GTADOC_EXPECTS(n >= 1, "in_process_ranks needs at least one rank");
  auto group = std::make_shared<LocalGroup>(n);
  std::vector<std::unique_ptr<Comm>> ranks;
  for (int r = 0; r < n; ++r) {
    std::unique_ptr<Comm> c(new Comm());
    c->rank_ = c->local_rank_ = r;
    c->size_ = c->local_size_ = n;
    c->group_ = group;
    ranks.push_back(std::move(c));
  }
  return ranks;
}

std::shared_ptr<const void> Comm::once_in_group(
    const std::string& key, const std::function<std::shared_ptr<const void>()>& make) {
  return group_->once(key, make);
}

void Comm::abandon() {
  if (group_) group_->fail();
}

Comm& Comm::world() {
  if (!g_world) GTADOC_FAIL("Comm::world() called before Comm::init()");
  return *g_world;
}

void Comm::start_heartbeat() {
  MPI_Comm world = mpi_->world;
  // The timeout: a bad value on any rank ends the job with one line, rank 0's.
  int timeout = 0;
  std::string bad;
  try {
    timeout = heartbeat_timeout_from_env();
  } catch (const UsageError& e) {
    bad = e.what();
  }
  int any_bad = bad.empty() ? 0 : 1;
  MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &any_bad, 1, MPI_INT, MPI_MAX, world));
  if (any_bad != 0) {
    if (rank_ == 0)
      throw UsageError(!bad.empty() ? bad
                                    : "GTADOC_HEARTBEAT_TIMEOUT: a bad value on another rank");
    finalize();
    std::exit(static_cast<int>(ErrorKind::kUsage));
  }
  MPI_TRY(MPI_Bcast(&timeout, 1, MPI_INT, 0, world));  // rank 0's value for every rank
  if (timeout == 0) return;

  // Where rank 0 is, and which rank speaks for this node when rank 0 is lost.
  int first = rank_, lowest_other = rank_ == 0 ? INT_MAX : rank_;
  MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, mpi_->node));
  MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &lowest_other, 1, MPI_INT, MPI_MIN, mpi_->node));
  std::unique_ptr<Heartbeat::Listener> listener;
  std::string failed;  // rank 0: why it could not listen
  if (rank_ == 0) {
    try {
      listener = Heartbeat::listen();
    } catch (const Error& e) {
      failed = e.what();
    }
  }
  const Heartbeat::Card mine = Heartbeat::card(listener.get());
  std::vector<Heartbeat::Card> cards(static_cast<size_t>(size_));
  MPI_TRY(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, cards.data(), sizeof mine, MPI_BYTE, world));
  std::unique_ptr<Heartbeat> beat;
  if (cards[0].port != 0) {
    Heartbeat::Options o;
    o.rank = rank_;
    o.size = size_;
    o.root_on_this_node = first == 0;
    o.speaks_for_node = lowest_other == rank_;
    o.timeout_seconds = timeout;
    o.end_job = [](int code) {
      int done = 0;
      MPI_Finalized(&done);
      if (!done) MPI_Abort(MPI_COMM_WORLD, code);
    };
    try {
      beat = Heartbeat::start(o, std::move(cards), std::move(listener));
    } catch (const Error& e) {
      failed = e.what();
    }
  }
  int ok = beat && beat->connected(std::chrono::seconds(7)) ? 1 : 0;
  MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, world));
  if (ok == 0) {
    if (rank_ == 0)
      std::fprintf(stderr,
                   "gtadoc: warning: heartbeat off (%s): a rank that stops answering is not "
                   "detected\n",
                   !failed.empty() ? failed.c_str()
                   : beat          ? beat->why().c_str()
                                   : "start failed");
    return;  // `beat` says goodbye to its peers
  }
  heartbeat_ = std::move(beat);
  g_heartbeat = heartbeat_.get();
}

void Comm::finalize() {
  if (finalized_) return;
  finalized_ = true;
  if (!distributed_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    if (mpi_->node != MPI_COMM_NULL) MPI_Comm_free(&mpi_->node);
    if (mpi_->world != MPI_COMM_NULL) MPI_Comm_free(&mpi_->world);
    if (mpi_->owns_init) MPI_Finalize();
  }
  // Watching through MPI_Finalize (a rank lost there would hang it), then goodbye.
  if (heartbeat_.get() == g_heartbeat) g_heartbeat = nullptr;
  heartbeat_.reset();
}

void Comm::abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (group_) {  // the process goes on: its other ranks unwind, and the caller with them
    group_->fail();
    throw LocalGroupAborted();
  }
  if (distributed_ && !finalized_) {
    if (heartbeat_) heartbeat_->ending(code);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort should not return
  }
  std::exit(code);
}

void Comm::set_max_message_bytes(size_t bytes) {
  GTADOC_EXPECTS(bytes > 0, "max_message_bytes must be positive");
  max_message_bytes_ = std::min(bytes, static_cast<size_t>(INT_MAX));
}

void Comm::barrier() {
  if (distributed_) fault_pause("barrier", rank_);
  if (size_ == 1) return;
  if (group_) return group_->barrier();
  MPI_TRY(MPI_Barrier(mpi_->world));
}

void Comm::bcast_raw(void* data, size_t bytes, int root) {
  auto* p = static_cast<uint8_t*>(data);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(bytes - done, max_message_bytes_);
    MPI_TRY(MPI_Bcast(p + done, to_int(n), MPI_BYTE, root, mpi_->world));
    done += n;
  }
}

void Comm::broadcast(std::vector<uint8_t>& buf, int root) {
  GTADOC_EXPECTS(root >= 0 && root < size_, "broadcast root out of range");
  if (distributed_) fault_pause("broadcast", rank_);
  if (size_ == 1) return;
  if (group_) return group_->broadcast(rank_, buf, root);
  uint64_t bytes = buf.size();
  MPI_TRY(MPI_Bcast(&bytes, 1, MPI_UINT64_T, root, mpi_->world));
  if (rank_ != root) buf.resize(bytes);
  bcast_raw(buf.data(), bytes, root);
}

void Comm::broadcast_idle(std::vector<uint8_t>& buf, int root) {
  GTADOC_EXPECTS(root >= 0 && root < size_, "broadcast root out of range");
  if (size_ == 1) return;
  if (group_) return group_->broadcast(rank_, buf, root);  // waits on a condition: idle
  uint64_t bytes = buf.size();
  MPI_Request request;
  MPI_TRY(MPI_Ibcast(&bytes, 1, MPI_UINT64_T, root, mpi_->world, &request));
  int done = 0;
  for (auto pause = std::chrono::microseconds(20);;) {
    MPI_TRY(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
  if (rank_ != root) buf.resize(bytes);
  bcast_raw(buf.data(), bytes, root);
}

void Comm::send_bytes(std::span<const uint8_t> buf, int dest, int tag) {
  GTADOC_EXPECTS(dest >= 0 && dest < size_ && dest != rank_, "send_bytes: bad destination");
  if (distributed_) fault_pause("send_bytes", rank_);
  if (group_) return group_->send(rank_, dest, tag, buf);
  uint64_t bytes = buf.size();
  MPI_TRY(MPI_Send(&bytes, 1, MPI_UINT64_T, dest, tag, mpi_->world));
  for (size_t done = 0; done < buf.size();) {
    const size_t n = std::min(buf.size() - done, max_message_bytes_);
    MPI_TRY(MPI_Send(nonnull(buf.data() + done), to_int(n), MPI_BYTE, dest, tag, mpi_->world));
    done += n;
  }
}

std::vector<uint8_t> Comm::recv_bytes(int source, int tag) {
  GTADOC_EXPECTS(source >= 0 && source < size_ && source != rank_, "recv_bytes: bad source");
  if (group_) return group_->recv(source, rank_, tag);
  uint64_t bytes = 0;
  MPI_TRY(MPI_Recv(&bytes, 1, MPI_UINT64_T, source, tag, mpi_->world, MPI_STATUS_IGNORE));
  std::vector<uint8_t> out(bytes);
  for (size_t done = 0; done < out.size();) {
    const size_t n = std::min(out.size() - done, max_message_bytes_);
    MPI_TRY(MPI_Recv(nonnull(out.data() + done), to_int(n), MPI_BYTE, source, tag, mpi_->world,
                     MPI_STATUS_IGNORE));
    done += n;
  }
  return out;
}

std::vector<uint64_t> Comm::allgather(uint64_t value) {
  std::vector<uint64_t> out(static_cast<size_t>(size_));
  if (size_ == 1) {
    out[0] = value;
    return out;
  }
  if (group_) return group_->allgather(rank_, value);
  MPI_TRY(MPI_Allgather(&value, 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, mpi_->world));
  return out;
}

uint64_t Comm::allreduce(uint64_t value, ReduceOp op) {
  allreduce(std::span<uint64_t>(&value, 1), op);
  return value;
}

void Comm::allreduce(std::span<uint64_t> values, ReduceOp op) {
  if (size_ == 1) return;
  if (group_) return group_->allreduce(rank_, values, op);
  const size_t chunk = std::max<size_t>(1, max_message_bytes_ / sizeof(uint64_t));
  for (size_t done = 0; done < values.size();) {
    const size_t n = std::min(values.size() - done, chunk);
    MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, values.data() + done, to_int(n), MPI_UINT64_T, mpi_op(op),
                          mpi_->world));
    done += n;
  }
}

bool Comm::allreduce_and(bool value) {
  if (size_ == 1) return value;
  if (group_) return allreduce(value ? 1 : 0, ReduceOp::kMin) != 0;
  int v = value ? 1 : 0;
  MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, mpi_->world));
  return v != 0;
}

bool Comm::allreduce_or(bool value) {
  if (size_ == 1) return value;
  if (group_) return allreduce(value ? 1 : 0, ReduceOp::kMax) != 0;
  int v = value ? 1 : 0;
  MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LOR, mpi_->world));
  return v != 0;
}

std::vector<uint64_t> Comm::alltoall(std::span<const uint64_t> send) {
  GTADOC_EXPECTS(send.size() == static_cast<size_t>(size_), "alltoall needs one value per rank");
  if (distributed_) fault_pause("alltoall", rank_);
  std::vector<uint64_t> out(send.begin(), send.end());
  if (size_ == 1) return out;
  if (group_) return group_->alltoall(rank_, send);
  MPI_TRY(MPI_Alltoall(send.data(), 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, mpi_->world));
  return out;
}

std::vector<std::vector<uint8_t>> Comm::gather(std::span<const uint8_t> buf, int root) {
  GTADOC_EXPECTS(root >= 0 && root < size_, "gather root out of range");
  if (distributed_) fault_pause("gather", rank_);
  std::vector<std::vector<uint8_t>> out;
  if (size_ == 1) {
    out.emplace_back(buf.begin(), buf.end());
    return out;
  }
  if (group_) return group_->allgather_bytes(rank_, buf, root);
  const std::vector<uint64_t> sizes = allgather(buf.size());
  const size_t p = static_cast<size_t>(size_);
  const bool is_root = rank_ == root;
  if (is_root) {
    out.resize(p);
    for (size_t r = 0; r < p; ++r) out[r].resize(sizes[r]);
  }
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  // One Gatherv when everything fits in one message, otherwise rounds of at most `quota` bytes
  // per rank, received into a staging buffer on root.
  const size_t quota = total <= max_message_bytes_ ? std::max<size_t>(1, total)
                                                   : std::max<size_t>(1, max_message_bytes_ / p);
  size_t rounds = 0;
  for (uint64_t s : sizes) rounds = std::max(rounds, ceil_div(s, quota));
  std::vector<int> counts(p), displs(p);
  std::vector<uint8_t> stage;
  for (size_t k = 0; k < rounds; ++k) {
    const size_t base = k * quota;
    int offset = 0;
    for (size_t r = 0; r < p; ++r) {
      const size_t left = sizes[r] > base ? sizes[r] - base : 0;
      counts[r] = static_cast<int>(std::min(left, quota));
      displs[r] = offset;
      offset += counts[r];
    }
    if (is_root) stage.resize(static_cast<size_t>(offset));
    const int mine = counts[static_cast<size_t>(rank_)];
    MPI_TRY(MPI_Gatherv(nonnull(buf.data() + std::min<size_t>(base, buf.size())), mine, MPI_BYTE,
                        nonnull(stage.data()), counts.data(), displs.data(), MPI_BYTE, root,
                        mpi_->world));
    if (is_root) {
      for (size_t r = 0; r < p; ++r) {
        if (counts[r] > 0) std::memcpy(out[r].data() + base, stage.data() + displs[r], counts[r]);
      }
    }
  }
  return out;
}

std::vector<std::vector<uint8_t>> Comm::allgather_bytes(std::span<const uint8_t> buf) {
  std::vector<std::vector<uint8_t>> out;
  if (size_ == 1) {
    out.emplace_back(buf.begin(), buf.end());
    return out;
  }
  if (group_) return group_->allgather_bytes(rank_, buf);
  const std::vector<uint64_t> sizes = allgather(buf.size());
  const size_t p = static_cast<size_t>(size_);
  out.resize(p);
  uint64_t total = 0;
  for (size_t r = 0; r < p; ++r) {
    out[r].resize(sizes[r]);
    total += sizes[r];
  }
  const size_t quota = total <= max_message_bytes_ ? std::max<size_t>(1, total)
                                                   : std::max<size_t>(1, max_message_bytes_ / p);
  size_t rounds = 0;
  for (uint64_t s : sizes) rounds = std::max(rounds, ceil_div(s, quota));
  std::vector<int> counts(p), displs(p);
  std::vector<uint8_t> stage;
  for (size_t k = 0; k < rounds; ++k) {
    const size_t base = k * quota;
    int offset = 0;
    for (size_t r = 0; r < p; ++r) {
      const size_t left = sizes[r] > base ? sizes[r] - base : 0;
      counts[r] = static_cast<int>(std::min(left, quota));
      displs[r] = offset;
      offset += counts[r];
    }
    stage.resize(static_cast<size_t>(offset));
    const int mine = counts[static_cast<size_t>(rank_)];
    MPI_TRY(MPI_Allgatherv(nonnull(buf.data() + std::min<size_t>(base, buf.size())), mine, MPI_BYTE,
                           nonnull(stage.data()), counts.data(), displs.data(), MPI_BYTE,
                           mpi_->world));
    for (size_t r = 0; r < p; ++r) {
      if (counts[r] > 0) std::memcpy(out[r].data() + base, stage.data() + displs[r], counts[r]);
    }
  }
  return out;
}

template <typename T>
std::vector<T> Comm::alltoallv_impl(std::span<const T> send, std::span<const size_t> send_counts,
                                    std::vector<size_t>* recv_counts) {
  const size_t p = static_cast<size_t>(size_);
  GTADOC_EXPECTS(send_counts.size() == p, "alltoallv needs one send count per rank");
  if (distributed_) fault_pause("alltoallv", rank_);
  size_t send_total = 0;
  for (size_t c : send_counts) send_total += c;
  GTADOC_EXPECTS(send_total == send.size(), "alltoallv send counts do not match the buffer");
  if (size_ == 1) {
    if (recv_counts) recv_counts->assign(1, send_total);
    return std::vector<T>(send.begin(), send.end());
  }
  if (group_) {
    const std::vector<uint8_t> got = group_->alltoallv(
        rank_, {reinterpret_cast<const uint8_t*>(send.data()), send.size() * sizeof(T)}, sizeof(T),
        send_counts, recv_counts);
    std::vector<T> out(got.size() / sizeof(T));
    if (!got.empty()) std::memcpy(out.data(), got.data(), got.size());
    return out;
  }

  std::vector<uint64_t> sc(send_counts.begin(), send_counts.end());
  const std::vector<uint64_t> rc = alltoall(sc);
  std::vector<size_t> soff(p + 1, 0), roff(p + 1, 0);
  for (size_t r = 0; r < p; ++r) {
    soff[r + 1] = soff[r] + sc[r];
    roff[r + 1] = roff[r] + rc[r];
  }
  if (recv_counts) recv_counts->assign(rc.begin(), rc.end());
  std::vector<T> out(roff[p]);

  const size_t limit = std::max<size_t>(1, max_message_bytes_ / sizeof(T));
  const size_t quota = std::max<size_t>(1, limit / p);
  uint64_t agree[2] = {send_total > limit || roff[p] > limit ? 1u : 0u, 0};
  for (size_t r = 0; r < p; ++r) {
    agree[1] = std::max<uint64_t>(agree[1], ceil_div(std::max(sc[r], rc[r]), quota));
  }
  allreduce(std::span<uint64_t>(agree, 2), ReduceOp::kMax);

  std::vector<int> scount(p), sdispl(p), rcount(p), rdispl(p);
  if (agree[0] == 0) {  // every rank's totals fit in one message
    for (size_t r = 0; r < p; ++r) {
      scount[r] = to_int(sc[r]);
      sdispl[r] = to_int(soff[r]);
      rcount[r] = to_int(rc[r]);
      rdispl[r] = to_int(roff[r]);
    }
    MPI_TRY(MPI_Alltoallv(nonnull(send.data()), scount.data(), sdispl.data(), mpi_type<T>(),
                          nonnull(out.data()), rcount.data(), rdispl.data(), mpi_type<T>(),
                          mpi_->world));
    return out;
  }

  // Rounds: each pair moves at most `quota` elements per round, staged contiguously.
  std::vector<T> sstage, rstage;
  for (uint64_t k = 0; k < agree[1]; ++k) {
    const size_t base = k * quota;
    int so = 0, ro = 0;
    for (size_t r = 0; r < p; ++r) {
      scount[r] = static_cast<int>(std::min<size_t>(sc[r] > base ? sc[r] - base : 0, quota));
      rcount[r] = static_cast<int>(std::min<size_t>(rc[r] > base ? rc[r] - base : 0, quota));
      sdispl[r] = so;
      rdispl[r] = ro;
      so += scount[r];
      ro += rcount[r];
    }
    sstage.resize(static_cast<size_t>(so));
    rstage.resize(static_cast<size_t>(ro));
    for (size_t r = 0; r < p; ++r) {
      if (scount[r] > 0) {
        std::memcpy(sstage.data() + sdispl[r], send.data() + soff[r] + base,
                    static_cast<size_t>(scount[r]) * sizeof(T));
      }
    }
    MPI_TRY(MPI_Alltoallv(nonnull(sstage.data()), scount.data(), sdispl.data(), mpi_type<T>(),
                          nonnull(rstage.data()), rcount.data(), rdispl.data(), mpi_type<T>(),
                          mpi_->world));
    for (size_t r = 0; r < p; ++r) {
      if (rcount[r] > 0) {
        std::memcpy(out.data() + roff[r] + base, rstage.data() + rdispl[r],
                    static_cast<size_t>(rcount[r]) * sizeof(T));
      }
    }
  }
  return out;
}

void Comm::alltoallv_records(uint32_t width, const uint32_t* keys, const uint64_t* counts,
                             std::span<const size_t> send_count, std::span<const size_t> send_first,
                             uint32_t* out_keys, uint64_t* out_counts,
                             std::span<const size_t> recv_count,
                             std::span<const size_t> recv_first) {
  const size_t p = static_cast<size_t>(size_);
  GTADOC_EXPECTS(send_count.size() == p && send_first.size() == p && recv_count.size() == p &&
                     recv_first.size() == p,
                 "alltoallv_records needs one count and position per rank");
  GTADOC_EXPECTS(width >= 1, "alltoallv_records: records without keys");
  if (distributed_) fault_pause("alltoallv_records", rank_);
  if (group_ && size_ > 1)
    return group_->alltoallv_records(rank_, width, keys, counts, send_count, send_first, out_keys,
                                     out_counts, recv_count, recv_first);
  if (!distributed_) {  // one rank: its records to itself
    GTADOC_EXPECTS(send_count[0] == recv_count[0], "alltoallv_records: counts disagree");
    std::memmove(out_keys + recv_first[0] * width, keys + send_first[0] * width,
                 send_count[0] * width * sizeof(uint32_t));
    std::memmove(out_counts + recv_first[0], counts + send_first[0],
                 send_count[0] * sizeof(uint64_t));
    return;
  }
  std::vector<int> sc(p), sd(p), rc(p), rd(p);
  for (size_t r = 0; r < p; ++r) {
    sc[r] = to_int(send_count[r]);
    sd[r] = to_int(send_first[r]);
    rc[r] = to_int(recv_count[r]);
    rd[r] = to_int(recv_first[r]);
  }
  // One key row is one element of a contiguous type: positions count records, not values.
  MPI_Datatype row = MPI_DATATYPE_NULL;
  MPI_TRY(MPI_Type_contiguous(static_cast<int>(width), MPI_UINT32_T, &row));
  struct Free {
    MPI_Datatype& t;
    ~Free() { MPI_Type_free(&t); }
  } free_row{row};
  MPI_TRY(MPI_Type_commit(&row));
  MPI_TRY(MPI_Alltoallv(nonnull(keys), sc.data(), sd.data(), row, nonnull(out_keys), rc.data(),
                        rd.data(), row, mpi_->world));
  MPI_TRY(MPI_Alltoallv(nonnull(counts), sc.data(), sd.data(), MPI_UINT64_T, nonnull(out_counts),
                        rc.data(), rd.data(), MPI_UINT64_T, mpi_->world));
}

std::vector<uint8_t> Comm::alltoallv(std::span<const uint8_t> send,
                                     std::span<const size_t> send_counts,
                                     std::vector<size_t>* recv_counts) {
  return alltoallv_impl<uint8_t>(send, send_counts, recv_counts);
}

std::vector<uint32_t> Comm::alltoallv(std::span<const uint32_t> send,
                                      std::span<const size_t> send_counts,
                                      std::vector<size_t>* recv_counts) {
  return alltoallv_impl<uint32_t>(send, send_counts, recv_counts);
}

std::vector<uint64_t> Comm::alltoallv(std::span<const uint64_t> send,
                                      std::span<const size_t> send_counts,
                                      std::vector<size_t>* recv_counts) {
  return alltoallv_impl<uint64_t>(send, send_counts, recv_counts);
}

}  // namespace gtadoc
