// Building blocks shared by the GPU engine's traversals: launch geometry, small device helpers
// (segment search for load-balanced expansion, gathers, fills) and host entry points to the CUB
// primitives the engine uses (scan, radix sort, reduce-by-key), all stream-ordered on a
// MemoryPool's stream. Functions that return a count synchronize to hand it to the host; the
// others only enqueue work.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "worker/device/device_buffer.cuh"

namespace gtadoc::gpu {

inline constexpr int kBlock = 256;  ///< threads per block of the flat (grid-stride) kernels
inline constexpr int kWarp = 32;

/// Blocks for a grid-stride loop over n > 0 items.
inline unsigned grid_for(uint64_t n, int block = kBlock) {
  return static_cast<unsigned>(
      std::min<uint64_t>((n + static_cast<uint64_t>(block) - 1) / block, uint64_t{1} << 20));
}

/// Bits needed to hold every value in [0, v] (at least 1).
inline int bits_for(uint64_t v) {
  return std::max(1, static_cast<int>(std::bit_width(v)));
}

/// Grid-stride loop index helpers.
__device__ inline uint64_t global_thread() {
  return static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline uint64_t global_stride() {
  return static_cast<uint64_t>(gridDim.x) * blockDim.x;
}

/// The segment holding flat index i: the largest s < nseg with off[s] <= i, where off is an
/// exclusive prefix sum of segment lengths (off[0] = 0, off[nseg] = total > i). Empty segments
/// are never returned.
__device__ inline uint64_t find_segment(const uint64_t* off, uint64_t nseg, uint64_t i) {
  uint64_t lo = 0, hi = nseg;  // off[lo] <= i < off[hi]
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (off[mid] <= i) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <class T>
__global__ void fill_kernel(T* out, T value, uint64_t n) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) out[i] = value;
}
template <class T>
__global__ void iota_kernel(T* out, uint64_t n) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) out[i] = static_cast<T>(i);
}
/// out[i] = in[idx[i]]
template <class T, class I>
__global__ void gather_kernel(const T* in, const I* idx, T* out, uint64_t n) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) out[i] = in[idx[i]];
}

template <class T>
void fill_async(T* out, T value, uint64_t n, cudaStream_t stream) {
  if (n == 0) return;
  fill_kernel<<<grid_for(n), kBlock, 0, stream>>>(out, value, n);
  GTADOC_CHECK_LAUNCH();
}
template <class T>
void iota_async(T* out, uint64_t n, cudaStream_t stream) {
  if (n == 0) return;
  iota_kernel<<<grid_for(n), kBlock, 0, stream>>>(out, n);
  GTADOC_CHECK_LAUNCH();
}
template <class T, class I>
void gather_async(const T* in, const I* idx, T* out, uint64_t n, cudaStream_t stream) {
  if (n == 0) return;
  gather_kernel<<<grid_for(n), kBlock, 0, stream>>>(in, idx, out, n);
  GTADOC_CHECK_LAUNCH();
}

/// For every position p < n: the range u (of `ranges`, begin non-decreasing, ranges disjoint)
/// with begin[u] <= p < end[u], or `none` where no range covers p (a binary search per
/// position: balanced whatever the range lengths). The unit of every body position of a shard
/// (end = unit ends), the row of every entry of a CSR (begin = off, end = off + 1).
void ranges_of_positions(const uint64_t* begin, const uint64_t* end, uint64_t ranges, uint64_t n,
                         uint32_t none, uint32_t* out, cudaStream_t stream);

// ------------------------------------------------------------------ CUB entry points
// (primitives.cu instantiates them; n may be 0.)

/// out[0] = 0 and out[i + 1] = counts[0] + ... + counts[i] (u64 sums); out has n + 1 entries.
/// Returns out[n], the total (synchronizes).
uint64_t exclusive_offsets(const uint32_t* counts, uint64_t n, uint64_t* out, MemoryPool& pool);
uint64_t exclusive_offsets(const uint64_t* counts, uint64_t n, uint64_t* out, MemoryPool& pool);
/// The same without synchronizing: the total stays on the device, in out[n].
void exclusive_offsets_async(const uint64_t* counts, uint64_t n, uint64_t* out, MemoryPool& pool);

/// Stable LSD radix sort of n (key, value) pairs by key bits [0, end_bit). The pairs are in
/// keys/vals; keys_alt/vals_alt (same sizes) are scratch. On return keys/vals hold the sorted
/// pairs (the buffers may have been swapped with the alternates).
template <class K, class V>
void sort_pairs(DeviceBuffer<K>& keys, DeviceBuffer<K>& keys_alt, DeviceBuffer<V>& vals,
                DeviceBuffer<V>& vals_alt, uint64_t n, int end_bit, MemoryPool& pool);
/// Same for keys alone.
void sort_keys(DeviceBuffer<uint64_t>& keys, DeviceBuffer<uint64_t>& keys_alt, uint64_t n,
               int end_bit, MemoryPool& pool);

/// Runs of equal keys in a key-sorted sequence: unique keys and the sums of their values.
/// Returns the number of runs (synchronizes).
uint64_t reduce_by_key(const uint64_t* keys, const uint64_t* vals, uint64_t n, uint64_t* keys_out,
                       uint64_t* sums_out, MemoryPool& pool);
uint64_t reduce_by_key(const uint32_t* keys, const uint64_t* vals, uint64_t n, uint32_t* keys_out,
                       uint64_t* sums_out, MemoryPool& pool);
/// The same without synchronizing: the number of runs is written to *runs_out on the device.
void reduce_by_key_async(const uint64_t* keys, const uint64_t* vals, uint64_t n, uint64_t* keys_out,
                         uint64_t* sums_out, uint64_t* runs_out, MemoryPool& pool);
/// Runs of equal keys: unique keys and run lengths. Returns the number of runs (synchronizes).
uint64_t run_length_encode(const uint64_t* keys, uint64_t n, uint64_t* keys_out,
                           uint32_t* lengths_out, MemoryPool& pool);

/// out[i] = min(in[i], in[i + 1], ..., in[n - 1]).
void suffix_min(const uint64_t* in, uint64_t* out, uint64_t n, MemoryPool& pool);

// ------------------------------------------------------------------ (u64 key, u64 value) pairs

/// n pairs on the device (buffers may be longer than n).
struct Pairs {
  DeviceBuffer<uint64_t> keys, vals;
  uint64_t n = 0;
};
/// Sorts by key bits [0, end_bit) and sums the values of equal keys; the result is sized
/// exactly when it is much smaller than the input.
Pairs reduce_pairs(Pairs in, int end_bit, MemoryPool& pool);

/// Collects chunks of pairs and reduces them all at the end; compacts (reduces what it holds)
/// whenever the unreduced volume outgrows the reduced one, so memory stays near the result size.
class PairAccumulator {
 public:
  PairAccumulator(int end_bit, MemoryPool& pool) : end_bit_(end_bit), pool_(&pool) {}
  void add(Pairs p);
  /// All pairs added, reduced (unique keys).
  Pairs finish();

 private:
  void compact();
  std::vector<Pairs> chunks_;
  uint64_t raw_ = 0;        ///< pairs added since the last compaction
  uint64_t compacted_ = 0;  ///< size of the last compaction's result
  int end_bit_;
  MemoryPool* pool_;
};

}  // namespace gtadoc::gpu
