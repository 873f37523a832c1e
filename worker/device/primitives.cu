// CUB entry points of the GPU engine, instantiated once here (CUB is slow to compile): scans for
// exact output sizing, radix sorts, reduce-by-key and the suffix minimum used by the sequence
// window scan. Temporary storage comes from the MemoryPool like every other allocation.
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/reverse_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/cub.cuh>

#include "worker/device/primitives.cuh"

namespace gtadoc::gpu {
namespace {

struct ToU64 {
  __host__ __device__ uint64_t operator()(uint32_t x) const { return x; }
};
struct MinU64 {
  __host__ __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a < b ? a : b; }
};

/// Runs a CUB call twice: once to size its temporary storage, once for real.
template <class Call>
void with_temp(MemoryPool& pool, Call&& call) {
  size_t bytes = 0;
  CUDA_TRY(call(nullptr, bytes));
  DeviceBuffer<unsigned char> temp(std::max<size_t>(bytes, 1), pool);
  CUDA_TRY(call(temp.data(), bytes));
}

template <class In>
void offsets_async_impl(In in, uint64_t n, uint64_t* out, MemoryPool& pool) {
  cudaStream_t s = pool.stream();
  CUDA_TRY(cudaMemsetAsync(out, 0, sizeof(uint64_t), s));
  if (n == 0) return;
  with_temp(pool, [&](void* t, size_t& b) {
    return cub::DeviceScan::InclusiveSum(t, b, in, out + 1, n, s);
  });
}

template <class In>
uint64_t offsets_impl(In in, uint64_t n, uint64_t* out, MemoryPool& pool) {
  offsets_async_impl(in, n, out, pool);
  uint64_t total = 0;
  if (n == 0) return total;
  cudaStream_t s = pool.stream();
  CUDA_TRY(cudaMemcpyAsync(&total, out + n, sizeof(uint64_t), cudaMemcpyDeviceToHost, s));
  CUDA_TRY(cudaStreamSynchronize(s));
  return total;
}

uint64_t read_count(const DeviceBuffer<uint64_t>& d) {
  return d.get(0);
}

}  // namespace

namespace {

__global__ void ranges_of_positions_kernel(const uint64_t* begin, const uint64_t* end,
                                           uint64_t ranges, uint64_t n, uint32_t none,
                                           uint32_t* out) {
  for (uint64_t p = global_thread(); p < n; p += global_stride()) {
    uint64_t lo = 0, hi = ranges;  // first range with begin > p
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (begin[mid] <= p) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    out[p] = lo != 0 && p < end[lo - 1] ? static_cast<uint32_t>(lo - 1) : none;
  }
}

}  // namespace

void ranges_of_positions(const uint64_t* begin, const uint64_t* end, uint64_t ranges, uint64_t n,
                         uint32_t none, uint32_t* out, cudaStream_t stream) {
  if (n == 0) return;
  ranges_of_positions_kernel<<<grid_for(n), kBlock, 0, stream>>>(begin, end, ranges, n, none, out);
  GTADOC_CHECK_LAUNCH();
}

uint64_t exclusive_offsets(const uint32_t* counts, uint64_t n, uint64_t* out, MemoryPool& pool) {
  return offsets_impl(thrust::make_transform_iterator(counts, ToU64{}), n, out, pool);
}
uint64_t exclusive_offsets(const uint64_t* counts, uint64_t n, uint64_t* out, MemoryPool& pool) {
  return offsets_impl(counts, n, out, pool);
}
void exclusive_offsets_async(const uint64_t* counts, uint64_t n, uint64_t* out, MemoryPool& pool) {
  offsets_async_impl(counts, n, out, pool);
}

