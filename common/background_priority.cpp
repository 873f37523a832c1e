#include "common/background_priority.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace gtadoc {

bool lower_to_background_priority() noexcept {
#if defined(__linux__)
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  return setpriority(PRIO_PROCESS, tid, kBackgroundNice) == 0;
#else
  return false;
#endif
}

}  // namespace gtadoc
