// The GPU engine's records kept in device memory (worker/device_records.h): what a query's
// traversals emitted (a RecordSink of device arrays) joined into one set, and the operations
// the device shuffle needs before NCCL moves the records: sequence keys rewritten into ranks,
// a strided sample of first key values for range splitters, and the stable grouping by owner;
// after it, the owner's reduce (LSD radix sorts over the key values, sums of equal keys), for a
// count-ordered --top the candidates of the first rows, and the row order of the count-ordered
// tasks (one radix sort on (run, count) keys).
// Owners are computed exactly as cluster/partition.cpp computes them (the same hash, the same
// splitter search), so the device and host shuffles deliver the same bytes.
#include <algorithm>
#include <string>

#include "common/hash.h"
#include "worker/device/primitives.cuh"
#include "worker/device_records.h"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {
namespace {

__global__ void map_keys_kernel(uint32_t* keys, uint64_t n, uint32_t width, uint32_t first,
                                uint32_t count, const uint32_t* table) {
  const uint64_t total = n * count;
  for (uint64_t i = global_thread(); i < total; i += global_stride()) {
    uint32_t* k = keys + (i / count) * width + first + i % count;
    *k = table[*k];
  }
}

__global__ void strided_first_kernel(const uint32_t* keys, uint64_t n, uint32_t width, uint64_t m,
                                     uint32_t* out) {
  for (uint64_t j = global_thread(); j < m; j += global_stride())
    out[j] = keys[static_cast<uint64_t>((static_cast<unsigned __int128>(j) * n) / m) * width];
}

/// owner_of (cluster/partition.cpp) of every record.
__global__ void owners_kernel(const uint32_t* keys, uint64_t n, uint32_t width,
                              uint32_t partition_width, uint32_t parts, const uint32_t* splitters,
                              bool range, uint32_t* owner, uint32_t* index) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint32_t* k = keys + i * width;
    uint32_t o;
    if (range) {
      uint32_t lo = 0, hi = parts - 1;  // upper_bound of k[0] in splitters[0 .. parts-1)
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (splitters[mid] <= k[0])
          lo = mid + 1;
        else
          hi = mid;
      }
      o = lo;
    } else {
      o = static_cast<uint32_t>(hash_u32s(std::span<const uint32_t>(k, partition_width)) % parts);
    }
    owner[i] = o;
    index[i] = static_cast<uint32_t>(i);
  }
}

/// Record r of the output is record perm[r] of the input (a permutation, or any positions).
template <class Index>
__global__ void gather_records_kernel(const uint32_t* keys, const uint64_t* counts,
                                      const Index* perm, uint64_t n, uint32_t width,
                                      uint32_t* keys_out, uint64_t* counts_out) {
  const uint64_t total = n * width;
  for (uint64_t i = global_thread(); i < total; i += global_stride()) {
    const uint64_t r = i / width, c = i % width;
    keys_out[i] = keys[static_cast<uint64_t>(perm[r]) * width + c];
    if (c == 0) counts_out[r] = counts[perm[r]];
  }
}

/// offsets[p] = first position of owner >= p in the sorted owners (parts + 1 entries).
__global__ void owner_offsets_kernel(const uint32_t* sorted, uint64_t n, uint32_t parts,
                                     uint64_t* offsets) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint32_t prev = i == 0 ? 0 : sorted[i - 1] + 1;
    for (uint32_t p = prev; p <= sorted[i]; ++p) offsets[p] = i;
    if (i + 1 == n)
      for (uint32_t p = sorted[i] + 1; p <= parts; ++p) offsets[p] = n;
  }
}

