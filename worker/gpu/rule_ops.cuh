// Per-rule operators over one height level of the DAG, with the load-balancing strategy as a
// parameter (gunrock's operator shape): an Op provides
//   __device__ void thread(uint32_t rule) const;             // one thread does the whole rule
//   __device__ void warp(uint32_t rule, uint32_t lane) const; // 32 lanes cooperate
//   __device__ void block(uint32_t rule) const;               // kRuleBlock threads cooperate
// and launch_level runs each rule of the level with the variant of its workload class (see
// LevelSchedule): short bodies one thread per rule, medium a warp, long a block. All variants
// must give the same result.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "worker/gpu/gpu_internal.h"
#include "worker/gpu/primitives.cuh"

namespace gtadoc::gpu {

template <class Op>
__global__ void rules_by_thread(const uint32_t* list, uint32_t n, Op op) {
  const uint64_t i = global_thread();
  if (i < n) op.thread(list[i]);
}

template <class Op>
__global__ void rules_by_warp(const uint32_t* list, uint32_t n, Op op) {
  const uint64_t w = global_thread() / kWarp;  // uniform across the warp
  if (w < n) op.warp(list[w], threadIdx.x % kWarp);
}

template <class Op>
__global__ void __launch_bounds__(kRuleBlock) rules_by_block(const uint32_t* list, Op op) {
  op.block(list[blockIdx.x]);
}

/// Runs op on every rule of level `lv` (stream-ordered, no synchronization).
template <class Op>
void launch_level(const GpuShard& s, const LevelSchedule& lv, const Op& op, cudaStream_t stream) {
  const uint32_t* list = s.sched.data() + lv.begin;
  if (lv.threads > 0) {
    rules_by_thread<<<grid_for(lv.threads), kBlock, 0, stream>>>(list, lv.threads, op);
    GTADOC_CHECK_LAUNCH();
  }
  if (lv.warps > 0) {
    const uint64_t threads = uint64_t{lv.warps} * kWarp;
    rules_by_warp<<<static_cast<unsigned>((threads + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
        list + lv.threads, lv.warps, op);
    GTADOC_CHECK_LAUNCH();
  }
  if (lv.blocks > 0) {
    rules_by_block<<<lv.blocks, kRuleBlock, 0, stream>>>(list + lv.threads + lv.warps, op);
    GTADOC_CHECK_LAUNCH();
  }
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
