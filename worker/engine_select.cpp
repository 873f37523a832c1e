#include <algorithm>
#include <cstdio>

#include "common/error.h"
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
std::unique_ptr<Engine> make_gpu_engine(int) {
  throw ResourceError("--engine gpu: this build of gtadoc has no GPU engine (built without CUDA)");
}
#endif

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

/// End-to-end seconds per MB of grammar, fitted to the e2e benchmark (docs/PERFORMANCE.md, H200
/// host, 32 cores; real text of 30 MB and 250 MB): the CPU engine takes G * (serial + parallel /
/// T), the GPU engine G * gpu plus its start-up. `serial` is what does not scale with threads
/// (reduce, rows, writing), which the GPU path pays too, inside `gpu`.
struct EngineCosts {
  double serial, parallel, gpu;
};
EngineCosts costs_of(Task task) {
  switch (task) {
    case Task::kWordCount:
    case Task::kSort:
      return {0.0085, 0.0011, 0.0099};
    case Task::kInvertedIndex:
      return {0.020, 0.045, 0.016};
    case Task::kTermVector:
      return {0.019, 0.032, 0.021};
    case Task::kSequenceCount:
      return {0.034, 0.185, 0.026};
    case Task::kRankedInvertedIndex:
      return {0.060, 0.171, 0.042};
  }
  return {0, 0, 1};
}
/// What a fresh GPU process pays before its first traversal and a CPU one does not (CUDA
/// context, device allocations and uploads): 0.6 s against 0.05 s.
constexpr double kGpuStartupS = 0.55;

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