/// flags[i] = 1 when record i starts a new run of equal first `compared` key values (i == 0 or
/// they differ from record i - 1's); *unsorted = 1 (when not null) when some record's are below
/// its predecessor's.
__global__ void key_starts_kernel(const uint32_t* keys, uint64_t n, uint32_t width,
                                  uint32_t compared, uint32_t* flags, uint32_t* unsorted) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    uint32_t start = 1;
    if (i > 0) {
      const uint32_t* a = keys + (i - 1) * width;
      const uint32_t* b = keys + i * width;
      uint32_t c = 0;
      while (c < compared && a[c] == b[c]) ++c;
      start = c < compared;
      if (unsorted != nullptr && c < compared && a[c] > b[c]) *unsorted = 1;
    }
    flags[i] = start;
  }
}

__global__ void key_column_kernel(const uint32_t* keys, const uint32_t* perm, uint64_t n,
                                  uint32_t width, uint32_t column, uint32_t* out) {
  for (uint64_t i = global_thread(); i < n; i += global_stride())
    out[i] = keys[static_cast<uint64_t>(perm[i]) * width + column];
}

/// Sums the counts of each run of equal keys (pos: exclusive offsets of the starts).
__global__ void sum_runs_kernel(const uint32_t* keys, const uint64_t* counts, const uint32_t* flags,
                                const uint64_t* pos, uint64_t n, uint32_t width, uint32_t* keys_out,
                                unsigned long long* counts_out) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint64_t g = pos[i] + flags[i] - 1;
    if (flags[i] != 0)
      for (uint32_t c = 0; c < width; ++c) keys_out[g * width + c] = keys[i * width + c];
    atomicAdd(counts_out + g, static_cast<unsigned long long>(counts[i]));
  }
}

__global__ void at_least_kernel(const uint64_t* counts, uint64_t n, uint64_t threshold,
                                uint32_t* flags) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) flags[i] = counts[i] >= threshold;
}

__global__ void compact_records_kernel(const uint32_t* keys, const uint64_t* counts,
                                       const uint32_t* flags, const uint64_t* pos, uint64_t n,
                                       uint32_t width, uint32_t* keys_out, uint64_t* counts_out) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    if (flags[i] == 0) continue;
    const uint64_t at = pos[i];
    for (uint32_t c = 0; c < width; ++c) keys_out[at * width + c] = keys[i * width + c];
    counts_out[at] = counts[i];
  }
}

__global__ void max_count_kernel(const uint64_t* counts, uint64_t n, unsigned long long* out) {
  unsigned long long m = 0;
  for (uint64_t i = global_thread(); i < n; i += global_stride())
    m = max(m, static_cast<unsigned long long>(counts[i]));
  atomicMax(out, m);
}

/// The sort key of record i: (its run's index << count_bits) | (max - count), so that ascending
/// keys are runs in order, then counts descending; and its index.
__global__ void count_order_keys_kernel(const uint64_t* counts, const uint64_t* run_pos,
                                        const uint32_t* flags, uint64_t n, uint64_t max,
                                        int count_bits, uint64_t* key, uint32_t* index) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint64_t run = run_pos == nullptr ? 0 : run_pos[i] + flags[i] - 1;  // < 2^run_bits
    key[i] = (run == 0 ? 0 : run << count_bits) | (max - counts[i]);
    index[i] = static_cast<uint32_t>(i);
  }
}

/// not_after[s] += the records at or before splitter s in (count desc, key asc).
__global__ void count_order_cuts_kernel(const uint32_t* keys, const uint64_t* counts, uint64_t n,
                                        uint32_t width, const uint32_t* split_keys,
                                        const uint64_t* split_counts, uint32_t splitters,
                                        unsigned long long* not_after) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    for (uint32_t s = 0; s < splitters; ++s) {
      bool after;  // record i after splitter s
      if (counts[i] != split_counts[s]) {
        after = counts[i] < split_counts[s];
      } else {
        uint32_t c = 0;
        const uint32_t* k = keys + i * width;
        const uint32_t* sk = split_keys + static_cast<uint64_t>(s) * width;
        while (c < width && k[c] == sk[c]) ++c;
        after = c < width && k[c] > sk[c];
      }
      if (!after) atomicAdd(not_after + s, 1ull);
    }
  }
}