template <class K, class V>
void sort_pairs(DeviceBuffer<K>& keys, DeviceBuffer<K>& keys_alt, DeviceBuffer<V>& vals,
                DeviceBuffer<V>& vals_alt, uint64_t n, int end_bit, MemoryPool& pool) {
  if (n <= 1) return;
  GTADOC_EXPECTS(
      keys.size() >= n && keys_alt.size() >= n && vals.size() >= n && vals_alt.size() >= n,
      "sort_pairs: buffers shorter than the sequence");
  cub::DoubleBuffer<K> dk(keys.data(), keys_alt.data());
  cub::DoubleBuffer<V> dv(vals.data(), vals_alt.data());
  end_bit = std::clamp(end_bit, 1, static_cast<int>(sizeof(K) * 8));
  with_temp(pool, [&](void* t, size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, dk, dv, n, 0, end_bit, pool.stream());
  });
  if (dk.selector != 0) std::swap(keys, keys_alt);
  if (dv.selector != 0) std::swap(vals, vals_alt);
}

template void sort_pairs<uint64_t, uint64_t>(DeviceBuffer<uint64_t>&, DeviceBuffer<uint64_t>&,
                                             DeviceBuffer<uint64_t>&, DeviceBuffer<uint64_t>&,
                                             uint64_t, int, MemoryPool&);
template void sort_pairs<uint64_t, uint32_t>(DeviceBuffer<uint64_t>&, DeviceBuffer<uint64_t>&,
                                             DeviceBuffer<uint32_t>&, DeviceBuffer<uint32_t>&,
                                             uint64_t, int, MemoryPool&);
template void sort_pairs<uint32_t, uint32_t>(DeviceBuffer<uint32_t>&, DeviceBuffer<uint32_t>&,
                                             DeviceBuffer<uint32_t>&, DeviceBuffer<uint32_t>&,
                                             uint64_t, int, MemoryPool&);

void sort_keys(DeviceBuffer<uint64_t>& keys, DeviceBuffer<uint64_t>& keys_alt, uint64_t n,
               int end_bit, MemoryPool& pool) {
  if (n <= 1) return;
  GTADOC_EXPECTS(keys.size() >= n && keys_alt.size() >= n,
                 "sort_keys: buffers shorter than the sequence");
  cub::DoubleBuffer<uint64_t> dk(keys.data(), keys_alt.data());
  end_bit = std::clamp(end_bit, 1, 64);
  with_temp(pool, [&](void* t, size_t& b) {
    return cub::DeviceRadixSort::SortKeys(t, b, dk, n, 0, end_bit, pool.stream());
  });
  if (dk.selector != 0) std::swap(keys, keys_alt);
}

void reduce_by_key_async(const uint64_t* keys, const uint64_t* vals, uint64_t n, uint64_t* keys_out,
                         uint64_t* sums_out, uint64_t* runs_out, MemoryPool& pool) {
  if (n == 0) {
    CUDA_TRY(cudaMemsetAsync(runs_out, 0, sizeof(uint64_t), pool.stream()));
    return;
  }
  with_temp(pool, [&](void* t, size_t& b) {
    return cub::DeviceReduce::ReduceByKey(t, b, keys, keys_out, vals, sums_out, runs_out,
                                          ::cuda::std::plus<>{}, n, pool.stream());
  });
}

uint64_t reduce_by_key(const uint64_t* keys, const uint64_t* vals, uint64_t n, uint64_t* keys_out,
                       uint64_t* sums_out, MemoryPool& pool) {
  if (n == 0) return 0;
  DeviceBuffer<uint64_t> runs(1, pool);
  reduce_by_key_async(keys, vals, n, keys_out, sums_out, runs.data(), pool);
  return read_count(runs);
}

uint64_t reduce_by_key(const uint32_t* keys, const uint64_t* vals, uint64_t n, uint32_t* keys_out,
                       uint64_t* sums_out, MemoryPool& pool) {
  if (n == 0) return 0;
  DeviceBuffer<uint64_t> runs(1, pool);
  with_temp(pool, [&](void* t, size_t& b) {
    return cub::DeviceReduce::ReduceByKey(t, b, keys, keys_out, vals, sums_out, runs.data(),
                                          ::cuda::std::plus<>{}, n, pool.stream());
  });
  return read_count(runs);
}

