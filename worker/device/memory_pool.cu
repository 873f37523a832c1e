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
  const uint64_t keep = in_use_ + keep_unused < in_use_ ? ~uint64_t{0} : in_use_ + keep_unused;
  (void)cudaMemPoolTrimTo(mempool_, static_cast<size_t>(keep));
}

void* MemoryPool::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  if (limit_ != kNoLimit && (bytes > limit_ || in_use_ > limit_ - bytes))
    throw ResourceError("GPU memory exhausted: " + std::to_string(bytes) +
                        " more bytes requested with " + std::to_string(in_use_) +
                        " in use, over the limit of " + std::to_string(limit_) + " bytes");
  void* p = nullptr;
  const cudaError_t err = cudaMallocAsync(&p, bytes, stream_);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it so later launch checks do not see it
    throw ResourceError("GPU memory exhausted: cudaMallocAsync of " + std::to_string(bytes) +
                        " bytes failed with " + std::to_string(in_use_) + " bytes in use");
  }
  CUDA_TRY(err);
  in_use_ += bytes;
  if (in_use_ > peak_) peak_ = in_use_;
  return p;
}

void MemoryPool::deallocate(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  // A failure here can only come from a corrupted context; the next checked call reports it.
  (void)cudaFreeAsync(p, stream_);
  in_use_ -= bytes;
}

}  // namespace gtadoc::gpu