/// The pool's bound set to `bound` for a scope, the previous one restored after it.
class PoolBound {
 public:
  PoolBound(MemoryPool& pool, uint64_t bound) : pool_(pool), before_(pool.limit()) {
    pool_.set_limit(bound);
  }
  ~PoolBound() { pool_.set_limit(before_); }
  PoolBound(const PoolBound&) = delete;
  PoolBound& operator=(const PoolBound&) = delete;

 private:
  MemoryPool& pool_;
  uint64_t before_;
};

class GpuDeviceRecords final : public DeviceRecords {
 public:
  /// `bound`: the device memory (the pool's, records included) that reduce, keep_top_counts and
  /// order_by_count may reach before they throw ResourceError: the engine's bound.
  GpuDeviceRecords(std::shared_ptr<DeviceContext> ctx, uint32_t width, uint64_t n, uint64_t bound)
      : ctx_(std::move(ctx)),
        width_(width),
        n_(n),
        bound_(bound),
        keys_(n * width, ctx_->pool),
        counts_(n, ctx_->pool) {}
  GpuDeviceRecords(std::shared_ptr<DeviceContext> ctx, uint32_t width, uint64_t n,
                   DeviceBuffer<uint32_t> keys, DeviceBuffer<uint64_t> counts, uint64_t bound)
      : ctx_(std::move(ctx)),
        width_(width),
        n_(n),
        bound_(bound),
        keys_(std::move(keys)),
        counts_(std::move(counts)) {}
  ~GpuDeviceRecords() override {
    cudaSetDevice(ctx_->device);  // the buffers are freed on the context's stream
    keys_.reset();
    counts_.reset();
  }

  uint32_t width() const override { return width_; }
  uint64_t size() const override { return n_; }
  int device() const override { return ctx_->device; }
  void* stream() const override { return ctx_->stream.get(); }
  uint32_t* keys() override { return keys_.data(); }
  uint64_t* counts() override { return counts_.data(); }

  void map_keys(uint32_t first, uint32_t count, std::span<const uint32_t> table) override {
    GTADOC_EXPECTS(first + count <= width_, "map_keys: key values out of the key");
    if (n_ == 0 || count == 0) return;
    ctx_->activate();
    DeviceBuffer<uint32_t> t(table.size(), ctx_->pool);
    t.upload(table.data(), table.size());
    map_keys_kernel<<<grid_for(n_ * count), kBlock, 0, ctx_->stream.get()>>>(
        keys_.data(), n_, width_, first, count, t.data());
    GTADOC_CHECK_LAUNCH();
    ctx_->stream.synchronize();
  }

  std::vector<uint32_t> strided_first_values(uint64_t m) override {
    GTADOC_EXPECTS(m <= n_, "strided_first_values: more samples than records");
    if (m == 0) return {};
    ctx_->activate();
    DeviceBuffer<uint32_t> out(m, ctx_->pool);
    strided_first_kernel<<<grid_for(m), kBlock, 0, ctx_->stream.get()>>>(keys_.data(), n_, width_,
                                                                         m, out.data());
    GTADOC_CHECK_LAUNCH();
    return out.to_host();
  }

