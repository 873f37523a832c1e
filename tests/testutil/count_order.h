// What DeviceRecords::order_by_count (worker/device_records.h) makes of reduced records,
// computed the plain way on the host: the reference for the GPU test and for the host plan of
// records the GPU ordered (plan_ordered_rows).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "worker/records.h"

namespace gtadoc::testutil {

/// `r` sorted by key with unique keys; stably by count descending within runs of equal first
/// `group` key values, then the first `keep_first` (0 = all).
inline RecordBatch order_by_count(const RecordBatch& r, uint32_t group, uint64_t keep_first) {
  std::vector<size_t> idx(r.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  const uint32_t w = r.width;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const uint32_t* ka = r.keys.data() + a * w;
    const uint32_t* kb = r.keys.data() + b * w;
    if (!std::equal(ka, ka + group, kb))
      return std::lexicographical_compare(ka, ka + group, kb, kb + group);
    return r.counts[a] > r.counts[b];
  });
  if (keep_first > 0 && idx.size() > keep_first) idx.resize(keep_first);
  RecordBatch out;
  out.width = w;
  for (size_t i : idx) out.push(r.key(i), r.counts[i]);
  return out;
}

}  // namespace gtadoc::testutil
