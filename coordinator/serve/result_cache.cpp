#include "coordinator/serve/result_cache.h"

namespace gtadoc {

std::shared_ptr<const CachedResult> ResultCache::get(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ResultCache::put(const std::string& key, std::shared_ptr<const CachedResult> body) {
  if (!body || !admits(body->body.size())) return;
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->second->body.size();
    lru_.erase(it->second);
    index_.erase(it);
  }
  const uint64_t size = body->body.size();
  while (!lru_.empty() && bytes_ + size > capacity_) {
    bytes_ -= lru_.back().second->body.size();
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(key, std::move(body));
  index_[key] = lru_.begin();
  bytes_ += size;
}

uint64_t ResultCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

uint64_t ResultCache::entries() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace gtadoc
