// A fixed pool of worker threads for the engines' host-side work (the CPU engine's operators, the
// shard layout both engines build at load), and `parallel_for` over index ranges with
// dynamic chunking. With one thread nothing is spawned: the work runs as a direct call.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gtadoc::plan {

class ThreadPool {
 public:
  /// `threads` counts the calling thread: threads - 1 workers are started.
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  /// Runs fn(tid) for every tid in [0, size()) (tid 0 on the caller) and waits for all of them.
  /// The first exception thrown by any fn is rethrown here.
  void run(const std::function<void(unsigned)>& fn);

 private:
  void worker_loop(unsigned tid);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(unsigned)>* job_ = nullptr;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

/// How a query runs: on `threads` threads of `pool` (pool is null when threads == 1).
struct Exec {
  ThreadPool* pool = nullptr;
  unsigned threads = 1;

  /// fn(tid) on every thread.
  void on_all(const std::function<void(unsigned)>& fn) const {
    if (pool == nullptr || threads <= 1) {
      fn(0);
    } else {
      pool->run(fn);
    }
  }

  /// fn(tid, lo, hi) over [begin, end) in dynamically claimed chunks of `grain` indices.
  /// Sequential (one direct call over the whole range) when threads == 1.
  template <class Fn>
  void parallel_for(uint64_t begin, uint64_t end, uint64_t grain, Fn&& fn) const {
    if (begin >= end) return;
    if (pool == nullptr || threads <= 1 || end - begin <= grain) {
      fn(0u, begin, end);
      return;
    }
    grain = std::max<uint64_t>(grain, 1);
    std::atomic<uint64_t> next{begin};
    pool->run([&](unsigned tid) {
      for (;;) {
        uint64_t lo = next.fetch_add(grain, std::memory_order_relaxed);
        if (lo >= end) break;
        fn(tid, lo, std::min(end, lo + grain));
      }
    });
  }
};

}  // namespace gtadoc::plan
