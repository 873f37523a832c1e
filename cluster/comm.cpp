// Comm: MPI world communicator with a no-MPI single-rank fallback. See comm.h. Here: start-up
// (the launcher's detection is cluster/launcher.cpp), in-process ranks, the heartbeat, finalize
// and abort, and MPI's errors as InternalErrors; the collectives are in cluster/collectives.cpp.
#include "cluster/comm.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/comm_mpi.h"
#include "cluster/heartbeat.h"
#include "cluster/launcher.h"
#include "cluster/local_group.h"
#include "common/error.h"

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

namespace {

std::unique_ptr<Comm> g_world;  // destroyed at exit, which finalizes MPI

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

}  // namespace gtadoc
