// The static schedule of a DAG's inner rules for per-level kernels: each height level's rules
// grouped by workload class (body length), built on the host. The GPU engine launches one kernel
// per class and level from it; building it belongs to a shard's preparation (no device needed),
// so a load only uploads it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gtadoc::plan {

/// Workload classes by body length (symbols): one thread per rule up to kThreadMaxBody, one warp
/// per rule up to kWarpMaxBody, one block per rule above.
inline constexpr uint32_t kThreadMaxBody = 32;
inline constexpr uint32_t kWarpMaxBody = 1024;

/// Rules of one height level grouped by workload class: sched[begin, begin + threads) are the
/// thread-class rules (sorted by body length so neighbouring lanes do similar work), then
/// `warps` warp-class rules, then `blocks` block-class rules.
struct LevelSchedule {
  uint32_t begin = 0;
  uint32_t threads = 0, warps = 0, blocks = 0;
};

struct LevelSchedules {
  std::vector<uint32_t> sched;        ///< every inner rule once, level by level, class by class
  std::vector<LevelSchedule> levels;  ///< one per inner level, by height
};

/// The schedule of the inner rules [0, inner) from their body lengths (`body_len[r]`, at least
/// `inner` entries) and the inner levels' offsets (`level_offsets`: H + 1 ascending entries, the
/// last = inner). Throws InternalError on offsets that do not cover [0, inner). `sched` comes
/// from handed-back memory where it is held (common/recycled_arrays.h). Levels of millions of
/// rules (a batch's merged levels) are sorted on up to `threads` threads (0: every CPU).
LevelSchedules build_level_schedules(std::span<const uint64_t> body_len,
                                     std::span<const uint32_t> level_offsets, uint32_t inner,
                                     unsigned threads = 1);
/// The same from the rules' body ranges: body_len[r] = unit_end[r] - unit_begin[r].
LevelSchedules build_level_schedules(std::span<const uint64_t> unit_begin,
                                     std::span<const uint64_t> unit_end,
                                     std::span<const uint32_t> level_offsets, uint32_t inner);

}  // namespace gtadoc::plan
