#include <algorithm>
#include <atomic>
#include <cstdio>

#include "common/error.h"
#include "common/settings.h"
#include "worker/engine.h"

#ifdef GTADOC_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace gtadoc {

bool gpu_memory(int local_rank, uint64_t* used, uint64_t* total) {
#ifdef GTADOC_HAVE_CUDA
  int n = 0;
  if (!gpu_available() || cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    return false;
  }
  size_t free_b = 0, total_b = 0;
  if (cudaSetDevice(local_rank % n) != cudaSuccess ||
      cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  *used = total_b - free_b;
  *total = total_b;
  return true;
#else
  (void)local_rank;
  (void)used;
  (void)total;
  return false;
#endif
}

#ifndef GTADOC_HAVE_GPU_ENGINE  // defined when worker/gpu provides the engine
bool gpu_available() {
  return false;
}
int gpu_count() {
  return 0;
}
std::unique_ptr<Engine> make_gpu_engine(int) {
  throw ResourceError("--engine gpu: this build of gtadoc has no GPU engine (built without CUDA)");
}
void warm_up_gpu(int, int) {}
void finish_gpu_warm_up() {}
#endif

namespace {
std::atomic<uint64_t> g_gpu_memory_limit{0};  // set_gpu_memory_limit's
}  // namespace

void set_gpu_memory_limit(uint64_t bytes) {
  g_gpu_memory_limit = bytes;
}

uint64_t gpu_memory_limit() {
  if (const uint64_t option = g_gpu_memory_limit; option != 0) return option;
  return settings::bytes_if_set("GTADOC_GPU_MEMORY_LIMIT").value_or(0);
}

int gpu_device_of(int local_rank) {
  const int n = gpu_count();
  return n <= 0 ? 0 : ((local_rank % n) + n) % n;
}

std::unique_ptr<Engine> make_engine(const std::string& name, unsigned threads, int local_rank) {
  if (name == "cpu") return make_cpu_engine(threads);
  if (name == "gpu") {
    if (!gpu_available()) throw ResourceError("--engine gpu: no CUDA device is visible");
    return make_gpu_engine(local_rank);
  }
  if (name == "auto")
    return gpu_available() ? make_gpu_engine(local_rank) : make_cpu_engine(threads);
  throw UsageError("--engine: unknown engine '" + name + "' (expected auto, gpu or cpu)");
}

namespace {

/// End-to-end seconds per MB of grammar, fitted to the e2e benchmark (docs/PERFORMANCE.md,
/// "End to end"; H100 host with 16 cores, after the GPU load became a prefetched, parallel
/// preparation; real text of 30 MB and 450 MB, 6.6 and 92.5 MB of grammar): the CPU engine takes
/// G * (serial + parallel / T), the GPU engine G * gpu plus its start-up. The fit gives the CPU's
/// slope at 16 threads; it is split into serial and parallel parts in the proportions fitted
/// earlier on a 32-core H200 host. `serial` is what does not scale with threads (reduce, rows,
/// writing), which the GPU path pays too, inside `gpu`. With the records kept on the GPU until
/// reduced, `gpu` is lowered by the saving measured in one run on the 450 MB archive (GPU total
/// with GTADOC_DEVICE_RECORDS=0 minus without, per MB of grammar: word-count 0.0012, inverted-index
/// 0.0064, sequence-count 0.0040, ranked-inverted-index 0.0155; term-vector unchanged).
struct EngineCosts {
  double serial, parallel, gpu;
};

EngineCosts costs_of(Task task) {
  switch (task) {
    case Task::kWordCount:
    case Task::kSort:
      return {0.0164, 0.0021, 0.0072};
    case Task::kInvertedIndex:
      return {0.031, 0.069, 0.0146};
    case Task::kTermVector:
      return {0.024, 0.041, 0.0099};
    case Task::kSequenceCount:
      return {0.045, 0.244, 0.019};
    case Task::kRankedInvertedIndex:
      return {0.084, 0.240, 0.0335};
  }
  return {0, 0, 1};
}

/// What a fresh GPU process pays before its first traversal and a CPU one does not (the CUDA
/// context; the shards' preparation overlaps it): the fits' intercepts differ by 0.18-0.31 s.
constexpr double kGpuStartupS = 0.22;

}  // namespace

std::string choose_auto_engine(Task task, double grammar_mb_per_rank, unsigned threads,
                               bool gpu_visible, std::string* why) {
  const EngineCosts c = costs_of(task);
  const double t = std::max(1u, threads);
  const double gain = grammar_mb_per_rank * (c.serial + c.parallel / t - c.gpu);
  const bool wins = gain > kGpuStartupS;
  if (why != nullptr) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "%.1f MB of grammar per rank on %u threads: a GPU would save an estimated %.2f "
                  "s against %.2f s of CUDA start-up%s",
                  grammar_mb_per_rank, threads, gain, kGpuStartupS,
                  wins && !gpu_visible ? ", but no CUDA device is visible" : "");
    *why = buf;
  }
  return wins && gpu_visible ? "gpu" : "cpu";
}

}  // namespace gtadoc
