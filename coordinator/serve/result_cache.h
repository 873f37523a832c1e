// The service's result cache: complete response bodies keyed by the normalized query
// (query_key), least recently used first out, bounded by the bytes it holds. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/big_alloc.h"

namespace gtadoc {

/// A complete response: its body and how many rows it holds. The body is one allocation on
/// huge pages (results reach gigabytes: a growing string copied each one several times and
/// faulted in 4 KiB pages, at 0.25 GB/s on a VM).
struct CachedResult {
  UninitVector<char> body;
  uint64_t rows = 0;
  std::string_view view() const { return {body.data(), body.size()}; }
};

class ResultCache {
 public:
  /// `capacity_bytes` = 0 disables the cache. Entries larger than `max_entry_bytes` are not kept.
  ResultCache(uint64_t capacity_bytes, uint64_t max_entry_bytes)
      : capacity_(capacity_bytes), max_entry_(max_entry_bytes) {}

  /// The body cached for `key` (now the most recently used), or null.
  std::shared_ptr<const CachedResult> get(const std::string& key);
  /// Caches `body` for `key`, evicting the least recently used entries to make room.
  void put(const std::string& key, std::shared_ptr<const CachedResult> body);
  /// Whether a body of this size would be kept (so the writer knows whether to keep a copy).
  bool admits(uint64_t bytes) const { return capacity_ > 0 && bytes <= max_entry_; }

  uint64_t bytes() const;
  uint64_t entries() const;
  uint64_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CachedResult>>;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  ///< front = most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t capacity_, max_entry_, bytes_ = 0;
};

}  // namespace gtadoc
