// recycled:: (common/recycled_arrays.h).
#include "common/recycled_arrays.h"

#include <deque>
#include <mutex>
#include <utility>

namespace gtadoc::recycled {
namespace {

struct Held {
  std::mutex mu;
  std::deque<std::vector<uint32_t>> arrays;  // oldest first
  uint64_t bytes = 0;
  uint64_t capacity = uint64_t{1} << 30;
};

Held& held_arrays() {
  static Held* h = new Held;  // never destroyed: arrays may be given back during exit
  return *h;
}

uint64_t bytes_of(const std::vector<uint32_t>& v) {
  return v.capacity() * sizeof(uint32_t);
}

}  // namespace

std::vector<uint32_t> take(size_t n) {
  std::vector<uint32_t> out;
  if (n * sizeof(uint32_t) < kMinBytes) return out;
  Held& h = held_arrays();
  std::lock_guard<std::mutex> lock(h.mu);
  auto best = h.arrays.end();
  for (auto it = h.arrays.begin(); it != h.arrays.end(); ++it)
    if (it->capacity() >= n && it->capacity() / 2 <= n &&
        (best == h.arrays.end() || it->capacity() < best->capacity()))
      best = it;
  if (best != h.arrays.end()) {
    out = std::move(*best);
    h.arrays.erase(best);
    h.bytes -= bytes_of(out);
  }
  return out;
}

void give(std::vector<uint32_t>&& v) noexcept {
  std::vector<uint32_t> mine = std::move(v);
  v = {};
  if (bytes_of(mine) < kMinBytes) return;
  mine.clear();
  std::deque<std::vector<uint32_t>> drop;  // freed outside the lock
  Held& h = held_arrays();
  std::lock_guard<std::mutex> lock(h.mu);
  if (bytes_of(mine) > h.capacity) return;
  h.bytes += bytes_of(mine);
  h.arrays.push_back(std::move(mine));
  while (h.bytes > h.capacity) {
    h.bytes -= bytes_of(h.arrays.front());
    drop.push_back(std::move(h.arrays.front()));
    h.arrays.pop_front();
  }
}

void clear() noexcept {
  std::deque<std::vector<uint32_t>> drop;
  Held& h = held_arrays();
  std::lock_guard<std::mutex> lock(h.mu);
  drop.swap(h.arrays);
  h.bytes = 0;
}

uint64_t held() {
  Held& h = held_arrays();
  std::lock_guard<std::mutex> lock(h.mu);
  return h.bytes;
}

void set_capacity(uint64_t bytes) {
  Held& h = held_arrays();
  std::lock_guard<std::mutex> lock(h.mu);
  h.capacity = bytes;
}

}  // namespace gtadoc::recycled
