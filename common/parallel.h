// Minimal fork-join parallelism: run f(i) for i in [0, n) on up to `threads` threads with dynamic
// scheduling (parallel_for), or f(t) once per thread t (run_on_threads, for code that splits its
// work into per-thread blocks itself). The first exception thrown by any f is rethrown on the
// caller after all threads end; a throwing caller's share never leaves threads unjoined.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common/cpus.h"

namespace gtadoc {

/// `requested` when > 0, else the CPUs this process may use (common/cpus.h).
inline unsigned resolve_threads(unsigned requested) {
  return requested > 0 ? requested : usable_cpus();
}

template <typename F>
void parallel_for(size_t n, unsigned threads, F&& f) {
  threads = static_cast<unsigned>(std::min<size_t>(resolve_threads(threads), n));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;
  auto worker = [&] {
    for (;;) {
      size_t i = next.fetch_add(1);
      if (i >= n || failed.load()) return;
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

/// Runs fn(t) for every t in [0, threads) on `threads` threads, the caller running t = 0 (one
/// thread: no thread is started). Every thread is joined before the first exception any fn threw
/// (the caller's share included) is rethrown.
template <typename F>
void run_on_threads(unsigned threads, F&& fn) {
  if (threads <= 1) {
    fn(0u);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mu;
  auto guarded = [&](unsigned t) {
    try {
      fn(t);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(guarded, t);
  guarded(0u);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace gtadoc
