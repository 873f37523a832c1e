// merge_row_runs (cluster/rows/rank_rows.h): the merge of count-ordered runs that the row
// exchange receives, against one sort of all the rows, for 1-5 runs (some empty), sizes on both
// sides of the parallel threshold, many equal counts (ties broken by the key), and 1-8 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "cluster/rows/rank_rows.h"

namespace gtadoc {
namespace {

TEST(MergeRowRuns, EqualsOneSortOfAllRows) {
  std::mt19937_64 rng(11);
  const CountKeyLess less{nullptr};
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{1000}, uint64_t{200000}}) {
    for (size_t parts : {size_t{1}, size_t{2}, size_t{5}}) {
      // Distinct keys, counts from a small range so that ties are common.
      std::vector<uint32_t> keys(n);
      std::iota(keys.begin(), keys.end(), 7u);
      std::shuffle(keys.begin(), keys.end(), rng);
      std::vector<uint64_t> counts(n);
      for (auto& c : counts) c = 1 + rng() % 50;
      // Rows dealt to runs at random (one run left empty when there are several), each sorted.
      std::vector<std::vector<uint64_t>> runs(parts);
      for (uint64_t i = 0; i < n; ++i)
        runs[parts > 2 ? rng() % (parts - 1) : rng() % parts].push_back(i);
      RecordBatch r;
      std::vector<size_t> sizes;
      for (auto& run : runs) {
        std::sort(run.begin(), run.end(), [&](uint64_t a, uint64_t b) {
          return less(counts[a], &keys[a], counts[b], &keys[b]);
        });
        for (uint64_t i : run) r.push({&keys[i], 1}, counts[i]);
        sizes.push_back(run.size());
      }
      std::vector<uint64_t> want(n);
      std::iota(want.begin(), want.end(), uint64_t{0});
      std::sort(want.begin(), want.end(), [&](uint64_t a, uint64_t b) {
        return less(r.counts[a], r.keys.data() + a, r.counts[b], r.keys.data() + b);
      });
      for (unsigned threads : {1u, 3u, 8u}) {
        SCOPED_TRACE(testing::Message()
                     << "n " << n << " runs " << parts << " threads " << threads);
        const RowPlan plan = merge_row_runs(r, sizes, less, threads);
        ASSERT_EQ(plan.rows(), n);
        for (uint64_t k = 0; k < n; ++k) ASSERT_EQ(plan.record_at(k), want[k]) << "row " << k;
      }
    }
  }
}

}  // namespace
}  // namespace gtadoc
