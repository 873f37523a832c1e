// common/parallel.h: every index / thread share runs exactly once, and an exception from any
// share (the caller's own included) reaches the caller after every thread has ended.
// common/parallel_resize.h: the array comes out value-initialized, fresh or reused.
#include "common/parallel.h"

#include "common/parallel_resize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <vector>

namespace gtadoc {
namespace {

TEST(Parallel, RunOnThreadsRunsEachShareOnce) {
  for (unsigned threads : {1u, 2u, 7u}) {
    std::vector<std::atomic<int>> runs(threads);
    run_on_threads(threads, [&](unsigned t) { runs[t]++; });
    for (unsigned t = 0; t < threads; ++t) EXPECT_EQ(runs[t].load(), 1) << t;
  }
}

TEST(Parallel, RunOnThreadsRethrowsAfterJoiningEveryThread) {
  for (unsigned thrower : {0u, 3u}) {  // the caller's share, and a started thread's
    std::atomic<int> finished{0};
    try {
      run_on_threads(5, [&](unsigned t) {
        if (t == thrower) throw std::runtime_error("share " + std::to_string(t));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        finished++;
      });
      FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "share " + std::to_string(thrower));
    }
    EXPECT_EQ(finished.load(), 4);  // the others all ran to the end before the rethrow
  }
}

TEST(Parallel, ParallelForCoversEveryIndexAndRethrows) {
  std::vector<std::atomic<int>> seen(1000);
  parallel_for(seen.size(), 4, [&](size_t i) { seen[i]++; });
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << i;
  EXPECT_THROW(parallel_for(100, 3,
                            [](size_t i) {
                              if (i == 42) throw std::logic_error("42");
                            }),
               std::logic_error);
}

TEST(Parallel, ResizeInParallelGivesValueInitializedArrays) {
  // Past the size from which the pages are first touched on several threads, an odd size (a last
  // piece shorter than the others); then reused smaller (no new memory), then grown again.
  std::vector<uint64_t> v{7, 7, 7};
  for (size_t n : {(size_t{40} << 20) / 8 + 13, size_t{1000}, (size_t{48} << 20) / 8 + 1}) {
    for (uint64_t& x : v) x = 7;
    resize_in_parallel(v, n, 3);
    ASSERT_EQ(v.size(), n);
    ASSERT_EQ(std::count(v.begin(), v.end(), uint64_t{0}), static_cast<ptrdiff_t>(n)) << n;
  }
  std::vector<uint32_t> small;
  resize_in_parallel(small, 5, 0);
  EXPECT_EQ(small, std::vector<uint32_t>(5, 0));
}

}  // namespace
}  // namespace gtadoc
