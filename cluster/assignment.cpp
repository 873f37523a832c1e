#include "cluster/assignment.h"

#include <algorithm>
#include <numeric>

namespace gtadoc {

std::vector<std::vector<uint32_t>> assign_by_size(const std::vector<uint64_t>& sizes, int ranks) {
  std::vector<uint32_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return sizes[a] > sizes[b]; });
  std::vector<uint64_t> load(static_cast<size_t>(ranks), 0);
  std::vector<std::vector<uint32_t>> out(static_cast<size_t>(ranks));
  for (uint32_t s : order) {
    size_t r = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[r] += sizes[s] + 1;  // +1: empty shards still spread out
    out[r].push_back(s);
  }
  for (auto& v : out) std::sort(v.begin(), v.end());
  return out;
}

}  // namespace gtadoc
