// MemoryPool: stream-ordered allocation from the device's default CUDA memory pool, with byte
// accounting and an optional limit (used to bound a query's workspace, and by tests to force
// the engine's out-of-memory fallbacks).
#include <cstdint>
#include <string>

#include "worker/device/device_buffer.cuh"

namespace gtadoc::gpu {

MemoryPool::MemoryPool(int device, cudaStream_t stream) : device_(device), stream_(stream) {
  CUDA_TRY(cudaDeviceGetDefaultMemPool(&mempool_, device));
  uint64_t keep = ~uint64_t{0};
  CUDA_TRY(cudaMemPoolSetAttribute(mempool_, cudaMemPoolAttrReleaseThreshold, &keep));
}

void MemoryPool::trim(uint64_t keep_unused) noexcept {
  const uint64_t used = in_use();
  const uint64_t keep = used + keep_unused < used ? ~uint64_t{0} : used + keep_unused;
  (void)cudaMemPoolTrimTo(mempool_, static_cast<size_t>(keep));
}

void* MemoryPool::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const uint64_t used = in_use();
  if (limit_ != kNoLimit && (bytes > limit_ || used > limit_ - bytes))
    throw ResourceError("GPU memory exhausted: " + std::to_string(bytes) +
                        " more bytes requested with " + std::to_string(used) +
                        " in use, over the limit of " + std::to_string(limit_) + " bytes");
  void* p = nullptr;
  const cudaError_t err = cudaMallocAsync(&p, bytes, stream_);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it so later launch checks do not see it
    throw ResourceError("GPU memory exhausted: cudaMallocAsync of " + std::to_string(bytes) +
                        " bytes failed with " + std::to_string(used) + " bytes in use");
  }
  CUDA_TRY(err);
  adopt(bytes);
  return p;
}

void MemoryPool::adopt(uint64_t bytes) noexcept {
  const uint64_t now = in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (now > peak_) peak_ = now;
}

void MemoryPool::deallocate(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  // A failure here can only come from a corrupted context; the next checked call reports it.
  (void)cudaFreeAsync(p, stream_);
  forget(bytes);
}

}  // namespace gtadoc::gpu
