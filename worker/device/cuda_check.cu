// The CUDA half of the error vocabulary (common/error.h): CUDA_TRY lands here with the failed
// call, and it becomes a typed exception. Out-of-memory is a ResourceError (callers fall back
// to smaller pieces); anything else is an InternalError.
#include <cuda_runtime.h>

#include <string>

#include "common/error.h"

namespace gtadoc::detail {

[[noreturn]] void throw_cuda_error(int code, const char* expr, const char* file, int line) {
  const auto err = static_cast<cudaError_t>(code);
  std::string msg = std::string("CUDA call ") + expr + " failed: " + cudaGetErrorString(err) +
                    " at " + file + ":" + std::to_string(line);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // out-of-memory is not sticky; let the caller retry
    throw ResourceError(msg, file, line);
  }
  throw InternalError(msg, file, line);
}

}  // namespace gtadoc::detail
