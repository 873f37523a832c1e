// Device memory ownership of the GPU engine. Guarantees: every device allocation of the engine
// goes through MemoryPool (the CUDA runtime's stream-ordered pool behind cudaMallocAsync, kept
// warm between queries, with an optional byte limit) and is owned by exactly one move-only
// DeviceBuffer<T>; kernels receive trivially copyable DeviceSpan<T> views. Allocation failure
// (real or over the limit) throws ResourceError, so callers can retry with smaller pieces.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"

/// Checks the launch of the kernel just issued (bad configuration, or an earlier async fault).
#define GTADOC_CHECK_LAUNCH() CUDA_TRY(cudaGetLastError())

namespace gtadoc::gpu {

/// An owned CUDA stream (non-blocking with respect to the legacy default stream).
class Stream {
 public:
  Stream() { CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  /// Waits for all work queued on the stream (only to hand values back to the host).
  void synchronize() const { CUDA_TRY(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

/// A CUDA event without timing, owned.
class Event {
 public:
  Event() { CUDA_TRY(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~Event() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Stream-ordered device allocator with accounting. All allocations and frees are ordered on
/// one stream, so a buffer freed while kernels that use it are queued stays valid for them.
/// One thread at a time allocates from a pool (the engine serializes queries; each load lane
/// has a pool of its own); in_use() may be read from any thread. Every pool of a device draws
/// on the device's default CUDA memory pool, so a buffer allocated through one pool may move to
/// another (DeviceBuffer::rehome) once its allocation's stream has been synchronized.
class MemoryPool {
 public:
  static constexpr uint64_t kNoLimit = ~uint64_t{0};

  /// Raises the release threshold of `device`'s default pool so freed memory is reused by the
  /// next query instead of going back to the driver.
  MemoryPool(int device, cudaStream_t stream);
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  /// Throws ResourceError when the limit would be exceeded or the device is out of memory.
  void* allocate(size_t bytes);
  void deallocate(void* p, size_t bytes) noexcept;

  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_; }
  uint64_t limit() const { return limit_; }
  /// Total bytes this pool may hold at once (kNoLimit = until the device is full).
  void set_limit(uint64_t bytes) { limit_ = bytes; }
  void reset_peak() { peak_ = in_use(); }
  /// Accounting of a buffer that moves to or from this pool (DeviceBuffer::rehome).
  void adopt(uint64_t bytes) noexcept;
  void forget(uint64_t bytes) noexcept { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }
  /// Returns freed memory to the driver, keeping at most `keep_unused` bytes reserved beyond
  /// what is in use (so NCCL and other cudaMalloc users find it). Call after a synchronize.
  void trim(uint64_t keep_unused) noexcept;

 private:
  int device_;
  cudaStream_t stream_;
  cudaMemPool_t mempool_ = nullptr;
  uint64_t limit_ = kNoLimit;
  std::atomic<uint64_t> in_use_{0};
  uint64_t peak_ = 0;
};

/// A view of device memory for kernels: pointer and length, trivially copyable.
template <class T>
struct DeviceSpan {
  T* ptr = nullptr;
  size_t len = 0;
  __host__ __device__ T* data() const { return ptr; }
  __host__ __device__ size_t size() const { return len; }
  __host__ __device__ T& operator[](size_t i) const { return ptr[i]; }
};

/// Move-only owner of `size()` elements of device memory from a MemoryPool. Contents are
/// uninitialized unless said otherwise. Destruction frees stream-ordered (never blocks).
template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "device buffers hold trivially copyable values");

 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t n, MemoryPool& pool) : pool_(&pool), size_(n) {
    if (n != 0) ptr_ = static_cast<T*>(pool.allocate(n * sizeof(T)));
  }
  /// Allocates and copies `host` (blocking until the host data has been read).
  DeviceBuffer(const std::vector<T>& host, MemoryPool& pool) : DeviceBuffer(host.size(), pool) {
    upload(host.data(), host.size());
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)),
        ptr_(std::exchange(o.ptr_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::exchange(o.pool_, nullptr);
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Hands the buffer to `to` (a pool of the same device): its accounting moves there and its
  /// free is ordered on `to`'s stream. Call only after the stream it was allocated and written
  /// on has been synchronized.
  void rehome(MemoryPool& to) noexcept {
    if (pool_ == &to) return;
    if (ptr_ != nullptr) {
      pool_->forget(size_ * sizeof(T));
      to.adopt(size_ * sizeof(T));
    }
    pool_ = &to;
  }

  void reset() noexcept {
    if (ptr_ != nullptr) pool_->deallocate(ptr_, size_ * sizeof(T));
    ptr_ = nullptr;
    size_ = 0;
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  DeviceSpan<T> span() { return {ptr_, size_}; }
  DeviceSpan<const T> span() const { return {ptr_, size_}; }

  /// Sets every byte to `value` (stream-ordered).
  void memset_async(int value) {
    if (size_ != 0) CUDA_TRY(cudaMemsetAsync(ptr_, value, size_ * sizeof(T), pool_->stream()));
  }
  /// Copies n host values to the start of the buffer.
  void upload(const T* host, size_t n, size_t at = 0) {
    GTADOC_EXPECTS(at + n <= size_, "DeviceBuffer::upload out of range");
    if (n != 0)
      CUDA_TRY(
          cudaMemcpyAsync(ptr_ + at, host, n * sizeof(T), cudaMemcpyHostToDevice, pool_->stream()));
  }
  /// Copies [at, at + n) to host memory and waits for the copy.
  void download(T* host, size_t n, size_t at = 0) const {
    GTADOC_EXPECTS(at + n <= size_, "DeviceBuffer::download out of range");
    if (n == 0) return;
    CUDA_TRY(
        cudaMemcpyAsync(host, ptr_ + at, n * sizeof(T), cudaMemcpyDeviceToHost, pool_->stream()));
    CUDA_TRY(cudaStreamSynchronize(pool_->stream()));
  }
  std::vector<T> to_host(size_t n) const {
    std::vector<T> out(n);
    download(out.data(), n);
    return out;
  }
  std::vector<T> to_host() const { return to_host(size_); }
  /// One element, synchronously.
  T get(size_t i) const {
    T v;
    download(&v, 1, i);
    return v;
  }

 private:
  MemoryPool* pool_ = nullptr;
  T* ptr_ = nullptr;
  size_t size_ = 0;
};

/// Device-to-device copy of n elements on the pool's stream.
template <class T>
void copy_async(T* dst, const T* src, size_t n, cudaStream_t stream) {
  if (n != 0) CUDA_TRY(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice, stream));
}

}  // namespace gtadoc::gpu
