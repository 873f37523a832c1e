// Unit tests of the CPU engine's building blocks: NgramTable and the accumulators.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <stdexcept>

#include "worker/cpu/hash_tables.h"

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

}  // namespace
}  // namespace gtadoc::cpu
