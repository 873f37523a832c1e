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
//
// Uploads may take other ways (GTADOC_GPU_UPLOAD, to compare them on a machine; the upload
// benchmark, scripts/bench/upload_bench.cpp, times the same ways alone): `double` splits each
// thread's slot in two halves, so that its copy into one half overlaps the DMA out of the other;
// `registered` pins the pages of each large source range for its copy (cudaHostRegister), DMAs
// it straight from there and unpins it, the ranges spread over the threads, and copies the
// partial pages at its edges directly; `pageable` leaves every range to the driver's staging,
// one after another on the calling thread.
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
#include "common/settings.h"
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
  explicit DownloadStaging(unsigned threads) : streams(threads), events(2 * threads), pool(threads) {
    void* block = nullptr;
    CUDA_TRY(cudaMallocHost(&block, kSlot * threads));
    pinned.reset(block);
  }
  void* slot(unsigned t) const { return static_cast<char*>(pinned.get()) + kSlot * t; }
  std::vector<Stream> streams;
  std::vector<Event> events;  ///< two per thread: when each half of its slot is free again
  PinnedSlot pinned;
  plan::ThreadPool pool;  ///< thread t owns slot t and streams[t]; the caller is thread 0
  std::mutex busy;        ///< one copy at a time uses the slots
};

void DeviceContext::StagingDeleter::operator()(DownloadStaging* p) const noexcept {
  delete p;
}

