#include "common/malloc_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "common/settings.h"

namespace gtadoc {

bool keep_freed_blocks() {
#if defined(__GLIBC__)
  if (!settings::flag("GTADOC_MALLOC_KEEP")) return false;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return false;
  constexpr int kMmapThreshold = 32 << 20;  // glibc's largest: HEAP_MAX_SIZE / 2 on 64 bits
  constexpr int kTrimThreshold = 256 << 20;
  return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 &&
         mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
#else
  return false;
#endif
}

}  // namespace gtadoc
