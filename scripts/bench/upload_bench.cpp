// How fast host arrays reach the GPU from several threads at once, the ways a load lane could send
// a shard's bodies and unit ranges (docs/PERFORMANCE.md, "Scale"): through a pinned staging slot
// of 2 MiB (copy in, DMA, wait: what worker/gpu/download.cpp does now), through two half slots so
// that the copy into one overlaps the DMA of the other, straight from pageable memory (the
// driver stages it), by registering the array for the copy (cudaHostRegister, DMA, unregister),
// and from memory pinned beforehand (the link's bound). Each thread has its own stream, slot and
// arrays, and uploads ARRAYS different arrays of MIB MiB, each written before (its pages in
// place, as a shard's freshly decoded arrays are). After each mode every thread's last array is
// copied back and compared, so a wrong upload fails the run (exit 1).
//
//   gtadoc_upload_bench MIB THREADS [ARRAYS]
// prints one JSON line per mode: {"mode", "mib", "threads", "arrays", "ms_per_array", "gbps"}
// (ms_per_array: the wall time over the arrays one thread sent; gbps: every thread's bytes).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kSlot = size_t{2} << 20;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "gtadoc_upload_bench: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

/// One thread's arrays, device buffer, pinned memory (slots, or a pinned source) and stream.
struct Lane {
  std::vector<std::vector<char>> arrays;
  char* device = nullptr;
  char* pinned = nullptr;  ///< max(2 slots, one array)
  cudaStream_t stream = nullptr;
  cudaEvent_t done[2] = {nullptr, nullptr};
};

void staged(Lane& l, const char* src, size_t bytes) {
  for (size_t at = 0; at < bytes; at += kSlot) {
    const size_t n = std::min(kSlot, bytes - at);
    std::memcpy(l.pinned, src + at, n);
    check(cudaMemcpyAsync(l.device + at, l.pinned, n, cudaMemcpyHostToDevice, l.stream), "copy");
    check(cudaStreamSynchronize(l.stream), "sync");
  }
}

void staged_double(Lane& l, const char* src, size_t bytes) {
  const size_t half = kSlot / 2;
  bool used[2] = {false, false};
  int k = 0;
  for (size_t at = 0; at < bytes; at += half, k ^= 1) {
    const size_t n = std::min(half, bytes - at);
    char* slot = l.pinned + static_cast<size_t>(k) * half;
    if (used[k]) check(cudaEventSynchronize(l.done[k]), "event");
    std::memcpy(slot, src + at, n);
    check(cudaMemcpyAsync(l.device + at, slot, n, cudaMemcpyHostToDevice, l.stream), "copy");
    check(cudaEventRecord(l.done[k], l.stream), "record");
    used[k] = true;
  }
  check(cudaStreamSynchronize(l.stream), "sync");
}

void pageable(Lane& l, const char* src, size_t bytes) {
  check(cudaMemcpyAsync(l.device, src, bytes, cudaMemcpyHostToDevice, l.stream), "copy");
  check(cudaStreamSynchronize(l.stream), "sync");
}

void registered(Lane& l, const char* src, size_t bytes) {
  // Whole pages around the array (a registration covers pages).
  const uintptr_t page = 4096;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(src) & ~(page - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(src) + bytes + page - 1) & ~(page - 1);
  void* base = reinterpret_cast<void*>(lo);
  check(cudaHostRegister(base, hi - lo, cudaHostRegisterDefault), "register");
  check(cudaMemcpyAsync(l.device, src, bytes, cudaMemcpyHostToDevice, l.stream), "copy");
  check(cudaStreamSynchronize(l.stream), "sync");
  check(cudaHostUnregister(base), "unregister");
}

void from_pinned(Lane& l, const char*, size_t bytes) {
  check(cudaMemcpyAsync(l.device, l.pinned, bytes, cudaMemcpyHostToDevice, l.stream), "copy");
  check(cudaStreamSynchronize(l.stream), "sync");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: gtadoc_upload_bench MIB THREADS [ARRAYS]\n");
    return 2;
  }
  const size_t bytes = std::strtoull(argv[1], nullptr, 10) << 20;
  const int threads = std::atoi(argv[2]);
  const int arrays = argc == 4 ? std::atoi(argv[3]) : 24;
  if (bytes == 0 || threads < 1 || arrays < 1) {
    std::fprintf(stderr, "gtadoc_upload_bench: bad size, thread or array count\n");
    return 2;
  }
  check(cudaFree(nullptr), "start");
  std::vector<Lane> lanes(static_cast<size_t>(threads));
  for (size_t t = 0; t < lanes.size(); ++t) {
    Lane& l = lanes[t];
    for (int i = 0; i < arrays; ++i) {
      std::vector<char> a(bytes);
      for (size_t j = 0; j < bytes; j += 64) a[j] = static_cast<char>(t * 131 + i * 7 + j / 64);
      l.arrays.push_back(std::move(a));
    }
    check(cudaMalloc(&l.device, bytes), "device memory");
    check(cudaMallocHost(&l.pinned, std::max(bytes, 2 * kSlot)), "pinned memory");
    check(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking), "stream");
    for (cudaEvent_t& e : l.done)
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
  }
  struct Mode {
    const char* name;
    void (*upload)(Lane&, const char*, size_t);
  };
  const Mode modes[] = {{"staged", staged},
                        {"staged-double", staged_double},
                        {"pageable", pageable},
                        {"registered", registered},
                        {"pinned", from_pinned}};
  int status = 0;
  std::vector<char> back(bytes);
  for (const Mode& m : modes) {
    const bool pinned_source = m.upload == from_pinned;
    if (pinned_source)  // the source is the pinned block: the last array, copied there untimed
      for (Lane& l : lanes) std::memcpy(l.pinned, l.arrays.back().data(), bytes);
    const double t0 = now();
    std::vector<std::thread> pool;
    for (Lane& l : lanes)
      pool.emplace_back([&m, &l, bytes] {
        for (const std::vector<char>& a : l.arrays) m.upload(l, a.data(), bytes);
      });
    for (std::thread& th : pool) th.join();
    const double seconds = now() - t0;
    for (Lane& l : lanes) {
      check(cudaMemcpy(back.data(), l.device, bytes, cudaMemcpyDeviceToHost), "copy back");
      if (std::memcmp(back.data(), l.arrays.back().data(), bytes) != 0) {
        std::fprintf(stderr, "gtadoc_upload_bench: %s: the device holds other bytes\n", m.name);
        status = 1;
      }
    }
    std::printf(
        "{\"mode\": \"%s\", \"mib\": %zu, \"threads\": %d, \"arrays\": %d, \"ms_per_array\": %.3f, "
        "\"gbps\": %.2f}\n",
        m.name, bytes >> 20, threads, arrays, seconds * 1e3 / arrays,
        static_cast<double>(bytes) * arrays * threads / seconds / 1e9);
  }
  for (Lane& l : lanes) {
    for (cudaEvent_t e : l.done) cudaEventDestroy(e);
    cudaStreamDestroy(l.stream);
    cudaFreeHost(l.pinned);
    cudaFree(l.device);
  }
  return status;
}
