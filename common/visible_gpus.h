// Which GPUs a process lets the CUDA driver see. A gtadoc process uses one GPU (its local rank's),
// but the driver's start-up initializes every visible device: on a two-GPU H200 host,
// cudaGetDeviceCount took 323-430 ms with both visible and 125-132 ms with one
// (docs/PERFORMANCE.md, "End to end"), and on a four-GPU host the ranks' start-up grew with the
// ranks (docs/PERFORMANCE.md, "Scaling over the GPUs of one host"). So, before any CUDA
// or MPI call, a process narrows CUDA_VISIBLE_DEVICES to the device it would pick (local rank %
// visible devices) when
//  - it is the only rank on its node, or
//  - its ranks share the node but will not move data between their GPUs through CUDA IPC
//    (`peers_needed` false: the caller knows the command; NCCL needs every peer's device visible
//    — with narrowed ranks NCCL is refused, "2 ranks on a node with 1 GPUs" — so the service
//    and runs whose shuffle may be NCCL keep every device) and the launcher says the local rank.
// Nothing is narrowed when the choice is not certain: a launcher that does not say how many ranks
// share the node, MIG instances, a CUDA_VISIBLE_DEVICES entry that is not a plain index below the
// GPU count or a GPU-UUID, or GTADOC_NARROW_GPUS=0.
#pragma once

#include <optional>
#include <string>

namespace gtadoc {

/// The one device to leave visible, or nothing. `visible`: CUDA_VISIBLE_DEVICES (nullptr when
/// unset); `ranks_on_node`: this node's ranks (-1: unknown); `local_rank`: this process's rank on
/// the node (-1: unknown); `physical_gpus`: the GPUs the driver lists; `mig`: some GPU has MIG
/// instances; `peers_needed`: the ranks of the node may exchange data GPU to GPU.
std::optional<std::string> narrowed_visible_devices(const char* visible, int ranks_on_node,
                                                    int local_rank, int physical_gpus, bool mig,
                                                    bool peers_needed);

/// The ranks on this node from the launchers' environment (Open MPI, MVAPICH, Intel MPI, srun):
/// 1 without a launcher, -1 when a launcher is present but does not say.
int ranks_on_node_from_env();

/// This process's rank on its node from the launchers' environment (-1: not said).
int local_rank_from_env();

/// The ranks of the whole job from the launchers' environment (Open MPI, MVAPICH, PMI, srun): 1
/// without a launcher, -1 when a launcher is present but does not say.
int ranks_in_job_from_env();

/// The GPUs the CUDA driver will list, known without starting it: the physical GPUs
/// (/proc/driver/nvidia/gpus), or, when CUDA_VISIBLE_DEVICES is set, its entries up to the first
/// the driver would stop at (not an index below that count, not a GPU-UUID). 0 without a driver.
int visible_gpus_from_env();

/// Applies narrowed_visible_devices to this process from its environment and /proc (call
/// first in main, before threads start). Returns a line for the log, empty when nothing changed.
std::string narrow_visible_gpus(bool peers_needed);

}  // namespace gtadoc
