#include "coordinator/serve/connection_table.h"

#include <tuple>

namespace gtadoc {

void ConnectionTable::remove(std::unordered_map<uint64_t, Entry>::iterator it) {
  auto a = per_address_.find(it->second.address);
  if (a != per_address_.end() && --a->second == 0) per_address_.erase(a);
  entries_.erase(it);
}

uint64_t ConnectionTable::admit(const std::string& address, std::function<void()> cut) {
  std::function<void()> victim_cut;
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    if (entries_.size() >= capacity_) {
      // The victim: reading before writing, then the busiest address, then the longest in its
      // phase (oldest `since`).
      auto victim = entries_.end();
      std::tuple<int, size_t> best{-1, 0};
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        const Entry& e = it->second;
        if (e.phase == Phase::kQuery) continue;
        const std::tuple<int, size_t> rank{e.phase == Phase::kReading ? 1 : 0,
                                           per_address_[e.address]};
        if (victim == entries_.end() || rank > best ||
            (rank == best && e.since < victim->second.since)) {
          victim = it;
          best = rank;
        }
      }
      if (victim == entries_.end()) return 0;
      victim_cut = std::move(victim->second.cut);
      remove(victim);
      ++evicted_;
    }
    id = next_id_++;
    Entry e;
    e.address = address;
    e.since = std::chrono::steady_clock::now();
    e.cut = std::move(cut);
    entries_.emplace(id, std::move(e));
    ++per_address_[address];
  }
  if (victim_cut) victim_cut();
  return id;
}

void ConnectionTable::set_phase(uint64_t id, Phase phase) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;  // already cut
  it->second.phase = phase;
  it->second.since = std::chrono::steady_clock::now();
}

void ConnectionTable::leave(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) remove(it);
}

size_t ConnectionTable::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

uint64_t ConnectionTable::evicted() const {
  std::lock_guard lock(mu_);
  return evicted_;
}

}  // namespace gtadoc
