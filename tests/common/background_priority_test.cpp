// lower_to_background_priority: the calling thread's nice value becomes kBackgroundNice, the
// threads it starts afterwards inherit it, and other threads keep theirs (Linux).
#include "common/background_priority.h"

#include <gtest/gtest.h>

#include <thread>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace gtadoc {
namespace {

#if defined(__linux__)
int my_nice() {
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
}

TEST(BackgroundPriority, LowersTheCallingThreadAndWhatItStarts) {
  const int before = my_nice();
  if (before >= kBackgroundNice) GTEST_SKIP() << "already at nice " << before;
  int lowered = -100, child = -100;
  bool changed = false;
  std::thread t([&] {
    changed = lower_to_background_priority();
    lowered = my_nice();
    std::thread inner([&] { child = my_nice(); });
    inner.join();
  });
  t.join();
  ASSERT_TRUE(changed);
  EXPECT_EQ(lowered, kBackgroundNice);
  EXPECT_EQ(child, kBackgroundNice);
  EXPECT_EQ(my_nice(), before);  // the caller's thread only
}
#endif

}  // namespace
}  // namespace gtadoc
