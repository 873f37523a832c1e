// Which rank works on which shard: longest-processing-time-first over shard sizes, so ranks get
// balanced bytes. Deterministic: every rank computes the same assignment from the same sizes.
#pragma once

#include <cstdint>
#include <vector>

namespace gtadoc {

/// result[r] lists the shard indexes of rank r, ascending.
std::vector<std::vector<uint32_t>> assign_by_size(const std::vector<uint64_t>& sizes, int ranks);

}  // namespace gtadoc