  std::vector<uint64_t> partition(const KeyLayout& layout, uint32_t parts,
                                  std::span<const uint32_t> range_splitters) override {
    GTADOC_EXPECTS(parts >= 1 && layout.width == width_ && layout.partition_width >= 1 &&
                       layout.partition_width <= width_,
                   "partition: bad key layout");
    const bool range = layout.range_partition && parts > 1;
    GTADOC_EXPECTS(!range || range_splitters.size() == parts - 1,
                   "partition: range partitioning needs parts - 1 splitters");
    GTADOC_EXPECTS(n_ < (uint64_t{1} << 32), "partition: 2^32 records or more on one GPU");
    std::vector<uint64_t> offsets(parts + 1, 0);
    if (parts == 1 || n_ == 0) {
      std::fill(offsets.begin() + 1, offsets.end(), n_);
      return offsets;
    }
    ctx_->activate();
    MemoryPool& pool = ctx_->pool;
    cudaStream_t st = ctx_->stream.get();
    DeviceBuffer<uint32_t> split(std::max<size_t>(1, range_splitters.size()), pool);
    if (range) split.upload(range_splitters.data(), range_splitters.size());
    DeviceBuffer<uint32_t> owner(n_, pool), owner_alt(n_, pool), perm(n_, pool), perm_alt(n_, pool);
    owners_kernel<<<grid_for(n_), kBlock, 0, st>>>(keys_.data(), n_, width_, layout.partition_width,
                                                   parts, split.data(), range, owner.data(),
                                                   perm.data());
    GTADOC_CHECK_LAUNCH();
    sort_pairs(owner, owner_alt, perm, perm_alt, n_, bits_for(parts - 1), pool);  // stable
    owner_alt.reset();
    perm_alt.reset();
    DeviceBuffer<uint64_t> off(parts + 1, pool);
    owner_offsets_kernel<<<grid_for(n_), kBlock, 0, st>>>(owner.data(), n_, parts, off.data());
    GTADOC_CHECK_LAUNCH();
    DeviceBuffer<uint32_t> keys(n_ * width_, pool);
    DeviceBuffer<uint64_t> counts(n_, pool);
    gather_records_kernel<<<grid_for(n_ * width_), kBlock, 0, st>>>(
        keys_.data(), counts_.data(), perm.data(), n_, width_, keys.data(), counts.data());
    GTADOC_CHECK_LAUNCH();
    off.download(offsets.data(), parts + 1);  // synchronizes
    keys_ = std::move(keys);
    counts_ = std::move(counts);
    return offsets;
  }

  void reduce() override {
    if (n_ == 0) return;
    ctx_->activate();
    MemoryPool& pool = ctx_->pool;
    const PoolBound bound(pool, bound_);
    cudaStream_t st = ctx_->stream.get();
    DeviceBuffer<uint32_t> flags(n_, pool), unsorted(1, pool);
    unsorted.memset_async(0);
    key_starts_kernel<<<grid_for(n_), kBlock, 0, st>>>(keys_.data(), n_, width_, width_,
                                                       flags.data(), unsorted.data());
    GTADOC_CHECK_LAUNCH();
    if (unsorted.get(0) != 0) {
      GTADOC_EXPECTS(n_ < (uint64_t{1} << 32), "reduce: 2^32 records or more on one GPU");
      flags.reset();
      std::string short_of_memory;
      try {
        sort_range(0, n_);
      } catch (const ResourceError& e) {
        short_of_memory = e.what();
      }
      if (!short_of_memory.empty()) {
        // The caller reduces on the host: it merges a few sorted runs much faster than it sorts
        // every record (hundreds of millions for a large per-document answer).
        const uint64_t ranges = sort_in_ranges();
        throw ResourceError(short_of_memory +
                            (ranges > 0 ? "; the records sorted in " + std::to_string(ranges) +
                                              " ranges for the host's merge"
                                        : std::string()));
      }
      flags = DeviceBuffer<uint32_t>(n_, pool);
      key_starts_kernel<<<grid_for(n_), kBlock, 0, st>>>(keys_.data(), n_, width_, width_,
                                                         flags.data(), unsorted.data());
      GTADOC_CHECK_LAUNCH();
    }
    DeviceBuffer<uint64_t> pos(n_ + 1, pool);
    const uint64_t groups = exclusive_offsets(flags.data(), n_, pos.data(), pool);
    if (groups == n_) return;  // sorted and unique already
    DeviceBuffer<uint32_t> keys(groups * width_, pool);
    DeviceBuffer<uint64_t> counts(groups, pool);
    counts.memset_async(0);
    sum_runs_kernel<<<grid_for(n_), kBlock, 0, st>>>(
        keys_.data(), counts_.data(), flags.data(), pos.data(), n_, width_, keys.data(),
        reinterpret_cast<unsigned long long*>(counts.data()));
    GTADOC_CHECK_LAUNCH();
    ctx_->stream.synchronize();
    keys_ = std::move(keys);
    counts_ = std::move(counts);
    n_ = groups;
  }