uint64_t run_length_encode(const uint64_t* keys, uint64_t n, uint64_t* keys_out,
                           uint32_t* lengths_out, MemoryPool& pool) {
  if (n == 0) return 0;
  DeviceBuffer<uint64_t> runs(1, pool);
  auto ones = thrust::make_constant_iterator<uint32_t>(1u);
  with_temp(pool, [&](void* t, size_t& b) {
    return cub::DeviceReduce::ReduceByKey(t, b, keys, keys_out, ones, lengths_out, runs.data(),
                                          ::cuda::std::plus<>{}, n, pool.stream());
  });
  return read_count(runs);
}

void suffix_min(const uint64_t* in, uint64_t* out, uint64_t n, MemoryPool& pool) {
  if (n == 0) return;
  auto rin = thrust::make_reverse_iterator(in + n);
  auto rout = thrust::make_reverse_iterator(out + n);
  with_temp(pool, [&](void* t, size_t& b) {
    return cub::DeviceScan::InclusiveScan(t, b, rin, rout, MinU64{}, n, pool.stream());
  });
}

}  // namespace gtadoc::gpu

namespace gtadoc::gpu {

Pairs reduce_pairs(Pairs in, int end_bit, MemoryPool& pool) {
  if (in.n <= 1) return in;
  DeviceBuffer<uint64_t> keys_alt(in.n, pool), vals_alt(in.n, pool);
  sort_pairs(in.keys, keys_alt, in.vals, vals_alt, in.n, end_bit, pool);
  // The alternates are free after the sort: reduce into them.
  const uint64_t runs =
      reduce_by_key(in.keys.data(), in.vals.data(), in.n, keys_alt.data(), vals_alt.data(), pool);
  Pairs out;
  out.n = runs;
  if (runs * 2 < keys_alt.size()) {  // shrink to the exact size
    in.keys.reset();
    in.vals.reset();
    out.keys = DeviceBuffer<uint64_t>(runs, pool);
    out.vals = DeviceBuffer<uint64_t>(runs, pool);
    copy_async(out.keys.data(), keys_alt.data(), runs, pool.stream());
    copy_async(out.vals.data(), vals_alt.data(), runs, pool.stream());
  } else {
    out.keys = std::move(keys_alt);
    out.vals = std::move(vals_alt);
  }
  return out;
}

void PairAccumulator::add(Pairs p) {
  if (p.n == 0) return;
  raw_ += p.n;
  chunks_.push_back(std::move(p));
  if (chunks_.size() > 1 && raw_ > 2 * compacted_ + (uint64_t{1} << 22)) compact();
}

void PairAccumulator::compact() {
  if (chunks_.empty()) return;
  Pairs all;
  if (chunks_.size() == 1) {
    all = std::move(chunks_[0]);
  } else {
    uint64_t total = 0;
    for (const Pairs& c : chunks_) total += c.n;
    all.keys = DeviceBuffer<uint64_t>(total, *pool_);
    all.vals = DeviceBuffer<uint64_t>(total, *pool_);
    uint64_t at = 0;
    for (Pairs& c : chunks_) {
      copy_async(all.keys.data() + at, c.keys.data(), c.n, pool_->stream());
      copy_async(all.vals.data() + at, c.vals.data(), c.n, pool_->stream());
      at += c.n;
      c = Pairs();  // frees the chunk, stream-ordered after the copies
    }
    all.n = total;
  }
  chunks_.clear();
  Pairs reduced = reduce_pairs(std::move(all), end_bit_, *pool_);
  compacted_ = reduced.n;
  raw_ = 0;
  chunks_.push_back(std::move(reduced));
}

Pairs PairAccumulator::finish() {
  if (chunks_.empty()) return Pairs();
  if (chunks_.size() > 1 || raw_ > 0) compact();
  Pairs out = std::move(chunks_[0]);
  chunks_.clear();
  return out;
}

}  // namespace gtadoc::gpu
