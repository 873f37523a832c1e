// build_level_schedules (worker/plan/level_schedule.h).
#include "worker/plan/level_schedule.h"

#include <algorithm>
#include <array>

#include "common/error.h"
#include "common/parallel.h"
#include "common/parallel_resize.h"
#include "common/recycled_arrays.h"

namespace gtadoc::plan {
namespace {

/// A rule's place in its level's order: thread-class rules by body length (keys 0..kThreadMaxBody),
/// then the warp class, then the block class.
constexpr uint32_t kWarpKey = kThreadMaxBody + 1, kBlockKey = kThreadMaxBody + 2;
constexpr uint32_t kKeys = kThreadMaxBody + 3;

inline uint32_t class_key(uint64_t len) {
  return len <= kThreadMaxBody ? static_cast<uint32_t>(len)
         : len <= kWarpMaxBody ? kWarpKey
                               : kBlockKey;
}

/// Rules per part of a level sorted on several threads; smaller levels are sorted on one.
constexpr uint32_t kPartRules = uint32_t{1} << 18;

/// The schedule from `body_len(r)`, the body length of inner rule r. Each level is a stable
/// counting sort by class_key: one pass counts the keys, a second places every rule. A level of
/// millions of rules (a batch's merged levels) is cut into parts, counted and placed side by side:
/// part p's rules of key k go after every earlier part's rules of key k.
template <class BodyLength>
LevelSchedules build_schedules(const BodyLength& body_len, std::span<const uint32_t> level_offsets,
                               uint32_t inner, unsigned threads) {
  GTADOC_EXPECTS(
      !level_offsets.empty() && level_offsets.front() == 0 && level_offsets.back() == inner,
      "level schedule: bad level offsets");
  const uint32_t inner_levels = static_cast<uint32_t>(level_offsets.size() - 1);
  LevelSchedules out;
  std::vector<uint32_t>& sched = out.sched;
  threads = resolve_threads(threads);
  sched = recycled::take(inner);  // pages already in memory, when one is held
  resize_in_parallel(sched, inner, threads);
  out.levels.assign(inner_levels, LevelSchedule{});
  std::vector<std::array<uint32_t, kKeys>> at;  // per part: counts, then where its keys go
  for (uint32_t h = 0; h < inner_levels; ++h) {
    const uint32_t lo = level_offsets[h], hi = level_offsets[h + 1];
    GTADOC_EXPECTS(lo <= hi && hi <= inner, "level schedule: bad level offsets");
    const uint32_t n = hi - lo;
    const uint32_t parts = threads <= 1 ? 1 : std::max(1u, std::min(threads * 4, n / kPartRules));
    auto part_range = [&](uint32_t p) {
      return std::pair<uint32_t, uint32_t>{
          lo + static_cast<uint32_t>(uint64_t{n} * p / parts),
          lo + static_cast<uint32_t>(uint64_t{n} * (p + 1) / parts)};
    };
    at.assign(parts, {});
    auto count = [&](uint32_t p) {
      const auto [b, e] = part_range(p);
      std::array<uint32_t, kKeys> c{};
      for (uint32_t r = b; r < e; ++r) ++c[class_key(body_len(r))];
      at[p] = c;
    };
    LevelSchedule& ls = out.levels[h];
    ls.begin = lo;
    uint32_t next = lo;  // the levels are consecutive, so level h's rules go to [lo, hi)
    std::array<uint32_t, kKeys> total{};
    parallel_for(parts, threads, count);  // one part: a call on this thread
    for (uint32_t k = 0; k < kKeys; ++k)
      for (uint32_t p = 0; p < parts; ++p) {
        const uint32_t c = at[p][k];
        total[k] += c;
        at[p][k] = next;
        next += c;
      }
    for (uint32_t k = 0; k <= kThreadMaxBody; ++k) ls.threads += total[k];
    ls.warps = total[kWarpKey];
    ls.blocks = total[kBlockKey];
    auto place = [&](uint32_t p) {
      const auto [b, e] = part_range(p);
      std::array<uint32_t, kKeys> pos = at[p];
      for (uint32_t r = b; r < e; ++r) sched[pos[class_key(body_len(r))]++] = r;
    };
    parallel_for(parts, threads, place);
  }
  return out;
}

}  // namespace

LevelSchedules build_level_schedules(std::span<const uint64_t> body_len,
                                     std::span<const uint32_t> level_offsets, uint32_t inner,
                                     unsigned threads) {
  GTADOC_EXPECTS(body_len.size() >= inner, "level schedule: bad level offsets");
  return build_schedules([&](uint32_t r) { return body_len[r]; }, level_offsets, inner, threads);
}

LevelSchedules build_level_schedules(std::span<const uint64_t> unit_begin,
                                     std::span<const uint64_t> unit_end,
                                     std::span<const uint32_t> level_offsets, uint32_t inner) {
  GTADOC_EXPECTS(unit_begin.size() >= inner && unit_end.size() >= inner,
                 "level schedule: bad level offsets");
  return build_schedules([&](uint32_t r) { return unit_end[r] - unit_begin[r]; }, level_offsets,
                         inner, 1);
}

}  // namespace gtadoc::plan
