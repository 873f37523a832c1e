// Compact open-addressing tables for the CPU engine's hot paths: an n-gram table (fixed-width
// u32 keys -> dense ids in insertion order, optional u64 sums), a process-wide stock that keeps
// n-gram tables' memory from one shard's pass to the next, and per-thread u32 -> u64
// accumulators (dense array or hash) drained and reset between documents. Each table is
// single-threaded; the stock is thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/hash.h"

namespace gtadoc::cpu {


/// 32-bit hash of a key of `width` u32 values; all bits are usable (low bits for slots,
/// high bits for partitions).
inline uint32_t hash_key(const uint32_t* key, uint32_t width) {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ width;
  for (uint32_t i = 0; i < width; ++i) h = (h ^ key[i]) * 0x9E3779B97F4A7C15ULL + (h >> 29);
  return static_cast<uint32_t>(::gtadoc::mix64(h));
}

/// Partition of a 32-bit hash among `parts` owners (uses the high bits).
inline uint32_t hash_partition(uint32_t hash, uint32_t parts) {
  return static_cast<uint32_t>((static_cast<uint64_t>(hash) * parts) >> 32);
}

/// Interns fixed-width keys: each distinct key gets the next id (0, 1, ...), and optionally sums
/// a u64 count per key. Open addressing with linear probing; a slot holds everything inline
/// (hash, id + 1, key, count) so a lookup touches one place. Iteration is in slot order.
class NgramTable {
 public:
  explicit NgramTable(uint32_t width = 1, bool counted = false)
      : width_(width), stride_(2 + width + (counted ? 2 : 0)), counted_(counted) {
    rehash(64);
  }

  uint32_t width() const { return width_; }
  uint32_t size() const { return size_; }
  size_t memory_bytes() const { return slots_.capacity() * 4; }

  /// Empties the table for keys of `width` (counted or not), keeping its memory: as many slots
  /// as that memory holds (a power of two, at least 64), zeroed without a fresh allocation.
  void reset(uint32_t width, bool counted) {
    width_ = width;
    counted_ = counted;
    stride_ = 2 + width + (counted ? 2 : 0);
    uint64_t cap = 64;
    while (cap * 2 * stride_ <= slots_.capacity()) cap *= 2;
    slots_.assign(cap * stride_, 0);  // within the capacity: no reallocation
    mask_ = cap - 1;
    size_ = 0;
  }

  /// Id of `key` (whose hash_key is `hash`), inserting it when absent.
  uint32_t insert(const uint32_t* key, uint32_t hash) { return find_or_insert(key, hash)[1] - 1; }
  uint32_t insert(const uint32_t* key) { return insert(key, hash_key(key, width_)); }
  /// Starts loading the slot where `hash`'s probe begins, ahead of its insert (an insert that
  /// grows the table meanwhile only makes the hint useless).
  void prefetch(uint32_t hash) const {
    __builtin_prefetch(slots_.data() + (hash & mask_) * stride_, 1);
  }

  /// Adds c to the count of `key` (inserting it with count c when absent). Counted tables only.
  void add(const uint32_t* key, uint32_t hash, uint64_t c) {
    uint32_t* s = find_or_insert(key, hash);
    uint64_t v;
    std::memcpy(&v, s + 2 + width_, 8);
    v += c;
    std::memcpy(s + 2 + width_, &v, 8);
  }

  /// f(id, hash, key, count) for every key (count is 0 in uncounted tables), in slot order.
  template <class F>
  void for_each(F&& f) const {
    const uint32_t* s = slots_.data();
    for (uint64_t i = 0; i <= mask_; ++i, s += stride_) {
      if (s[1] == 0) continue;
      uint64_t c = 0;
      if (counted_) std::memcpy(&c, s + 2 + width_, 8);
      f(s[1] - 1, s[0], s + 2, c);
    }
  }

 private:
  uint32_t* find_or_insert(const uint32_t* key, uint32_t hash) {
    if ((static_cast<uint64_t>(size_) + 1) * 5 > (mask_ + 1) * 3) grow();  // load <= 0.6
    for (uint64_t i = hash & mask_;; i = (i + 1) & mask_) {
      uint32_t* s = slots_.data() + i * stride_;
      if (s[1] == 0) {
        s[0] = hash;
        s[1] = ++size_;
        for (uint32_t j = 0; j < width_; ++j) s[2 + j] = key[j];
        return s;
      }
      if (s[0] == hash) {
        uint32_t j = 0;
        while (j < width_ && s[2 + j] == key[j]) ++j;
        if (j == width_) return s;
      }
    }
  }
  void grow() {
    GTADOC_EXPECTS(size_ < 0xFFFFFFF0u, "n-gram table: more than 2^32 distinct keys");
    rehash((mask_ + 1) * 2);
  }
  void rehash(uint64_t cap) {
    std::vector<uint32_t> old;
    old.swap(slots_);
    slots_.assign(cap * stride_, 0);
    mask_ = cap - 1;
    for (size_t o = 0; o < old.size(); o += stride_) {
      if (old[o + 1] == 0) continue;
      uint64_t i = old[o] & mask_;
      while (slots_[i * stride_ + 1] != 0) i = (i + 1) & mask_;
      std::copy_n(old.begin() + o, stride_, slots_.begin() + i * stride_);
    }
  }

