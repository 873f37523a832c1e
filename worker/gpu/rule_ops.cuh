// Per-rule operators over one height level of the DAG, with the load-balancing strategy as a
// parameter (gunrock's operator shape): an Op provides
//   __device__ void thread(uint32_t rule) const;             // one thread does the whole rule
//   __device__ void warp(uint32_t rule, uint32_t lane) const; // 32 lanes cooperate
//   __device__ void block(uint32_t rule) const;               // kRuleBlock threads cooperate
// and launch_level runs each rule of the level with the variant of its workload class (see
// LevelSchedule): short bodies one thread per rule, medium a warp, long a block, all in one
// launch per level. All variants must give the same result.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {

static_assert(kRuleBlock == kBlock && kRuleBlock % kWarp == 0,
              "one block size serves every workload class of a level");

/// Every rule of one level in one launch: blocks [0, tb) run the thread-class rules (one per
/// thread), blocks [tb, tb + wb) the warp-class rules (one per warp), each remaining block one
/// block-class rule. The class is uniform per block, so no warp mixes classes, and a level costs
/// one launch instead of three (the DAG's depth is the length of the launch chain).
template <class Op>
__global__ void __launch_bounds__(kRuleBlock)
    rules_of_level(const uint32_t* list, uint32_t threads, uint32_t warps, uint32_t tb, uint32_t wb,
                   Op op) {
  const uint32_t b = blockIdx.x;
  if (b < tb) {
    const uint32_t i = b * kRuleBlock + threadIdx.x;
    if (i < threads) op.thread(list[i]);
  } else if (b < tb + wb) {
    const uint32_t w = ((b - tb) * kRuleBlock + threadIdx.x) / kWarp;  // uniform across the warp
    if (w < warps) op.warp(list[threads + w], threadIdx.x % kWarp);
  } else {
    op.block(list[threads + warps + (b - tb - wb)]);
  }
}

/// Runs op on every rule of level `lv` (stream-ordered, no synchronization).
template <class Op>
void launch_level(const GpuShard& s, const LevelSchedule& lv, const Op& op, cudaStream_t stream) {
  const uint32_t* list = s.sched.data() + lv.begin;
  const uint64_t tb = (uint64_t{lv.threads} + kRuleBlock - 1) / kRuleBlock;
  const uint64_t wb = (uint64_t{lv.warps} * kWarp + kRuleBlock - 1) / kRuleBlock;
  const uint64_t blocks = tb + wb + lv.blocks;
  if (blocks == 0) return;
  GTADOC_EXPECTS(blocks < (uint64_t{1} << 31), "gpu engine: too many rules in one level");
  rules_of_level<<<static_cast<unsigned>(blocks), kRuleBlock, 0, stream>>>(
      list, lv.threads, lv.warps, static_cast<uint32_t>(tb), static_cast<uint32_t>(wb), op);
  GTADOC_CHECK_LAUNCH();
}

/// Warp-wide sums and inclusive prefix sums (all 32 lanes active).
__device__ inline uint64_t warp_sum(uint64_t v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline uint32_t warp_inclusive_sum(uint32_t v, uint32_t lane) {
  for (int o = 1; o < kWarp; o <<= 1) {
    const uint32_t t = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= static_cast<uint32_t>(o)) v += t;
  }
  return v;
}

}  // namespace gtadoc::gpu