  void keep_top_counts(uint64_t k) override {
    if (k == 0 || n_ <= k) return;
    ctx_->activate();
    MemoryPool& pool = ctx_->pool;
    const PoolBound bound(pool, bound_);
    cudaStream_t st = ctx_->stream.get();
    uint64_t threshold = 0;
    {
      DeviceBuffer<uint64_t> sorted(n_, pool), alt(n_, pool);
      copy_async(sorted.data(), counts_.data(), n_, st);
      sort_keys(sorted, alt, n_, 64, pool);
      threshold = sorted.get(n_ - k);  // the k-th largest
    }
    DeviceBuffer<uint32_t> flags(n_, pool);
    at_least_kernel<<<grid_for(n_), kBlock, 0, st>>>(counts_.data(), n_, threshold, flags.data());
    GTADOC_CHECK_LAUNCH();
    DeviceBuffer<uint64_t> pos(n_ + 1, pool);
    const uint64_t m = exclusive_offsets(flags.data(), n_, pos.data(), pool);
    DeviceBuffer<uint32_t> keys(m * width_, pool);
    DeviceBuffer<uint64_t> counts(m, pool);
    compact_records_kernel<<<grid_for(n_), kBlock, 0, st>>>(keys_.data(), counts_.data(),
                                                            flags.data(), pos.data(), n_, width_,
                                                            keys.data(), counts.data());
    GTADOC_CHECK_LAUNCH();
    ctx_->stream.synchronize();
    keys_ = std::move(keys);
    counts_ = std::move(counts);
    n_ = m;
  }

  bool order_by_count(uint32_t group, uint64_t keep_first) override {
    GTADOC_EXPECTS(group <= width_, "order_by_count: group wider than the key");
    GTADOC_EXPECTS(group == 0 || keep_first == 0, "order_by_count: keep_first needs group 0");
    GTADOC_EXPECTS(n_ < (uint64_t{1} << 32), "order_by_count: 2^32 records or more on one GPU");
    if (n_ == 0) return true;
    ctx_->activate();
    MemoryPool& pool = ctx_->pool;
    const PoolBound bound(pool, bound_);
    cudaStream_t st = ctx_->stream.get();
    const uint64_t out_n = keep_first == 0 ? n_ : std::min(n_, keep_first);
    // Every buffer first: out of memory, the records are untouched.
    DeviceBuffer<uint64_t> key(n_, pool), key_alt(n_, pool), max(1, pool);
    DeviceBuffer<uint32_t> perm(n_, pool), perm_alt(n_, pool);
    DeviceBuffer<uint32_t> flags(group > 0 ? n_ : 0, pool);
    DeviceBuffer<uint64_t> run_pos(group > 0 ? n_ + 1 : 0, pool);
    DeviceBuffer<uint32_t> keys(out_n * width_, pool);
    DeviceBuffer<uint64_t> counts(out_n, pool);
    max.memset_async(0);
    max_count_kernel<<<std::min(grid_for(n_), 1024u), kBlock, 0, st>>>(
        counts_.data(), n_, reinterpret_cast<unsigned long long*>(max.data()));
    GTADOC_CHECK_LAUNCH();
    uint64_t runs = 1;
    if (group > 0) {
      key_starts_kernel<<<grid_for(n_), kBlock, 0, st>>>(keys_.data(), n_, width_, group,
                                                         flags.data(), nullptr);
      GTADOC_CHECK_LAUNCH();
      runs = exclusive_offsets(flags.data(), n_, run_pos.data(), pool);  // synchronizes
    }
    const uint64_t max_count = max.get(0);
    const int count_bits = bits_for(max_count);
    const int run_bits = runs > 1 ? bits_for(runs - 1) : 0;
    if (run_bits + count_bits > 64) return false;  // one sort key cannot hold (run, count)
    count_order_keys_kernel<<<grid_for(n_), kBlock, 0, st>>>(
        counts_.data(), group > 0 ? run_pos.data() : nullptr, flags.data(), n_, max_count,
        count_bits, key.data(), perm.data());
    GTADOC_CHECK_LAUNCH();
    sort_pairs(key, key_alt, perm, perm_alt, n_, run_bits + count_bits, pool);  // stable
    gather_records_kernel<<<grid_for(out_n * width_), kBlock, 0, st>>>(
        keys_.data(), counts_.data(), perm.data(), out_n, width_, keys.data(), counts.data());
    GTADOC_CHECK_LAUNCH();
    ctx_->stream.synchronize();
    keys_ = std::move(keys);
    counts_ = std::move(counts);
    n_ = out_n;
    return true;
  }

