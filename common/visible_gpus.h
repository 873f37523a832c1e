// Which GPUs a process lets the CUDA driver see. A gtadoc process uses one GPU (its local rank's),
// but the driver's start-up initializes every visible device: on a two-GPU H200 host,
// cudaGetDeviceCount took 323-430 ms with both visible and 125-132 ms with one (PERFORMANCE.md
// §11). So, before any CUDA or MPI call, a process that is the only rank on its node (it would
// pick device 0 = local rank 0 % visible devices) narrows CUDA_VISIBLE_DEVICES to that device.
// Ranks that share a node keep every device visible: NCCL moves data between their GPUs through
// CUDA IPC, which needs the peers' devices visible (with narrowed ranks the pipeline check saw
// NCCL refused, "2 ranks on a node with 1 GPUs"). Nothing is narrowed when the choice is not
// certain either: a launcher that does not say how many ranks share the node, MIG instances, a
// CUDA_VISIBLE_DEVICES entry that is not a plain index below the GPU count or a GPU-UUID, or
// GTADOC_NARROW_GPUS=0.
#pragma once

#include <optional>
#include <string>

namespace gtadoc {

/// The one device to leave visible, or nothing. `visible`: CUDA_VISIBLE_DEVICES (nullptr when
/// unset); `ranks_on_node`: this node's ranks (-1: unknown); `physical_gpus`: the GPUs the driver
/// lists; `mig`: some GPU has MIG instances.
std::optional<std::string> narrowed_visible_devices(const char* visible, int ranks_on_node,
                                                    int physical_gpus, bool mig);

/// Applies narrowed_visible_devices to this process from its environment and /proc (call
/// first in main, before threads start). Returns a line for the log, empty when nothing changed.
std::string narrow_visible_gpus();

}  // namespace gtadoc
