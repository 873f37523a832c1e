// Wall-clock timing for the load / init / traversal splits that runs and benchmarks report.
#pragma once

#include <chrono>

namespace gtadoc {

class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  void reset() { start_ = std::chrono::steady_clock::now(); }
  /// Seconds since construction or the last reset.
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gtadoc
