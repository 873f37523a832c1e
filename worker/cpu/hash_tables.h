// Compact open-addressing tables for the CPU engine's hot paths: an n-gram interning index
// (fixed-width u32 keys -> dense ids in insertion order) and per-thread u32 -> u64 accumulators
// (dense array or hash) that are drained and reset between documents. Single-threaded objects.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/error.h"

namespace gtadoc::cpu {

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/// 32-bit hash of a key of `width` u32 values; all bits are usable (low bits for slots,
/// high bits for partitions).
inline uint32_t hash_key(const uint32_t* key, uint32_t width) {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ width;
  for (uint32_t i = 0; i < width; ++i) h = (h ^ key[i]) * 0x9E3779B97F4A7C15ULL + (h >> 29);
  return static_cast<uint32_t>(mix64(h));
}

/// Partition of a 32-bit hash among `parts` owners (uses the high bits).
inline uint32_t hash_partition(uint32_t hash, uint32_t parts) {
  return static_cast<uint32_t>((static_cast<uint64_t>(hash) * parts) >> 32);
}

/// Interns fixed-width keys: each distinct key gets the next id (0, 1, ...). Keys are kept in one
/// append-only arena in id order; slots hold (hash, id + 1), so growing never touches the keys.
class NgramIndex {
 public:
  explicit NgramIndex(uint32_t width = 1) : width_(width) { reset_slots(64); }

  uint32_t width() const { return width_; }
  uint32_t size() const { return static_cast<uint32_t>(hashes_.size()); }
  const uint32_t* key(uint32_t id) const { return keys_.data() + static_cast<size_t>(id) * width_; }
  uint32_t hash(uint32_t id) const { return hashes_[id]; }
  const std::vector<uint32_t>& keys() const { return keys_; }
  const std::vector<uint32_t>& hashes() const { return hashes_; }
  size_t memory_bytes() const {
    return slots_.capacity() * 8 + keys_.capacity() * 4 + hashes_.capacity() * 4;
  }

  uint32_t insert(const uint32_t* key) { return insert(key, hash_key(key, width_)); }

  /// Id of `key` (whose hash_key is `hash`), inserting it when absent.
  uint32_t insert(const uint32_t* key, uint32_t hash) {
    if ((static_cast<uint64_t>(hashes_.size()) + 1) * 2 > slots_.size()) grow();
    const uint64_t tag = static_cast<uint64_t>(hash) << 32;
    const size_t bytes = static_cast<size_t>(width_) * 4;
    for (uint64_t i = hash & mask_;; i = (i + 1) & mask_) {
      uint64_t s = slots_[i];
      if (s == 0) {
        uint32_t id = size();
        slots_[i] = tag | (static_cast<uint64_t>(id) + 1);
        hashes_.push_back(hash);
        keys_.insert(keys_.end(), key, key + width_);
        return id;
      }
      if ((s & 0xFFFFFFFF00000000ULL) == tag) {
        uint32_t id = static_cast<uint32_t>(s) - 1;
        if (std::memcmp(keys_.data() + static_cast<size_t>(id) * width_, key, bytes) == 0)
          return id;
      }
    }
  }

  void reserve(size_t n) {
    size_t cap = 64;
    while (cap < 2 * n + 2) cap <<= 1;
    if (cap > slots_.size()) rehash(cap);
    keys_.reserve(n * width_);
    hashes_.reserve(n);
  }

 private:
  void reset_slots(size_t cap) {
    slots_.assign(cap, 0);
    mask_ = cap - 1;
  }
  void grow() {
    GTADOC_EXPECTS(hashes_.size() < 0xFFFFFFF0u, "n-gram index: more than 2^32 distinct keys");
    rehash(slots_.size() * 2);
  }
  void rehash(size_t cap) {
    std::vector<uint64_t> old;
    old.swap(slots_);
    reset_slots(cap);
    for (uint64_t s : old) {
      if (s == 0) continue;
      uint64_t i = (s >> 32) & mask_;
      while (slots_[i] != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  uint32_t width_;
  std::vector<uint64_t> slots_;
  uint64_t mask_ = 0;
  std::vector<uint32_t> keys_;
  std::vector<uint32_t> hashes_;
};

/// Sums counts per item in a dense array over [0, size); remembers touched items so a drain
/// costs O(touched), not O(size).
class DenseAccumulator {
 public:
  explicit DenseAccumulator(size_t size = 0) : values_(size, 0) {}
  void add(uint32_t item, uint64_t c) {
    uint64_t& v = values_[item];
    if (v == 0) touched_.push_back(item);
    v += c;
  }
  bool empty() const { return touched_.empty(); }
  size_t touched() const { return touched_.size(); }
  /// f(item, count) for every item with a non-zero sum, then resets.
  template <class F>
  void drain(F&& f) {
    for (uint32_t item : touched_) {
      f(item, values_[item]);
      values_[item] = 0;
    }
    touched_.clear();
  }

 private:
  std::vector<uint64_t> values_;
  std::vector<uint32_t> touched_;
};

/// The same contract as DenseAccumulator for item spaces too large to hold densely per thread:
/// open addressing (linear probing) over u32 keys, u64 sums.
class HashAccumulator {
 public:
  explicit HashAccumulator(size_t = 0) { reset(1024); }
  void add(uint32_t item, uint64_t c) {
    if ((touched_.size() + 1) * 2 > keys_.size()) grow();
    uint64_t i = mix64(item) & mask_;
    for (;; i = (i + 1) & mask_) {
      if (keys_[i] == item) break;
      if (keys_[i] == kEmpty) {
        keys_[i] = item;
        touched_.push_back(i);
        break;
      }
    }
    values_[i] += c;
  }
  bool empty() const { return touched_.empty(); }
  size_t touched() const { return touched_.size(); }
  template <class F>
  void drain(F&& f) {
    for (uint64_t s : touched_) {
      f(keys_[s], values_[s]);
      keys_[s] = kEmpty;
      values_[s] = 0;
    }
    touched_.clear();
  }

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;
  void reset(size_t cap) {
    keys_.assign(cap, kEmpty);
    values_.assign(cap, 0);
    mask_ = cap - 1;
  }
  void grow() {
    std::vector<uint32_t> ok;
    std::vector<uint64_t> ov;
    std::vector<uint64_t> ot;
    ok.swap(keys_);
    ov.swap(values_);
    ot.swap(touched_);
    reset(ok.size() * 2);
    for (uint64_t s : ot) {
      uint64_t i = mix64(ok[s]) & mask_;
      while (keys_[i] != kEmpty) i = (i + 1) & mask_;
      keys_[i] = ok[s];
      values_[i] = ov[s];
      touched_.push_back(i);
    }
  }

  std::vector<uint32_t> keys_;
  std::vector<uint64_t> values_;
  std::vector<uint64_t> touched_;
  uint64_t mask_ = 0;
};

}  // namespace gtadoc::cpu