namespace {

/// The ways an upload may take (GTADOC_GPU_UPLOAD; the file's header).
enum class UploadWay { kStaged, kDouble, kRegistered, kPageable };

/// Read at every copy (a few per shard loaded), so that a test can try each way in turn.
UploadWay upload_way() {
  const std::string_view w = settings::word("GTADOC_GPU_UPLOAD");
  if (w == "double") return UploadWay::kDouble;
  if (w == "registered") return UploadWay::kRegistered;
  if (w == "pageable") return UploadWay::kPageable;
  return UploadWay::kStaged;
}

struct Chunk {
  char* dst;
  const char* src;
  size_t len;
};

/// The staging of `ctx`, created by its first large copy.
DownloadStaging& staging_of(const DeviceContext& ctx) {
  if (!ctx.staging) {
    const unsigned threads =
        std::min(DownloadStaging::kThreads,
                 ctx.staging_threads != 0 ? ctx.staging_threads : resolve_threads(0));
    ctx.staging.reset(new DownloadStaging(threads));
  }
  return *ctx.staging;
}

/// Host `src` into device `dst` through half of `slot` at a time: the copy into one half overlaps
/// the DMA out of the other, whose event says when it is free again.
void upload_double(const Chunk& c, char* slot, cudaStream_t stream, const Event* events,
                   unsigned& turn) {
  const size_t half = DownloadStaging::kSlot / 2;
  for (size_t at = 0; at < c.len; at += half, ++turn) {
    const size_t len = std::min(half, c.len - at);
    char* buf = slot + (turn % 2) * half;
    cudaEvent_t free_again = events[turn % 2].get();
    CUDA_TRY(cudaEventSynchronize(free_again));  // a fresh event counts as done
    std::memcpy(buf, c.src + at, len);
    CUDA_TRY(cudaMemcpyAsync(c.dst + at, buf, len, cudaMemcpyHostToDevice, stream));
    CUDA_TRY(cudaEventRecord(free_again, stream));
  }
}

/// Host `src` into device `dst` straight from the source's pages, pinned for the copy: the whole
/// pages registered, the partial ones at the edges copied by the driver. False (nothing copied)
/// when the pages could not be registered.
bool upload_registered(const Chunk& c, cudaStream_t stream) {
  constexpr uintptr_t page = 4096;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(c.src);
  const uintptr_t first = (begin + page - 1) & ~(page - 1);
  const uintptr_t last = (begin + c.len) & ~(page - 1);
  if (last <= first) return false;
  void* pages = reinterpret_cast<void*>(first);
  if (cudaHostRegister(pages, last - first, cudaHostRegisterDefault) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  struct Unregister {
    void* p;
    ~Unregister() {
      if (cudaHostUnregister(p) != cudaSuccess) (void)cudaGetLastError();
    }
  } unregister{pages};
  const size_t head = first - begin, body = last - first, tail = c.len - head - body;
  if (head != 0) CUDA_TRY(cudaMemcpyAsync(c.dst, c.src, head, cudaMemcpyHostToDevice, stream));
  CUDA_TRY(cudaMemcpyAsync(c.dst + head, c.src + head, body, cudaMemcpyHostToDevice, stream));
  if (tail != 0)
    CUDA_TRY(cudaMemcpyAsync(c.dst + head + body, c.src + head + body, tail,
                             cudaMemcpyHostToDevice, stream));
  CUDA_TRY(cudaStreamSynchronize(stream));  // before the pages are unpinned
  return true;
}

/// Copies every range of `copies` between host memory and device memory: small ones directly on
/// the context's stream, the others in chunks through the context's pinned slots, on several
/// host threads (each with its own slot and stream) in one job, so the chunks of all large ranges
/// keep every thread busy (uploads: or another way, upload_way). `to_device`: host `src` into
/// device `dst`; else device `src` into host `dst`.
void staged_copy(const DeviceContext& ctx, std::span<const HostCopy> copies, bool to_device) {
  // src or dst is ordered on the context's stream (written there, or allocated there).
  CUDA_TRY(cudaStreamSynchronize(ctx.stream.get()));
  const UploadWay way = to_device ? upload_way() : UploadWay::kStaged;
  // Ranges below this are copied directly: a download into pageable memory; an upload's of
  // a quarter of a slot (the driver stages a pageable upload on the calling thread, one range
  // after another, where the slots' threads copy several side by side).
  const size_t kDirectBelow = way == UploadWay::kPageable ? ~size_t{0}
                              : to_device                 ? DownloadStaging::kSlot / 4
                                                          : DownloadStaging::kSlot;
  const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  std::vector<Chunk> chunks;
  bool direct = false;
  // Registered uploads take a whole range per job (one registration each); the others chunks of
  // a slot.
  const size_t chunk = way == UploadWay::kRegistered ? ~size_t{0} : DownloadStaging::kSlot;
  for (const HostCopy& c : copies) {
    if (c.bytes == 0) continue;
    if (c.bytes < kDirectBelow) {
      CUDA_TRY(cudaMemcpyAsync(c.dst, c.src, c.bytes, kind, ctx.stream.get()));
      direct = true;
      continue;
    }
    for (size_t at = 0; at < c.bytes; at += std::min(chunk, c.bytes - at))
      chunks.push_back({static_cast<char*>(c.dst) + at, static_cast<const char*>(c.src) + at,
                        std::min(chunk, c.bytes - at)});
  }
  if (direct) CUDA_TRY(cudaStreamSynchronize(ctx.stream.get()));
  if (chunks.empty()) return;
  DownloadStaging& st = staging_of(ctx);
  const unsigned threads = static_cast<unsigned>(std::min(st.streams.size(), chunks.size()));
  std::atomic<size_t> next{0};
  std::lock_guard<std::mutex> lock(st.busy);
  st.pool.run([&](unsigned t) {
    if (t >= threads) return;
    CUDA_TRY(cudaSetDevice(ctx.device));
    cudaStream_t stream = st.streams[t].get();
    char* slot = static_cast<char*>(st.slot(static_cast<unsigned>(t)));
    unsigned turn = 0;
    for (size_t i = next++; i < chunks.size(); i = next++) {
      const Chunk& c = chunks[i];
      if (way == UploadWay::kDouble) {
        upload_double(c, slot, stream, &st.events[2 * t], turn);
      } else if (way == UploadWay::kRegistered && upload_registered(c, stream)) {
        continue;  // sent from its own pages
      } else if (to_device) {
        for (size_t at = 0; at < c.len; at += DownloadStaging::kSlot) {
          const size_t len = std::min(DownloadStaging::kSlot, c.len - at);
          std::memcpy(slot, c.src + at, len);
          CUDA_TRY(cudaMemcpyAsync(c.dst + at, slot, len, kind, stream));
          CUDA_TRY(cudaStreamSynchronize(stream));
        }
      } else {
        CUDA_TRY(cudaMemcpyAsync(slot, c.src, c.len, kind, stream));
        CUDA_TRY(cudaStreamSynchronize(stream));
        std::memcpy(c.dst, slot, c.len);
      }
    }
    if (way == UploadWay::kDouble) CUDA_TRY(cudaStreamSynchronize(stream));
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
