// Large copies between host and device memory: downloads of results into fresh host memory
// (record arrays), uploads of a shard's layout at load. A plain cudaMemcpy into
// pageable memory that was never touched runs at the speed of page faults taken one at a time
// inside the driver (measured: ~7 GB/s where the link does 55 GB/s pinned). Here the copy is
// split into chunks; several host threads each own a pinned staging slot and a stream of the
// device context, DMA a chunk into their slot and copy it out to the destination, so the PCIe
// transfer of one chunk overlaps the copies (and page faults) of others. Uploads go the other
// way through the same slots (a pageable upload is staged by the driver on one thread). The
// threads are the staging's own, started once: starting and joining 15 threads on every copy
// cost ~0.5 ms, a tenth of a resident word-count.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/error.h"
#include "common/parallel.h"
#include "worker/gpu/gpu_internal.h"
#include "worker/plan/thread_pool.h"

namespace gtadoc::gpu {

/// Pinned host memory owned like any allocation.
struct PinnedFree {
  void operator()(void* p) const noexcept { cudaFreeHost(p); }
};
using PinnedSlot = std::unique_ptr<void, PinnedFree>;

struct DownloadStaging {
  static constexpr size_t kSlot = size_t{2} << 20;
  static constexpr unsigned kThreads = 16;
  /// One pinned block carved into the slots: one cudaMallocHost (each call costs about a
  /// millisecond, and the first load of a fresh process waits for it).
  explicit DownloadStaging(unsigned threads) : streams(threads), pool(threads) {
    void* block = nullptr;
    CUDA_TRY(cudaMallocHost(&block, kSlot * threads));
    pinned.reset(block);
  }
  void* slot(unsigned t) const { return static_cast<char*>(pinned.get()) + kSlot * t; }
  std::vector<Stream> streams;
  PinnedSlot pinned;
  plan::ThreadPool pool;  ///< thread t owns slot t and streams[t]; the caller is thread 0
  std::mutex busy;        ///< one copy at a time uses the slots
};

void DeviceContext::StagingDeleter::operator()(DownloadStaging* p) const noexcept {
  delete p;
}

namespace {

/// Copies every range of `copies` between host memory and device memory: small ones directly on
/// the context's stream, the others in chunks through the context's pinned slots, on several
/// host threads (each with its own slot and stream) in one job, so the chunks of all large ranges
/// keep every thread busy. `to_device`: host `src` into device `dst`; else device `src` into host
/// `dst`.
void staged_copy(const DeviceContext& ctx, std::span<const HostCopy> copies, bool to_device) {
  // src or dst is ordered on the context's stream (written there, or allocated there).
  CUDA_TRY(cudaStreamSynchronize(ctx.stream.get()));
  // Ranges below this are copied directly: a download into pageable memory; an upload's of
  // a quarter of a slot (the driver stages a pageable upload on the calling thread, one range
  // after another, where the slots' threads copy several side by side).
  const size_t kDirectBelow = to_device ? DownloadStaging::kSlot / 4 : DownloadStaging::kSlot;
  const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  struct Chunk {
    char* dst;
    const char* src;
    size_t len;
  };
  std::vector<Chunk> chunks;
  bool direct = false;
  const size_t chunk = DownloadStaging::kSlot;
  for (const HostCopy& c : copies) {
    if (c.bytes == 0) continue;
    if (c.bytes < kDirectBelow) {
      CUDA_TRY(cudaMemcpyAsync(c.dst, c.src, c.bytes, kind, ctx.stream.get()));
      direct = true;
      continue;
    }
    for (size_t at = 0; at < c.bytes; at += chunk)
      chunks.push_back({static_cast<char*>(c.dst) + at, static_cast<const char*>(c.src) + at,
                        std::min(chunk, c.bytes - at)});
  }
  if (direct) CUDA_TRY(cudaStreamSynchronize(ctx.stream.get()));
  if (chunks.empty()) return;
  if (!ctx.staging) {
    const unsigned threads = std::min(
        DownloadStaging::kThreads,
        ctx.staging_threads != 0 ? ctx.staging_threads : resolve_threads(0));
    ctx.staging.reset(new DownloadStaging(threads));
  }
  DownloadStaging& st = *ctx.staging;
  const unsigned threads = static_cast<unsigned>(std::min(st.streams.size(), chunks.size()));
  std::atomic<size_t> next{0};
  std::lock_guard<std::mutex> lock(st.busy);
  st.pool.run([&](unsigned t) {
    if (t >= threads) return;
    CUDA_TRY(cudaSetDevice(ctx.device));
    cudaStream_t stream = st.streams[t].get();
    void* slot = st.slot(static_cast<unsigned>(t));
    for (size_t i = next++; i < chunks.size(); i = next++) {
      const Chunk& c = chunks[i];
      if (to_device) {
        std::memcpy(slot, c.src, c.len);
        CUDA_TRY(cudaMemcpyAsync(c.dst, slot, c.len, kind, stream));
        CUDA_TRY(cudaStreamSynchronize(stream));
      } else {
        CUDA_TRY(cudaMemcpyAsync(slot, c.src, c.len, kind, stream));
        CUDA_TRY(cudaStreamSynchronize(stream));
        std::memcpy(c.dst, slot, c.len);
      }
    }
  });
}

}  // namespace

void download_host(const DeviceContext& ctx, std::span<const HostCopy> copies) {
  staged_copy(ctx, copies, false);
}

void upload_host(const DeviceContext& ctx, std::span<const HostCopy> copies) {
  staged_copy(ctx, copies, true);
}

RecordBatch download_records(const DeviceContext& ctx, const DeviceBuffer<uint32_t>& keys,
                             const DeviceBuffer<uint64_t>& counts, uint64_t n, uint32_t width) {
  GTADOC_EXPECTS(keys.size() >= n * width && counts.size() >= n,
                 "download_records: buffers smaller than the records");
  RecordBatch b;
  b.width = width;
  b.keys.resize(n * width);  // not zero-filled: the download writes every element
  b.counts.resize(n);
  const HostCopy copies[] = {{b.keys.data(), keys.data(), b.keys.size() * sizeof(uint32_t)},
                             {b.counts.data(), counts.data(), b.counts.size() * sizeof(uint64_t)}};
  download_host(ctx, copies);
  return b;
}

}  // namespace gtadoc::gpu