  uint32_t width_, stride_;
  bool counted_;
  uint32_t size_ = 0;
  uint64_t mask_ = 0;
  std::vector<uint32_t> slots_;
};

/// NgramTables kept between the queries of a process (a batch's shards, one after another), so
/// shard after shard
/// does not grow a table from 64 slots again, zero-filling and faulting in fresh memory at each
/// doubling: take() hands out the largest table kept, emptied with its memory kept, or a new
/// one. give() keeps tables while they hold at most kKeepBytes in all; the rest are freed.
/// Thread-safe.
class NgramTableStock {
 public:
  static constexpr uint64_t kKeepBytes = uint64_t{512} << 20;
  static NgramTable take(uint32_t width, bool counted);
  static void give(NgramTable&& table) noexcept;
};

/// Applies `op(key, hash, tag)` (an insert or add into `table`) to keys a few behind their
/// arrival, each key's first slot prefetched when it arrives, so that the cache misses of several
/// probes overlap (most of a probe into a table of millions of keys is its miss). put() may apply
/// op to an earlier key; flush() to the rest. Each key must stay where it is until then.
template <class Op>
class PrefetchedProbes {
 public:
  static constexpr uint32_t kAhead = 8;
  PrefetchedProbes(const NgramTable& table, Op op) : table_(table), op_(std::move(op)) {}
  void put(const uint32_t* key, uint32_t hash, uint64_t tag) {
    table_.prefetch(hash);
    if (count_ == kAhead) pop();
    ring_[(head_ + count_) % kAhead] = {key, tag, hash};
    ++count_;
  }
  void flush() {
    while (count_ != 0) pop();
  }

 private:
  struct Pending {
    const uint32_t* key;
    uint64_t tag;
    uint32_t hash;
  };
  void pop() {
    const Pending& p = ring_[head_];
    op_(p.key, p.hash, p.tag);
    head_ = (head_ + 1) % kAhead;
    --count_;
  }
  const NgramTable& table_;
  Op op_;
  Pending ring_[kAhead];
  uint32_t head_ = 0, count_ = 0;
};

/// Tables taken from the stock for one pass, given back when it ends (also on an exception).
class StockTables {
 public:
  StockTables(size_t count, uint32_t width, bool counted) {
    tables_.reserve(count);
    for (size_t i = 0; i < count; ++i) tables_.push_back(NgramTableStock::take(width, counted));
  }
  ~StockTables() {
    for (NgramTable& t : tables_) NgramTableStock::give(std::move(t));
  }
  StockTables(const StockTables&) = delete;
  StockTables& operator=(const StockTables&) = delete;
  NgramTable& operator[](size_t i) { return tables_[i]; }
  const NgramTable& operator[](size_t i) const { return tables_[i]; }

 private:
  std::vector<NgramTable> tables_;
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
  /// Starts loading `item`'s sum ahead of its add().
  void prefetch(uint32_t item) const { __builtin_prefetch(values_.data() + item, 1); }
  bool empty() const { return touched_.empty(); }
  size_t touched() const { return touched_.size(); }
  /// f(item, count) for every item with a non-zero sum, then resets. ahead(item) is called for
  /// the item kDrainAhead places further, with its sum prefetched (what f reads next can be).
  template <class F, class Ahead>
  void drain(F&& f, Ahead&& ahead) {
    const size_t n = touched_.size();
    for (size_t i = 0; i < n; ++i) {
      if (i + kDrainAhead < n) {
        prefetch(touched_[i + kDrainAhead]);
        ahead(touched_[i + kDrainAhead]);
      }
      const uint32_t item = touched_[i];
      f(item, values_[item]);
      values_[item] = 0;
    }
    touched_.clear();
  }
  template <class F>
  void drain(F&& f) {
    drain(f, [](uint32_t) {});
  }
  static constexpr size_t kDrainAhead = 8;

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
    uint64_t i = ::gtadoc::mix64(item) & mask_;
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
  /// Starts loading the slot where `item`'s probe begins, ahead of its add().
  void prefetch(uint32_t item) const {
    __builtin_prefetch(keys_.data() + (::gtadoc::mix64(item) & mask_), 1);
  }
  bool empty() const { return touched_.empty(); }
  size_t touched() const { return touched_.size(); }
  /// As DenseAccumulator::drain.
  template <class F, class Ahead>
  void drain(F&& f, Ahead&& ahead) {
    const size_t n = touched_.size();
    for (size_t i = 0; i < n; ++i) {
      if (i + kDrainAhead < n) ahead(keys_[touched_[i + kDrainAhead]]);
      const uint64_t s = touched_[i];
      f(keys_[s], values_[s]);
      keys_[s] = kEmpty;
      values_[s] = 0;
    }
    touched_.clear();
  }
  template <class F>
  void drain(F&& f) {
    drain(f, [](uint32_t) {});
  }
  static constexpr size_t kDrainAhead = 8;

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
      uint64_t i = ::gtadoc::mix64(ok[s]) & mask_;
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
