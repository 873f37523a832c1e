// A set of 32-bit ids below a known bound as a bitmap with popcount ranks: the ids ascending and
// the rank of each member (how many members are smaller) in O(bound / 64 + members), no sort.
// How the plan layer numbers a shard's words (shard layout), a query's items (vocabulary) and a
// batch's words (batch plan): dense, in id order, which is byte order for word ids.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <vector>

#include "common/parallel.h"
#include "common/parallel_resize.h"

namespace gtadoc::plan {

class RankedIdSet {
 public:
  /// Ids in [0, bound).
  explicit RankedIdSet(uint64_t bound) : bits_((bound + 63) / 64, 0) {}

  void insert(uint32_t id) { bits_[id >> 6] |= uint64_t{1} << (id & 63); }
  /// insert, safe against other threads inserting at the same time (before rank()).
  void insert_concurrently(uint32_t id) {
    std::atomic_ref<uint64_t> word(bits_[id >> 6]);
    const uint64_t bit = uint64_t{1} << (id & 63);
    if ((word.load(std::memory_order_relaxed) & bit) == 0)
      word.fetch_or(bit, std::memory_order_relaxed);
  }

  /// Call once every id is inserted; then members() and rank_of() may be used.
  void rank() {
    rank_.assign(bits_.size() + 1, 0);
    for (size_t i = 0; i < bits_.size(); ++i)
      rank_[i + 1] = rank_[i] + static_cast<uint32_t>(std::popcount(bits_[i]));
  }
  uint32_t size() const { return rank_.back(); }
  /// The members, ascending: ranges of the bitmap on `threads` threads side by side, each
  /// written at its rank (a batch's union of tens of millions of words; 0 = every CPU).
  std::vector<uint32_t> members(unsigned threads = 1) const {
    std::vector<uint32_t> out;
    resize_in_parallel(out, size(), threads);
    const size_t parts = std::clamp<size_t>(bits_.size() / 4096, 1, 256);
    parallel_for(parts, threads, [&](size_t k) {
      const size_t lo = bits_.size() * k / parts, hi = bits_.size() * (k + 1) / parts;
      uint32_t* at = out.data() + rank_[lo];
      for_members(lo, hi, [&](uint32_t id) { *at++ = id; });
    });
    return out;
  }
  /// The rank of a member `id`.
  uint32_t rank_of(uint32_t id) const {
    const uint64_t below = bits_[id >> 6] & ((uint64_t{1} << (id & 63)) - 1);
    return rank_[id >> 6] + static_cast<uint32_t>(std::popcount(below));
  }

 private:
  /// sink(id) for every member in the bitmap's words [lo, hi), ascending.
  template <class Sink>
  void for_members(size_t lo, size_t hi, Sink&& sink) const {
    for (size_t i = lo; i < hi; ++i)
      for (uint64_t b = bits_[i]; b != 0; b &= b - 1)
        sink(static_cast<uint32_t>(i * 64 + std::countr_zero(b)));
  }

  std::vector<uint64_t> bits_;
  std::vector<uint32_t> rank_{0};
};

}  // namespace gtadoc::plan
