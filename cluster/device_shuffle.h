// The shuffle of device-resident records over MPI, for GPU ranks that do not
// use NCCL: a one-query process, where NCCL's set-up (~0.4 s on two GPUs, plus every GPU kept
// visible to every rank) costs more than it saves, or a build or job without NCCL. The records
// stay device-resident on both sides: each rank's parts for the other ranks are downloaded
// (pinned, multi-threaded staging), moved by exchange_records (cluster/shuffle.h), and uploaded
// to their owner's GPU; the own part is copied on the device. The owner then reduces on its GPU,
// so no rank merges records on the host (the host path it replaces: records downloaded,
// partitioned, exchanged and merged on the host at 0.9-1.0 GB/s).
//
// Guarantees:
//  - Delivers, record for record and in the same order, what shuffle_device_records (NCCL,
//    cluster/nccl_comm.h) and shuffle_records (of the same partitioned records on the host)
//    deliver: the records from rank 0 first, then rank 1, ..., each source's in partitioned order.
//  - Collective over `comm`; every rank passes its records partitioned by owner
//    (DeviceRecords::partition), offsets with size() + 1 entries. No CUDA type here: it works
//    through the DeviceRecords interface only (so it is tested with host-memory records in CI).
//  - Host memory: the rank's remote parts and what it receives, once each.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "cluster/shuffle.h"
#include "worker/device_records.h"

namespace gtadoc {

class Comm;

/// GTADOC_SHUFFLE: auto | nccl | mpi | host (unset or empty: auto); UsageError for any other
/// value (common/settings.h).
std::string shuffle_setting();

/// Whether records held on the GPUs of every rank move between them (NCCL or this MPI path),
/// rather than down to the hosts for the host shuffle and merge: yes unless GTADOC_SHUFFLE=host
/// (kept to compare the two and as a way around a device fault).
bool device_shuffle_wanted();

std::unique_ptr<DeviceRecords> shuffle_device_records_mpi(
    Comm& comm, DeviceRecords& records, std::span<const uint64_t> offsets,
    size_t max_round_bytes = kDefaultShuffleRoundBytes);

}  // namespace gtadoc
