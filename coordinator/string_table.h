// An insert-only hash set of byte strings that hands out dense ids in first-seen order, with
// the bytes kept in one arena. Used to build per-shard vocabularies fast (the compress hot path).
// Its arrays grow on transparent huge pages once large (common/big_alloc.h): on 4 KiB pages the
// first touch of every page was a quarter of compression's page faults.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/big_alloc.h"

namespace gtadoc {

class StringTable {
 public:
  explicit StringTable(size_t expected = 1024) { rehash(capacity_for(expected)); }

  /// Returns the id of `s`, inserting it if new.
  uint32_t intern(std::string_view s) { return intern(s, hash(s)); }

  /// Starts loading the slot a string with hash `h` probes first (a few words before it is
  /// looked up).
  void prefetch(uint64_t h) const { __builtin_prefetch(&slots_[h & mask_]); }

  /// intern() with the hash already computed (must equal hash(s)).
  uint32_t intern(std::string_view s, uint64_t h) {
    uint64_t head = head_of(s);
    const size_t mask = mask_;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.id == kEmpty) {
        uint32_t id = static_cast<uint32_t>(offsets_.size() - 1);
        arena_.insert(arena_.end(), s.begin(), s.end());
        offsets_.push_back(arena_.size());
        hashes_.push_back(h);
        slot = {h, head, id, static_cast<uint32_t>(s.size())};
        if (++count_ * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
        return id;
      }
      // Words of up to 8 bytes are decided by the slot alone (no trip to the arena).
      if (slot.hash == h && slot.length == s.size() && slot.head == head &&
          (s.size() <= 8 || get(slot.id) == s))
        return slot.id;
    }
  }

  uint32_t size() const { return static_cast<uint32_t>(offsets_.size() - 1); }
  std::string_view get(uint32_t id) const {
    return {arena_.data() + offsets_[id], static_cast<size_t>(offsets_[id + 1] - offsets_[id])};
  }
  /// hash() of string `id`, as interned (kept, so that its words are not hashed again).
  uint64_t hash_of(uint32_t id) const { return hashes_[id]; }
  /// Bytes the table holds: slots, word bytes, offsets and hashes (capacities).
  size_t memory_bytes() const {
    return slots_.capacity() * sizeof(Slot) + arena_.capacity() +
           (offsets_.capacity() + hashes_.capacity()) * sizeof(uint64_t);
  }

  /// Well-mixed 64-bit hash of a byte string (8 bytes per step).
  static uint64_t hash(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xD6E8FEB86659FD93ull);
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {  // one multiply per block, full mix at the end
      uint64_t v;
      std::memcpy(&v, s.data() + i, 8);
      h = ((h ^ v) * 0x9FB21C651E98DF25ull);
      h ^= h >> 29;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    return mix(h ^ tail ^ (uint64_t{s.size() - i} << 59));
  }

 private:
  struct Slot {
    uint64_t hash;
    uint64_t head;  ///< first 8 bytes, zero padded
    uint32_t id;
    uint32_t length;
  };
  static uint64_t head_of(std::string_view s) {
    uint64_t v = 0;
    std::memcpy(&v, s.data(), s.size() < 8 ? s.size() : 8);
    return v;
  }
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;
  static uint64_t mix(uint64_t x) {
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    return x ^ (x >> 32);
  }
  static size_t capacity_for(size_t n) {
    size_t c = 16;
    while (c * 3 < n * 4) c *= 2;
    return c;
  }
  void rehash(size_t capacity) {
    BigVector<Slot> old(capacity, Slot{0, 0, kEmpty, 0});
    old.swap(slots_);
    const size_t mask = mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (s.id == kEmpty) continue;
      size_t i = s.hash & mask;
      while (slots_[i].id != kEmpty) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  BigVector<Slot> slots_;
  BigVector<char> arena_;
  BigVector<uint64_t> offsets_{0};
  BigVector<uint64_t> hashes_;  ///< hash of each string, by id
  size_t mask_ = 0;  ///< slots_.size() - 1 (kept: the size of 24-byte slots costs a division)
  size_t count_ = 0;
};

}  // namespace gtadoc