  std::vector<uint64_t> count_order_cuts(const RecordBatch& splitters) override {
    GTADOC_EXPECTS(splitters.width == width_, "count_order_cuts: splitters of another width");
    const uint64_t m = splitters.size();
    std::vector<uint64_t> offsets(m + 2, 0);
    offsets[m + 1] = n_;
    if (m == 0 || n_ == 0) return offsets;
    ctx_->activate();
    MemoryPool& pool = ctx_->pool;
    cudaStream_t st = ctx_->stream.get();
    DeviceBuffer<uint32_t> sk(m * width_, pool);
    DeviceBuffer<uint64_t> sc(m, pool), not_after(m, pool);
    sk.upload(splitters.keys.data(), m * width_);
    sc.upload(splitters.counts.data(), m);
    not_after.memset_async(0);
    count_order_cuts_kernel<<<grid_for(n_), kBlock, 0, st>>>(
        keys_.data(), counts_.data(), n_, width_, sk.data(), sc.data(), static_cast<uint32_t>(m),
        reinterpret_cast<unsigned long long*>(not_after.data()));
    GTADOC_CHECK_LAUNCH();
    not_after.download(offsets.data() + 1, m);
    for (uint64_t p = 1; p <= m; ++p)  // splitters are ordered; keep the cuts monotone anyway
      offsets[p] = std::max(offsets[p], offsets[p - 1]);
    return offsets;
  }

  RecordBatch rows_at(std::span<const uint64_t> positions) const override {
    RecordBatch out;
    out.width = width_;
    const uint64_t m = positions.size();
    out.keys.resize(m * width_);
    out.counts.resize(m);
    if (m == 0) return out;
    for (uint64_t p : positions) GTADOC_EXPECTS(p < n_, "rows_at: position out of range");
    ctx_->activate();
    MemoryPool& pool = ctx_->pool;
    DeviceBuffer<uint64_t> pos(m, pool), counts(m, pool);
    DeviceBuffer<uint32_t> keys(m * width_, pool);
    pos.upload(positions.data(), m);
    gather_records_kernel<<<grid_for(m * width_), kBlock, 0, ctx_->stream.get()>>>(
        keys_.data(), counts_.data(), pos.data(), m, width_, keys.data(), counts.data());
    GTADOC_CHECK_LAUNCH();
    keys.download(out.keys.data(), m * width_);
    counts.download(out.counts.data(), m);
    return out;
  }

  std::unique_ptr<DeviceRecords> allocate(uint64_t n) const override {
    ctx_->activate();
    return std::make_unique<GpuDeviceRecords>(ctx_, width_, n, bound_);
  }

  void download_range(uint64_t first, uint64_t n, uint32_t* keys, uint64_t* counts) const override {
    GTADOC_EXPECTS(first <= n_ && n <= n_ - first, "download_range: records out of range");
    if (n == 0) return;
    ctx_->activate();
    const HostCopy copies[] = {{keys, keys_.data() + first * width_, n * width_ * sizeof(uint32_t)},
                               {counts, counts_.data() + first, n * sizeof(uint64_t)}};
    download_host(*ctx_, copies);
  }

