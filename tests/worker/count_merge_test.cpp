// CountMerge (worker/count_merge.h) against a std::map reference: keys at the ends of u32 and on
// both sides of block boundaries, duplicate keys within a run, counts of 0 and near 2^64, spans
// of one key to many blocks; when counting pays; and the callers that use it (merge_increasing,
// reduce_records on sorted runs of word ids) on inputs where it does.
#include "worker/count_merge.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "cluster/reduce.h"
#include "worker/records.h"

namespace gtadoc {
namespace {

struct KeyRun {
  std::vector<uint32_t> keys;
  std::vector<uint64_t> counts;
};

// Runs of `n` records each, keys in [lo, lo + span) sorted (duplicates allowed when `dups`).
std::vector<KeyRun> random_runs(std::mt19937_64& rng, size_t runs, size_t n, uint32_t lo,
                                uint64_t span, bool dups) {
  std::vector<KeyRun> out(runs);
  for (KeyRun& r : out) {
    for (size_t i = 0; i < n; ++i) r.keys.push_back(static_cast<uint32_t>(lo + rng() % span));
    std::sort(r.keys.begin(), r.keys.end());
    if (!dups) r.keys.erase(std::unique(r.keys.begin(), r.keys.end()), r.keys.end());
    for (size_t i = 0; i < r.keys.size(); ++i) r.counts.push_back(rng() % 3 == 0 ? 0 : rng());
  }
  return out;
}

std::map<uint32_t, uint64_t> sums(const std::vector<KeyRun>& runs) {
  std::map<uint32_t, uint64_t> want;
  for (const KeyRun& r : runs)
    for (size_t i = 0; i < r.keys.size(); ++i) want[r.keys[i]] += r.counts[i];
  return want;
}

std::vector<std::pair<uint32_t, uint64_t>> counted(const std::vector<KeyRun>& in) {
  std::vector<CountRun> runs;
  for (const KeyRun& r : in) runs.push_back({r.keys.data(), r.counts.data(), r.keys.size()});
  const auto [lo, hi] = CountMerge::span_of(runs);
  std::vector<std::pair<uint32_t, uint64_t>> got;
  if (lo <= hi)
    CountMerge::merge(runs, lo, hi, [&](uint32_t k, uint64_t c) { got.push_back({k, c}); });
  return got;
}

void expect_sums(const std::vector<std::pair<uint32_t, uint64_t>>& got,
                 const std::map<uint32_t, uint64_t>& want) {
  ASSERT_EQ(got.size(), want.size());
  size_t i = 0;
  for (const auto& [k, c] : want) {
    ASSERT_EQ(got[i].first, k) << "at " << i;
    ASSERT_EQ(got[i].second, c) << "key " << k;
    ++i;
  }
}

TEST(CountMerge, MatchesMapAcrossBlocksExtremesAndDuplicates) {
  std::mt19937_64 rng(11);
  const uint64_t block = CountMerge::kBlock;
  struct Case {
    uint32_t lo;
    uint64_t span;
  };
  const Case cases[] = {
      {0, 1},                                   // one key
      {0, 64},                                  // one bitmap word
      {static_cast<uint32_t>(block - 40), 80},  // across the first block boundary
      {123, 5 * block + 17},                    // many blocks, ragged end
      {UINT32_MAX - 200, 201},                  // up to the largest key
      {static_cast<uint32_t>(UINT32_MAX - 3 * block), 3 * block + 1},
  };
  for (const Case& c : cases) {
    for (size_t k : {1u, 2u, 5u, 33u}) {
      for (bool dups : {false, true}) {
        SCOPED_TRACE("lo " + std::to_string(c.lo) + " span " + std::to_string(c.span) + " runs " +
                     std::to_string(k) + (dups ? " dups" : ""));
        const std::vector<KeyRun> runs = random_runs(rng, k, 3000, c.lo, c.span, dups);
        expect_sums(counted(runs), sums(runs));
      }
    }
  }
  // Empty runs among full ones, and the scratch left clean for the next call on this thread.
  std::vector<KeyRun> runs = random_runs(rng, 4, 500, 7, 1000, false);
  runs.insert(runs.begin() + 2, KeyRun{});
  expect_sums(counted(runs), sums(runs));
  expect_sums(counted(runs), sums(runs));
}

TEST(CountMerge, PaysOnlyWhereTheSpanIsSmallNextToTheRecords) {
  EXPECT_FALSE(CountMerge::pays(1000, 1, 0, 10));          // one run: nothing to merge
  EXPECT_TRUE(CountMerge::pays(1000, 4, 0, 999));          // dense
  EXPECT_TRUE(CountMerge::pays(1000, 16, 0, 60000));       // 1.6 % of the span
  EXPECT_FALSE(CountMerge::pays(1000, 16, 0, 1000000));    // sparse
  EXPECT_FALSE(CountMerge::pays(1000, 4, 0, UINT32_MAX));  // ids spread over all 32 bits
  EXPECT_FALSE(CountMerge::pays(10, 2, 5, 4));             // no keys
}

// The callers on inputs where counting pays: shard-like runs of word ids (strictly increasing,
// a few percent of a vocabulary each), merged per slot and reduced on 1 to 5 threads.
TEST(CountMerge, MergeIncreasingAndReduceOfWordRunsMatchTheMap) {
  std::mt19937_64 rng(3);
  const std::vector<KeyRun> runs = random_runs(rng, 31, 40000, 17, 2000000, false);
  const std::map<uint32_t, uint64_t> want = sums(runs);
  std::vector<RecordBatch> batches;
  RecordBatch all;
  all.width = 1;
  for (const KeyRun& r : runs) {
    RecordBatch b;
    b.width = 1;
    b.keys.assign(r.keys.begin(), r.keys.end());
    b.counts.assign(r.counts.begin(), r.counts.end());
    all.append(b);
    batches.push_back(std::move(b));
  }
  auto as_pairs = [](const RecordBatch& b) {
    std::vector<std::pair<uint32_t, uint64_t>> out;
    for (size_t i = 0; i < b.size(); ++i) out.push_back({b.keys[i], b.counts[i]});
    return out;
  };
  expect_sums(as_pairs(merge_increasing(std::move(batches), 1)), want);
  for (unsigned threads : {1u, 2u, 5u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    RecordBatch got = all;
    reduce_records(got, threads);
    expect_sums(as_pairs(got), want);
  }
}

}  // namespace
}  // namespace gtadoc
