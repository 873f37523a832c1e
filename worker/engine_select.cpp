#include "common/error.h"
#include "worker/engine.h"

namespace gtadoc {

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

}  // namespace gtadoc
