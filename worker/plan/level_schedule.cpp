// build_level_schedules (worker/plan/level_schedule.h).
#include "worker/plan/level_schedule.h"

#include "common/error.h"
#include "common/recycled_arrays.h"

namespace gtadoc::plan {
namespace {

/// The schedule from `body_len(r)`, the body length of inner rule r.
template <class BodyLength>
LevelSchedules build_schedules(const BodyLength& body_len, std::span<const uint32_t> level_offsets,
                               uint32_t inner) {
  GTADOC_EXPECTS(!level_offsets.empty() && level_offsets.back() == inner,
                 "level schedule: bad level offsets");
  const uint32_t inner_levels = static_cast<uint32_t>(level_offsets.size() - 1);
  LevelSchedules out;
  std::vector<uint32_t>& sched = out.sched;
  sched = recycled::take(inner);  // pages already in memory, when one is held
  sched.reserve(inner);
  out.levels.assign(inner_levels, LevelSchedule{});
  uint32_t by_len[kThreadMaxBody + 2];
  for (uint32_t h = 0; h < inner_levels; ++h) {
    const uint32_t lo = level_offsets[h], hi = level_offsets[h + 1];
    GTADOC_EXPECTS(lo <= hi && hi <= inner, "level schedule: bad level offsets");
    LevelSchedule& ls = out.levels[h];
    ls.begin = static_cast<uint32_t>(sched.size());
    // One pass counts the thread class by body length (a counting sort) and the other two
    // classes; a second places every rule: thread class by body length, then warp and block
    // classes, each in rule order.
    std::fill(std::begin(by_len), std::end(by_len), 0u);
    uint32_t warps = 0;
    for (uint32_t r = lo; r < hi; ++r) {
      const uint64_t len = body_len(r);
      if (len <= kThreadMaxBody)
        ++by_len[len + 1];
      else if (len <= kWarpMaxBody)
        ++warps;
    }
    for (uint32_t i = 0; i <= kThreadMaxBody; ++i) by_len[i + 1] += by_len[i];
    ls.threads = by_len[kThreadMaxBody + 1];
    ls.warps = warps;
    ls.blocks = (hi - lo) - ls.threads - warps;
    sched.resize(sched.size() + (hi - lo));
    uint32_t* dst = sched.data() + ls.begin;
    uint32_t warp_at = ls.threads, block_at = ls.threads + warps;
    for (uint32_t r = lo; r < hi; ++r) {
      const uint64_t len = body_len(r);
      if (len <= kThreadMaxBody)
        dst[by_len[len]++] = r;
      else if (len <= kWarpMaxBody)
        dst[warp_at++] = r;
      else
        dst[block_at++] = r;
    }
  }
  GTADOC_EXPECTS(sched.size() == inner, "level schedule: the levels do not cover the rules");
  return out;
}

}  // namespace

LevelSchedules build_level_schedules(std::span<const uint64_t> body_len,
                                     std::span<const uint32_t> level_offsets, uint32_t inner) {
  GTADOC_EXPECTS(body_len.size() >= inner, "level schedule: bad level offsets");
  return build_schedules([&](uint32_t r) { return body_len[r]; }, level_offsets, inner);
}

LevelSchedules build_level_schedules(std::span<const uint64_t> unit_begin,
                                     std::span<const uint64_t> unit_end,
                                     std::span<const uint32_t> level_offsets, uint32_t inner) {
  GTADOC_EXPECTS(unit_begin.size() >= inner && unit_end.size() >= inner,
                 "level schedule: bad level offsets");
  return build_schedules([&](uint32_t r) { return unit_end[r] - unit_begin[r]; }, level_offsets,
                         inner);
}

}  // namespace gtadoc::plan
