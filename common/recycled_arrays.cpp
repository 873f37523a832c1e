// recycled:: (common/recycled_arrays.h).
#include "common/recycled_arrays.h"

#include <deque>
#include <mutex>
#include <utility>

namespace gtadoc::recycled {
namespace {

struct Held {
  std::mutex mu;
  std::deque<std::vector<uint32_t>> arrays32;  // oldest first
  std::deque<std::vector<uint64_t>> arrays64;
  uint64_t bytes = 0;
  uint64_t capacity = uint64_t{1} << 30;

  template <class T>
  std::deque<std::vector<T>>& arrays() {
    if constexpr (sizeof(T) == 4)
      return arrays32;
    else
      return arrays64;
  }
  // Drops the oldest arrays into `drop` until the bytes fit the capacity and each type holds at
  // most kMaxArrays.
  void trim(std::deque<std::vector<uint32_t>>& drop32, std::deque<std::vector<uint64_t>>& drop64);
};

Held& held_arrays() {
  static Held* h = new Held;  // never destroyed: arrays may be given back during exit
  return *h;
}

template <class T>
uint64_t bytes_of(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

void Held::trim(std::deque<std::vector<uint32_t>>& drop32,
                std::deque<std::vector<uint64_t>>& drop64) {
  while ((bytes > capacity || arrays32.size() > kMaxArrays || arrays64.size() > kMaxArrays) &&
         !(arrays32.empty() && arrays64.empty())) {
    // The larger of the two oldest goes first: ages are not compared across the types.
    // Past the count, that type's.
    const bool take32 =
        arrays32.size() > kMaxArrays ||
        (arrays64.size() <= kMaxArrays &&
         (arrays64.empty() ||
          (!arrays32.empty() && bytes_of(arrays32.front()) >= bytes_of(arrays64.front()))));
    if (take32) {
      bytes -= bytes_of(arrays32.front());
      drop32.push_back(std::move(arrays32.front()));
      arrays32.pop_front();
    } else {
      bytes -= bytes_of(arrays64.front());
      drop64.push_back(std::move(arrays64.front()));
      arrays64.pop_front();
    }
  }
}

}  // namespace

template <class T>
std::vector<T> take(size_t n) {
  std::vector<T> out;
  if (n * sizeof(T) < kMinBytes) return out;
  Held& h = held_arrays();
  std::lock_guard<std::mutex> lock(h.mu);
  auto& arrays = h.arrays<T>();
  auto best = arrays.end();
  for (auto it = arrays.begin(); it != arrays.end(); ++it)
    if (it->capacity() >= n && it->capacity() / 2 <= n &&
        (best == arrays.end() || it->capacity() < best->capacity()))
      best = it;
  if (best != arrays.end()) {
    out = std::move(*best);
    arrays.erase(best);
    h.bytes -= bytes_of(out);
  }
  return out;
}

template <class T>
void give(std::vector<T>&& v) noexcept {
  std::vector<T> mine = std::move(v);
  v = {};
  if (bytes_of(mine) < kMinBytes) return;
  mine.clear();
  std::deque<std::vector<uint32_t>> drop32;  // freed outside the lock
  std::deque<std::vector<uint64_t>> drop64;
  Held& h = held_arrays();
  std::lock_guard<std::mutex> lock(h.mu);
  if (bytes_of(mine) > h.capacity) return;
  h.bytes += bytes_of(mine);
  h.arrays<T>().push_back(std::move(mine));
  h.trim(drop32, drop64);
}

template std::vector<uint32_t> take<uint32_t>(size_t);
template std::vector<uint64_t> take<uint64_t>(size_t);
template void give<uint32_t>(std::vector<uint32_t>&&) noexcept;
template void give<uint64_t>(std::vector<uint64_t>&&) noexcept;

void clear() noexcept {
  std::deque<std::vector<uint32_t>> drop32;
  std::deque<std::vector<uint64_t>> drop64;
  Held& h = held_arrays();
  std::lock_guard<std::mutex> lock(h.mu);
  drop32.swap(h.arrays32);
  drop64.swap(h.arrays64);
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