  void upload_range(uint64_t at, uint64_t n, const uint32_t* keys,
                    const uint64_t* counts) override {
    GTADOC_EXPECTS(at <= n_ && n <= n_ - at, "upload_range: records out of range");
    if (n == 0) return;
    ctx_->activate();
    const HostCopy copies[] = {{keys_.data() + at * width_, keys, n * width_ * sizeof(uint32_t)},
                               {counts_.data() + at, counts, n * sizeof(uint64_t)}};
    upload_host(*ctx_, copies);
  }

  void copy_range(DeviceRecords& from, uint64_t first, uint64_t at, uint64_t n) override {
    GTADOC_EXPECTS(from.width() == width_ && from.device() == ctx_->device,
                   "copy_range: records of another width or device");
    GTADOC_EXPECTS(first <= from.size() && n <= from.size() - first && at <= n_ && n <= n_ - at,
                   "copy_range: records out of range");
    if (n == 0) return;
    ctx_->activate();
    // `from` is ordered on its own stream: wait for it, then copy on this one.
    CUDA_TRY(cudaStreamSynchronize(static_cast<cudaStream_t>(from.stream())));
    cudaStream_t st = ctx_->stream.get();
    CUDA_TRY(cudaMemcpyAsync(keys_.data() + at * width_, from.keys() + first * width_,
                             n * width_ * sizeof(uint32_t), cudaMemcpyDeviceToDevice, st));
    CUDA_TRY(cudaMemcpyAsync(counts_.data() + at, from.counts() + first, n * sizeof(uint64_t),
                             cudaMemcpyDeviceToDevice, st));
    ctx_->stream.synchronize();
  }

  RecordBatch download() const override {
    ctx_->activate();
    RecordBatch b;
    b.width = width_;
    b.keys.resize(n_ * width_);
    b.counts.resize(n_);
    const HostCopy copies[] = {
        {b.keys.data(), keys_.data(), b.keys.size() * sizeof(uint32_t)},
        {b.counts.data(), counts_.data(), b.counts.size() * sizeof(uint64_t)}};
    download_host(*ctx_, copies);
    return b;
  }

 private:
  /// Sorts records [first, first + m) by key, in place: LSD over the key values, last to first
  /// (stable radix sorts of one value each, carrying the permutation), then the records gathered
  /// in key order. Throws ResourceError with the records as they were when the buffers do not
  /// fit.
  void sort_range(uint64_t first, uint64_t m) {
    MemoryPool& pool = ctx_->pool;
    cudaStream_t st = ctx_->stream.get();
    uint32_t* keys = keys_.data() + first * width_;
    uint64_t* counts = counts_.data() + first;
    DeviceBuffer<uint32_t> perm(m, pool), perm_alt(m, pool), col(m, pool), col_alt(m, pool);
    iota_async(perm.data(), m, st);
    for (uint32_t c = width_; c-- > 0;) {
      key_column_kernel<<<grid_for(m), kBlock, 0, st>>>(keys, perm.data(), m, width_, c,
                                                        col.data());
      GTADOC_CHECK_LAUNCH();
      sort_pairs(col, col_alt, perm, perm_alt, m, 32, pool);
    }
    col.reset();
    col_alt.reset();
    perm_alt.reset();
    DeviceBuffer<uint32_t> sorted_keys(m * width_, pool);
    DeviceBuffer<uint64_t> sorted_counts(m, pool);
    gather_records_kernel<<<grid_for(m * width_), kBlock, 0, st>>>(
        keys, counts, perm.data(), m, width_, sorted_keys.data(), sorted_counts.data());
    GTADOC_CHECK_LAUNCH();
    if (m == n_) {
      keys_ = std::move(sorted_keys);
      counts_ = std::move(sorted_counts);
    } else {
      copy_async(keys, sorted_keys.data(), m * width_, st);
      copy_async(counts, sorted_counts.data(), m, st);
    }
    ctx_->stream.synchronize();
  }

