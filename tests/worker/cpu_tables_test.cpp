// Unit tests of the CPU engine's building blocks: NgramTable, the accumulators and the pool.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <stdexcept>

#include "worker/cpu/hash_tables.h"
#include "worker/cpu/thread_pool.h"

namespace gtadoc::cpu {
namespace {

TEST(NgramTableTest, InternsAndCountsLikeAMap) {
  for (uint32_t width : {1u, 3u, 9u}) {
    std::mt19937_64 rng(width);
    NgramTable ids(width, false), counts(width, true);
    std::map<std::vector<uint32_t>, std::pair<uint32_t, uint64_t>> ref;
    for (int i = 0; i < 200000; ++i) {
      std::vector<uint32_t> key(width);
      for (auto& k : key) k = static_cast<uint32_t>(rng() % 40);
      uint64_t c = 1 + rng() % 100;
      uint32_t id = ids.insert(key.data());
      counts.add(key.data(), hash_key(key.data(), width), c);
      auto [it, fresh] = ref.emplace(key, std::make_pair(static_cast<uint32_t>(ref.size()), 0));
      ASSERT_EQ(id, it->second.first);
      it->second.second += c;
    }
    EXPECT_EQ(ids.size(), ref.size());
    EXPECT_EQ(counts.size(), ref.size());
    size_t seen = 0;
    ids.for_each([&](uint32_t id, uint32_t h, const uint32_t* k, uint64_t c) {
      std::vector<uint32_t> key(k, k + width);
      EXPECT_EQ(ref.at(key).first, id);
      EXPECT_EQ(h, hash_key(k, width));
      EXPECT_EQ(c, 0u);
      ++seen;
    });
    EXPECT_EQ(seen, ref.size());
    counts.for_each([&](uint32_t, uint32_t, const uint32_t* k, uint64_t c) {
      EXPECT_EQ(ref.at(std::vector<uint32_t>(k, k + width)).second, c);
    });
  }
}

TEST(NgramTableTest, PartitionsCoverEveryOwner) {
  std::vector<int> seen(7, 0);
  for (uint32_t i = 0; i < 100000; ++i) ++seen[hash_partition(hash_key(&i, 1), 7)];
  for (int c : seen) EXPECT_GT(c, 100000 / 7 - 1500);
}

template <class Acc>
void check_accumulator() {
  std::mt19937_64 rng(1);
  Acc acc(5000);
  for (int round = 0; round < 5; ++round) {
    std::map<uint32_t, uint64_t> ref;
    for (int i = 0; i < 20000 * (round + 1); ++i) {
      uint32_t item = static_cast<uint32_t>(rng() % 5000);
      uint64_t c = 1 + rng() % 1000;
      acc.add(item, c);
      ref[item] += c;
    }
    std::map<uint32_t, uint64_t> got;
    acc.drain([&](uint32_t item, uint64_t c) { EXPECT_TRUE(got.emplace(item, c).second); });
    EXPECT_EQ(got, ref);
    EXPECT_TRUE(acc.empty());
  }
}

TEST(AccumulatorTest, DenseAndHash) {
  check_accumulator<DenseAccumulator>();
  check_accumulator<HashAccumulator>();
}

TEST(ThreadPoolTest, ParallelForCoversRangeOnce) {
  ThreadPool pool(4);
  Exec ex{&pool, 4};
  for (uint64_t grain : {1u, 7u, 1000u}) {
    std::vector<std::atomic<int>> hits(10007);
    std::atomic<unsigned> max_tid{0};
    ex.parallel_for(3, 10007, grain, [&](unsigned tid, uint64_t lo, uint64_t hi) {
      unsigned m = max_tid.load();
      while (tid > m && !max_tid.compare_exchange_weak(m, tid)) {
      }
      for (uint64_t i = lo; i < hi; ++i) ++hits[i];
    });
    for (uint64_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i].load(), i < 3 ? 0 : 1);
    EXPECT_LT(max_tid.load(), 4u);
  }
  std::atomic<int> calls{0};
  ex.on_all([&](unsigned) { ++calls; });
  EXPECT_EQ(calls.load(), 4);
}

TEST(ThreadPoolTest, RethrowsWorkerExceptions) {
  ThreadPool pool(3);
  Exec ex{&pool, 3};
  EXPECT_THROW(ex.on_all([](unsigned tid) {
    if (tid == 2) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  std::atomic<int> calls{0};
  ex.on_all([&](unsigned) { ++calls; });  // still usable afterwards
  EXPECT_EQ(calls.load(), 3);
}

TEST(ThreadPoolTest, SingleThreadIsADirectCall) {
  Exec ex;
  int calls = 0;
  ex.parallel_for(0, 100, 1, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    EXPECT_EQ(tid, 0u);
    EXPECT_EQ(lo, 0u);
    EXPECT_EQ(hi, 100u);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace gtadoc::cpu
