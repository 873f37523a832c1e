// Large copies between host and device memory: downloads of results into fresh host memory
// (record arrays), uploads of a shard's layout at load. A plain cudaMemcpy into
// pageable memory that was never touched runs at the speed of page faults taken one at a time
// inside the driver (measured: ~7 GB/s where the link does 55 GB/s pinned). Here the copy is
// split into chunks; several host threads each own a pinned staging slot and a stream of the
// device context, DMA a chunk into their slot and copy it out to the destination, so the PCIe
// transfer of one chunk overlaps the copies (and page faults) of others. Uploads go the other
// way through the same slots (a pageable upload is staged by the driver on one thread).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "common/parallel.h"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {

/// Pinned host memory owned like any allocation (freed even when a later slot's allocation
/// throws half-way through the constructor).
struct PinnedFree {
  void operator()(void* p) const noexcept { cudaFreeHost(p); }
};
using PinnedSlot = std::unique_ptr<void, PinnedFree>;

struct DownloadStaging {
  static constexpr size_t kSlot = size_t{4} << 20;
  static constexpr unsigned kThreads = 8;
  explicit DownloadStaging(unsigned threads) : streams(threads) {
    slots.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) {
      void* slot = nullptr;
      CUDA_TRY(cudaMallocHost(&slot, kSlot));
      slots.emplace_back(slot);
    }
  }
  std::vector<Stream> streams;
  std::vector<PinnedSlot> slots;
};

void DeviceContext::StagingDeleter::operator()(DownloadStaging* p) const noexcept {
  delete p;
}

namespace {

/// Copies `bytes` between host memory and device memory in chunks through the context's pinned
/// slots, on several host threads (each with its own slot and stream). `to_device`: host `src`
/// into device `dst`; else device `src` into host `dst`.
void staged_copy(const DeviceContext& ctx, void* dst, const void* src, size_t bytes,
                 bool to_device) {
  // src or dst is ordered on the context's stream (written there, or allocated there).
  CUDA_TRY(cudaStreamSynchronize(ctx.stream.get()));
  constexpr size_t kDirectBelow = size_t{4} << 20;
  if (bytes < kDirectBelow) {
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes,
                             to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                             ctx.stream.get()));
    CUDA_TRY(cudaStreamSynchronize(ctx.stream.get()));
    return;
  }
  if (!ctx.staging) {
    const unsigned threads = std::min(DownloadStaging::kThreads, resolve_threads(0));
    ctx.staging.reset(new DownloadStaging(threads));
  }
  DownloadStaging& st = *ctx.staging;
  const size_t chunk = DownloadStaging::kSlot;
  const size_t chunks = (bytes + chunk - 1) / chunk;
  const unsigned threads = static_cast<unsigned>(std::min<size_t>(st.slots.size(), chunks));
  std::atomic<size_t> next{0};
  parallel_for(threads, threads, [&](size_t t) {
    CUDA_TRY(cudaSetDevice(ctx.device));
    cudaStream_t stream = st.streams[t].get();
    void* slot = st.slots[t].get();
    for (size_t c = next++; c < chunks; c = next++) {
      const size_t at = c * chunk, len = std::min(chunk, bytes - at);
      if (to_device) {
        std::memcpy(slot, static_cast<const char*>(src) + at, len);
        CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(dst) + at, slot, len, cudaMemcpyHostToDevice,
                                 stream));
        CUDA_TRY(cudaStreamSynchronize(stream));
      } else {
        CUDA_TRY(cudaMemcpyAsync(slot, static_cast<const char*>(src) + at, len,
                                 cudaMemcpyDeviceToHost, stream));
        CUDA_TRY(cudaStreamSynchronize(stream));
        std::memcpy(static_cast<char*>(dst) + at, slot, len);
      }
    }
  });
}

}  // namespace

void download_host(const DeviceContext& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes != 0) staged_copy(ctx, dst, src, bytes, false);
}

void upload_host(const DeviceContext& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes != 0) staged_copy(ctx, dst, src, bytes, true);
}

RecordBatch download_records(Query& Q, const DeviceBuffer<uint32_t>& keys,
                             const DeviceBuffer<uint64_t>& counts, uint64_t n, uint32_t width) {
  GTADOC_EXPECTS(keys.size() >= n * width && counts.size() >= n,
                 "download_records: buffers smaller than the records");
  RecordBatch b;
  b.width = width;
  b.keys.resize(n * width);  // not zero-filled: the download writes every element
  b.counts.resize(n);
  download_host(*Q.s.ctx, b.keys.data(), keys.data(), b.keys.size() * sizeof(uint32_t));
  download_host(*Q.s.ctx, b.counts.data(), counts.data(), b.counts.size() * sizeof(uint64_t));
  return b;
}

}  // namespace gtadoc::gpu
