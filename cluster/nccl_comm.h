// NCCL between the ranks' GPUs: one communicator over the ranks of a Comm,
// each rank on its own GPU, built from the MPI one (rank 0's unique id broadcast over MPI), and
// the shuffle of device-resident records through it. NCCL errors go through NCCL_TRY
// (common/error.h). nccl.h stays in nccl_comm.cpp.
//
// Guarantees:
//  - NcclComm::start is collective over MPI on the calling thread; the returned starter creates
//    the communicator (blocking until every rank has joined) and connects every pair of ranks,
//    and may run on another thread, so that NCCL's set-up overlaps loading the shards.
//  - shuffle_device_records delivers, byte for byte, what shuffle_records (shuffle.h) delivers
//    for the same records partitioned by partition_records: the records from rank 0 first, then
//    rank 1, ..., each source's records in its partitioned order (left on this rank's GPU, where
//    the owner's reduce runs before they are downloaded).
//  - Without NCCL in the build, available() is false and start() throws InternalError.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "worker/device_records.h"
#include "worker/records.h"

namespace gtadoc {

class Comm;

class NcclComm {
 public:
  /// True when this build has NCCL.
  static bool available();
  /// Collective (MPI): agrees on a unique id, then returns the starter that creates this rank's
  /// communicator on CUDA device `device`.
  static std::function<std::unique_ptr<NcclComm>()> start(Comm& comm, int device);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  /// The ncclComm_t.
  void* handle() const { return handle_; }

 private:
  NcclComm(void* handle, int rank, int size, int device)
      : handle_(handle), rank_(rank), size_(size), device_(device) {}
  /// One small exchange with every peer, so that NCCL's lazy connection set-up happens here.
  void connect_peers();
  void* handle_;
  int rank_, size_, device_;
};

/// Whether this job's shuffle runs on the GPUs with NCCL: every rank runs the GPU engine on a
/// GPU of its own, NCCL is built, and GTADOC_SHUFFLE (auto | nccl | mpi | host, default auto)
/// allows it. `auto` takes NCCL for resident shards (gtadoc serve: NCCL's set-up, ~0.6-0.9 s on
/// two GPUs, is paid once and every shuffle is 10-20x faster than MPI's) and for a one-query
/// process whose shuffle is large (`large_shuffle`: large_shuffle_task), MPI for the other
/// one-query processes (gtadoc run: the set-up would cost more than the shuffle saves;
/// docs/PERFORMANCE.md, "End to end"). With MPI, GPU ranks still keep their records on the GPUs
/// (cluster/device_shuffle.h) unless GTADOC_SHUFFLE=host.
/// Collective; `why` gets the reason of the choice. UsageError for another GTADOC_SHUFFLE.
bool use_nccl_shuffle(Comm& comm, bool gpu_engine, bool resident, bool large_shuffle,
                      std::string* why);

/// Whether GTADOC_SHUFFLE and the kind of job leave NCCL possible (use_nccl_shuffle's choice before
/// it asks the ranks): nccl yes, mpi and host no, auto for resident shards or a large shuffle
/// (UsageError for anything else). Needs no MPI: the start-up asks it
/// before MPI starts (whether the ranks of a node must keep each other's GPUs visible,
/// common/visible_gpus.h).
bool shuffle_may_use_nccl(bool resident, bool large_shuffle);

/// Whether a one-query process's shuffle of `task` is large enough to repay NCCL's set-up, with
/// `ranks_on_node` ranks sharing a node (-1: unknown), `shard_bytes_per_rank` bytes of shard files
/// per rank (shard_file_bytes / ranks), and `pulls_on_one_node` when every rank of the job is on
/// this node and cross-memory pulls are expected (cluster/cross_memory.h). Without NCCL the
/// records of GPU ranks move staged through host memory (cluster/device_shuffle.h) and are
/// reduced on the GPUs; NCCL's set-up, with every GPU kept visible to every rank, costs ~0.45-0.55
/// s more on two H200s and 2.3-2.5 s on four (docs/PERFORMANCE.md, "End to end").
///  - On one node with pulls: never. The staged move with pulls ran at NCCL's speed (ranked-
///    inverted-index on synth-2, 23.9 M records a rank: 0.073 s against NCCL's ~0.15 s for twice
///    as many on synth-4), so the set-up is never repaid.
///  - Otherwise (ranks on several nodes, where MPI moves the staged records, ~2-2.7 GB/s a rank
///    within a node on two H200s), at most two ranks a node: ranked-inverted-index from
///    kNcclRankedShardBytesPerRank (its crossing on one node, interpolated between 46 and 172 MB
///    per rank, ~105 MB), sequence-count, inverted-index and term-vector from
///    kNcclShardBytesPerRank (sequence-count's crossing extrapolated at ~370 MB, inverted-index's
///    later); word-count and sort never (their shuffles are small).
bool large_shuffle_task(Task task, int ranks_on_node, uint64_t shard_bytes_per_rank,
                        bool pulls_on_one_node);
inline constexpr uint64_t kNcclRankedShardBytesPerRank = uint64_t{96} << 20;
inline constexpr uint64_t kNcclShardBytesPerRank = uint64_t{384} << 20;

/// The shuffle of records resident on this rank's GPU, partitioned by owner with `offsets`
/// (DeviceRecords::partition): every partition goes to its owner over NCCL; returns the records
/// this rank owns, on its GPU. Collective over comm (MPI for the sizes) and nccl.
std::unique_ptr<DeviceRecords> shuffle_device_records(Comm& comm, NcclComm& nccl,
                                                      DeviceRecords& records,
                                                      std::span<const uint64_t> offsets);

}  // namespace gtadoc
