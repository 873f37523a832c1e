// NgramTableStock (worker/cpu/hash_tables.h).
#include "worker/cpu/hash_tables.h"

#include <algorithm>
#include <mutex>

namespace gtadoc::cpu {
namespace {

struct Stock {
  std::mutex mu;
  std::vector<NgramTable> tables;
  uint64_t bytes = 0;
};

Stock& stock() {
  static auto* s = new Stock();  // never destroyed: tables may be given back during exit
  return *s;
}

}  // namespace

NgramTable NgramTableStock::take(uint32_t width, bool counted) {
  Stock& s = stock();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.tables.empty()) {
      // The largest table: a pass's tables grow to about the same size shard after shard.
      auto it = std::max_element(s.tables.begin(), s.tables.end(),
                                 [](const NgramTable& a, const NgramTable& b) {
                                   return a.memory_bytes() < b.memory_bytes();
                                 });
      NgramTable t = std::move(*it);
      s.tables.erase(it);
      s.bytes -= t.memory_bytes();
      t.reset(width, counted);
      return t;
    }
  }
  return NgramTable(width, counted);
}

void NgramTableStock::give(NgramTable&& table) noexcept {
  Stock& s = stock();
  const uint64_t bytes = table.memory_bytes();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.bytes + bytes > kKeepBytes) return;  // freed when `table`'s owner goes
  try {
    s.tables.push_back(std::move(table));
    s.bytes += bytes;
  } catch (...) {
  }
}

}  // namespace gtadoc::cpu
