// Load-time precomputation of the CPU engine: the plan layer's shard layout (worker/plan/
// shard_layout.h) plus parent lists. Done once per shard, reused by every query.
#include <algorithm>

#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {

CpuShard::CpuShard(const ShardGrammar& grammar, const Exec& ex)
    : plan::ShardLayout(plan::build_shard_layout(grammar, ex)), g(grammar) {
  // Parent lists (inner parents) of every inner rule.
  parents.off.assign(static_cast<size_t>(num_inner) + 1, 0);
  for (uint32_t p = 0; p < num_inner; ++p)
    for (uint64_t i = children.off[p]; i < children.off[p + 1]; ++i)
      ++parents.off[children.item[i] + 1];
  for (uint32_t r = 0; r < num_inner; ++r) parents.off[r + 1] += parents.off[r];
  parents.item.resize(parents.off[num_inner]);
  parents.cnt.resize(parents.off[num_inner]);
  std::vector<uint64_t> fill(parents.off.begin(), parents.off.end() - 1);
  for (uint32_t p = 0; p < num_inner; ++p)
    for (uint64_t i = children.off[p]; i < children.off[p + 1]; ++i) {
      const uint64_t at = fill[children.item[i]]++;
      parents.item[at] = p;
      parents.cnt[at] = children.cnt[i];
    }
}

RecordBatch concat_batches(std::vector<RecordBatch>& parts, uint32_t width) {
  RecordBatch out;
  out.width = width;
  size_t n = 0;
  for (const auto& p : parts) n += p.size();
  if (parts.size() == 1) {
    out = std::move(parts[0]);
    out.width = width;
    return out;
  }
  out.keys.reserve(n * width);
  out.counts.reserve(n);
  for (auto& p : parts) {
    out.append(p);
    p = RecordBatch();
  }
  return out;
}

}  // namespace gtadoc::cpu
