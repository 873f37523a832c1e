// The cache of large blocks behind HugePageAllocator (common/big_alloc.h).
#include "common/big_alloc.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "common/settings.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace gtadoc::big_block {
namespace {

constexpr size_t kGranule = size_t{2} << 20;  // block sizes are whole huge pages

size_t rounded(size_t bytes) {
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

/// GTADOC_BLOCK_CACHE_BYTES when set (it overrides every default), else `otherwise`.
uint64_t from_environment(uint64_t otherwise) {
  return settings::bytes_if_set("GTADOC_BLOCK_CACHE_BYTES").value_or(otherwise);
}

struct Block {
  void* p;
  size_t bytes;  // the mapping's length (rounded)
};

struct Cache {
  std::mutex mu;
  std::deque<Block> blocks;  // oldest first
  uint64_t held = 0;
  uint64_t capacity = from_environment(0);
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: blocks may be freed during exit
  return *c;
}

void unmap(void* p, size_t bytes) noexcept {
#if defined(__linux__)
  munmap(p, bytes);
#else
  (void)bytes;
  std::free(p);
#endif
}

void shrink_to(Cache& c, uint64_t limit, std::deque<Block>& out) {
  while (c.held > limit && !c.blocks.empty()) {
    out.push_back(c.blocks.front());
    c.held -= c.blocks.front().bytes;
    c.blocks.pop_front();
  }
}

}  // namespace

void* acquire(size_t bytes) {
  const size_t size = rounded(bytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto best = c.blocks.end();
    for (auto it = c.blocks.begin(); it != c.blocks.end(); ++it)
      if (it->bytes >= size && it->bytes / 2 <= size &&
          (best == c.blocks.end() || it->bytes < best->bytes))
        best = it;
    if (best != c.blocks.end()) {
      Block b = *best;
      c.blocks.erase(best);
      c.held -= b.bytes;
#if defined(__linux__)
      if (b.bytes > size) munmap(static_cast<char*>(b.p) + size, b.bytes - size);  // the tail
#endif
      return b.p;
    }
  }
#if defined(__linux__)
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  advise_huge_pages(p, size);
  return p;
#else
  void* p = std::malloc(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
#endif
}

void release(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  const size_t size = rounded(bytes);
  Cache& c = cache();
  std::deque<Block> evicted;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (size <= c.capacity) {
      c.blocks.push_back({p, size});
      c.held += size;
      p = nullptr;
      shrink_to(c, c.capacity, evicted);
    }
  }
  if (p != nullptr) unmap(p, size);
  for (const Block& b : evicted) unmap(b.p, b.bytes);  // outside the lock
}

uint64_t resident_capacity() {
  uint64_t ram = 0;
#if defined(__linux__)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) ram = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
#endif
  return from_environment(std::min<uint64_t>(uint64_t{4} << 30, ram / 8));
}

void set_capacity(uint64_t bytes) {
  Cache& c = cache();
  std::deque<Block> evicted;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.capacity = bytes;
    shrink_to(c, bytes, evicted);
  }
  for (const Block& b : evicted) unmap(b.p, b.bytes);
}

uint64_t capacity() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.capacity;
}

uint64_t held() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.held;
}

}  // namespace gtadoc::big_block
