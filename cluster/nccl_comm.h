// NCCL between the ranks' GPUs (issue 10 item 1): one communicator over the ranks of a Comm,
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
/// GPU of its own, NCCL is built, and GTADOC_SHUFFLE (auto | nccl | mpi, default auto) allows
/// it. `auto` takes NCCL for resident shards (gtadoc serve: NCCL's set-up, ~0.6-0.9 s on two
/// GPUs, is paid once and every shuffle is 10-20x faster than MPI's) and for a one-query process
/// whose task shuffles much (`large_shuffle`: large_shuffle_task, where the records staying on
/// the GPUs repay the set-up), MPI for the other one-query processes (gtadoc
/// run: the set-up would cost more than the shuffle saves; docs/PERFORMANCE.md §8, §10).
/// Collective; `why` gets the reason of the choice. UsageError for another GTADOC_SHUFFLE.
bool use_nccl_shuffle(Comm& comm, bool gpu_engine, bool resident, bool large_shuffle,
                      std::string* why);

/// Whether GTADOC_SHUFFLE and the kind of job leave NCCL possible (use_nccl_shuffle's choice before
/// it asks the ranks): nccl yes, mpi no, auto for resident shards or a large shuffle (anything
/// else: yes, use_nccl_shuffle then rejects it). Needs no MPI: the start-up asks it before MPI
/// starts (whether the ranks of a node must keep each other's GPUs visible, common/visible_gpus.h).
bool shuffle_may_use_nccl(bool resident, bool large_shuffle);

/// Whether a one-query process's shuffle of `task` is large enough to repay NCCL's set-up, with
/// `ranks_on_node` ranks sharing a node (-1: unknown) and `shard_bytes_per_rank` bytes of shard
/// files per rank (shard_file_bytes / ranks). The set-up grows with the ranks: init 1.0-1.1 s on
/// 2 GPUs, 2.3-2.5 s on 4 (H200 x4, docs/PERFORMANCE.md §12); since NCCL_CUMEM_ENABLE=0 about
/// 0.4 s more than MPI's on two H200s (§14). ranked-inverted-index repays it on 2 and 4 GPUs (MPI
/// 0.3-0.7 s slower); sequence-count on 2 (equal to 0.4 s faster, §10, §12) but not on 4 (MPI
/// with narrowed GPUs 0.8 s faster), so it takes NCCL only up to 2 ranks a node.
/// inverted-index and term-vector take NCCL up to 2 ranks a node from kNcclShardBytesPerRank of
/// shard files per rank: the MPI shuffle and host merge of their records cost ~6.5 ms per MB of
/// shards per rank on two H200s, against NCCL's ~0.4 s (§14: MPI 0.2 s faster at 46 MB of
/// archive per rank, NCCL 0.1-0.2 s faster at 87 MB and 0.6-0.9 s at 172 MB).
bool large_shuffle_task(Task task, int ranks_on_node, uint64_t shard_bytes_per_rank);
inline constexpr uint64_t kNcclShardBytesPerRank = uint64_t{64} << 20;

/// The shuffle of records resident on this rank's GPU, partitioned by owner with `offsets`
/// (DeviceRecords::partition): every partition goes to its owner over NCCL; returns the records
/// this rank owns, on its GPU. Collective over comm (MPI for the sizes) and nccl.
std::unique_ptr<DeviceRecords> shuffle_device_records(Comm& comm, NcclComm& nccl,
                                                      DeviceRecords& records,
                                                      std::span<const uint64_t> offsets);

}  // namespace gtadoc