  /// Out of memory for sorting every record at once: consecutive ranges sorted one at a time,
  /// halved until they fit, so that the records become at most about kMaxSortedRanges sorted
  /// runs (the host's merge takes up to 256). Returns the ranges sorted, 0 when even ranges of
  /// n / kMaxSortedRanges records did not fit (the records then partly sorted).
  uint64_t sort_in_ranges() {
    constexpr uint64_t kMaxSortedRanges = 128;
    uint64_t range = (n_ + 1) / 2, ranges = 0;
    for (uint64_t at = 0; at < n_;) {
      const uint64_t m = std::min(range, n_ - at);
      try {
        sort_range(at, m);
        at += m;
        ++ranges;
      } catch (const ResourceError&) {
        if (range <= std::max<uint64_t>(1, n_ / kMaxSortedRanges)) return 0;
        range = (range + 1) / 2;
      }
    }
    return ranges;
  }

  std::shared_ptr<DeviceContext> ctx_;
  uint32_t width_;
  uint64_t n_;
  uint64_t bound_;
  DeviceBuffer<uint32_t> keys_;
  DeviceBuffer<uint64_t> counts_;
};

}  // namespace

RecordBatch hand_over_records(Query& Q, DeviceBuffer<uint32_t>&& keys,
                              DeviceBuffer<uint64_t>&& counts, uint64_t n, uint32_t width) {
  if (Q.sink == nullptr) return download_records(*Q.s.ctx, keys, counts, n, width);
  GTADOC_EXPECTS(keys.size() >= n * width && counts.size() >= n,
                 "hand_over_records: buffers smaller than the records");
  if (n > 0) Q.sink->parts.push_back({std::move(keys), std::move(counts), n, width});
  RecordBatch empty;
  empty.width = width;
  return empty;
}

std::unique_ptr<DeviceRecords> join_records(std::shared_ptr<DeviceContext> ctx, RecordSink&& sink,
                                            uint32_t width, uint64_t bound) {
  ctx->activate();
  for (const RecordSink::Part& p : sink.parts)
    GTADOC_EXPECTS(p.width == width, "join_records: parts of another key width");
  for (const RecordBatch& b : sink.spilled)
    GTADOC_EXPECTS(b.width == width, "join_records: spilled records of another key width");
  if (sink.spilled.empty() && sink.parts.size() == 1 &&
      sink.parts[0].keys.size() == sink.parts[0].n * width &&
      sink.parts[0].counts.size() == sink.parts[0].n) {
    RecordSink::Part& p = sink.parts[0];
    auto out = std::make_unique<GpuDeviceRecords>(ctx, width, p.n, std::move(p.keys),
                                                  std::move(p.counts), bound);
    sink.parts.clear();
    return out;
  }
  uint64_t n = 0;
  for (const RecordBatch& b : sink.spilled) n += b.size();
  for (const RecordSink::Part& p : sink.parts) n += p.n;
  auto out = std::make_unique<GpuDeviceRecords>(ctx, width, n, bound);
  uint64_t at = 0;
  cudaStream_t st = ctx->stream.get();
  // Spilled records first (they are the oldest), back from host memory.
  std::vector<HostCopy> uploads;
  for (const RecordBatch& b : sink.spilled) {
    uploads.push_back({out->keys() + at * width, b.keys.data(), b.keys.size() * sizeof(uint32_t)});
    uploads.push_back({out->counts() + at, b.counts.data(), b.size() * sizeof(uint64_t)});
    at += b.size();
  }
  upload_host(*ctx, uploads);
  sink.spilled.clear();
  for (RecordSink::Part& p : sink.parts) {
    copy_async(out->keys() + at * width, p.keys.data(), p.n * width, st);
    copy_async(out->counts() + at, p.counts.data(), p.n, st);
    at += p.n;
    p.keys.reset();  // stream-ordered: freed after the copy
    p.counts.reset();
  }
  sink.parts.clear();
  ctx->stream.synchronize();
  return out;
}

}  // namespace gtadoc::gpu
