// Records kept on the GPU (worker/device_records.h) against the host path they replace around
// the NCCL shuffle: the records a query keeps on the device equal, in order, the records the
// same runs download; map_keys, strided_first_values, partition (hash and range layouts, 1-4
// parts), reduce, keep_top_counts, order_by_count, rows_at and count_order_cuts equal the host
// rewrite, choose_range_splitters' candidates, partition_records, reduce_records, a count threshold
// and a stable sort by count, byte for byte. A reduce short of device memory (the engine's bound)
// leaves the same records, in sorted ranges when those fit, for the host's reduce. Compiles
// without CUDA; skips at run time without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cluster/partition.h"
#include "cluster/reduce.h"
#include "common/error.h"
#include "formats/dictionary.h"
#include "formats/grammar.h"
#include "tests/testutil/count_order.h"
#include "tests/testutil/engine_cases.h"
#include "tests/testutil/grammars.h"
#include "tests/testutil/scoped_env.h"
#include "worker/engine.h"

namespace gtadoc {
namespace {

void expect_same(const RecordBatch& want, const RecordBatch& got) {
  EXPECT_EQ(want.width, got.width);
  ASSERT_EQ(want.size(), got.size());
  EXPECT_TRUE(std::equal(want.keys.begin(), want.keys.end(), got.keys.begin()));
  EXPECT_TRUE(std::equal(want.counts.begin(), want.counts.end(), got.counts.begin()));
}

TEST(DevicePartitionTest, CpuEngineKeepsNothingOnADevice) {
  auto engine = make_cpu_engine(1);
  engine->keep_records(true);
  EXPECT_EQ(engine->take_records(1), nullptr);
}

TEST(DevicePartitionTest, EqualsTheHostPathForEveryTaskAndLayout) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device visible";
  Dictionary dict;
  for (int i = 0; i < 64; ++i) dict.push_back("w" + std::to_string(100 + i));
  const uint32_t V = dict.size();
  auto engine = make_gpu_engine(0);
  std::vector<std::unique_ptr<LoadedShard>> shards;
  DocId first = 3;
  for (uint32_t i = 0; i < 3; ++i) {
    const uint32_t docs = 5 + 7 * i;
    shards.push_back(engine->load(finalize_grammar(
        V, first, docs, testutil::random_raw_grammar(V, docs, 40 + 60 * i, 25, 77 + i))));
    first += docs;
  }
  const Normalization norm = normalize_dictionary(dict, false, false);
  std::mt19937_64 rng(5);
  std::vector<uint32_t> table(V);  // a permutation of word ids, as sequence ranks are
  std::iota(table.begin(), table.end(), 0u);
  std::shuffle(table.begin(), table.end(), rng);

  for (const testutil::TaskCase& tc : testutil::kTaskCases) {
    QueryOptions q;
    q.task = tc.task;
    q.per_doc = tc.per_doc;
    q.n = 3;
    const KeyLayout layout = key_layout(q);
    SCOPED_TRACE(std::string(task_name(q.task)) + (q.per_doc ? " per-doc" : ""));
    // The host path: every shard's records downloaded, in order.
    RecordBatch host;
    host.width = layout.width;
    for (auto& s : shards) {
      ShardRunStats st;
      host.append(engine->run(*s, q, norm, st));
    }
    ASSERT_GT(host.size(), 0u);
    // The same runs keeping their records on the device.
    engine->keep_records(true);
    for (auto& s : shards) {
      ShardRunStats st;
      EXPECT_EQ(engine->run(*s, q, norm, st).size(), 0u);
    }
    std::unique_ptr<DeviceRecords> dev = engine->take_records(layout.width);
    ASSERT_NE(dev, nullptr);
    ASSERT_EQ(dev->width(), layout.width);
    expect_same(host, dev->download());

    for (uint64_t m : {uint64_t{1}, uint64_t{7}, host.size()}) {
      const std::vector<uint32_t> got = dev->strided_first_values(m);
      ASSERT_EQ(got.size(), m);
      for (uint64_t j = 0; j < m; ++j)
        EXPECT_EQ(got[j], host.keys[(j * host.size() / m) * layout.width]) << "m " << m;
    }

    if (is_sequence_task(q.task)) {  // words 1..n-1 into ranks, as the pipeline does
      const uint32_t off = q.per_doc ? 1 : 0;
      dev->map_keys(off, q.n - 1, table);
      for (size_t i = 0; i < host.size(); ++i)
        for (uint32_t j = off; j < off + q.n - 1; ++j) {
          uint32_t& k = host.keys[i * layout.width + j];
          k = table[k];
        }
      expect_same(host, dev->download());
    }

    // Partitions chained: each reorders what the previous one left, on both sides.
    for (uint32_t parts = 1; parts <= 4; ++parts) {
      for (bool range : {false, true}) {
        KeyLayout l = layout;
        l.range_partition = range;
        std::vector<uint32_t> splitters;
        if (range && parts > 1) {
          std::vector<uint32_t> firsts;
          for (size_t i = 0; i < host.size(); ++i) firsts.push_back(host.keys[i * l.width]);
          std::sort(firsts.begin(), firsts.end());
          for (uint32_t p = 1; p < parts; ++p)
            splitters.push_back(firsts[firsts.size() * p / parts]);
        }
        SCOPED_TRACE(std::to_string(parts) + (range ? " ranges" : " hashed"));
        PartitionedRecords want = partition_records(host, l, parts, splitters, 2);
        const std::vector<uint64_t> offsets = dev->partition(l, parts, splitters);
        ASSERT_EQ(offsets.size(), want.offsets.size());
        for (size_t p = 0; p < offsets.size(); ++p) EXPECT_EQ(offsets[p], want.offsets[p]);
        expect_same(want.records, dev->download());
        host = std::move(want.records);
        if (HasFailure()) return;
      }
    }
    // Ranges out, in and across (the staged MPI shuffle's moves, cluster/device_shuffle.h):
    // the middle third downloaded, the records rebuilt in a fresh set from the host (the ends)
    // and from the device (the middle), and a range of that uploaded over itself shifted.
    {
      const uint64_t n = host.size(), a = n / 3, b = 2 * n / 3;
      const uint32_t w = host.width;
      RecordBatch mid;
      mid.width = w;
      mid.keys.resize((b - a) * w);
      mid.counts.resize(b - a);
      dev->download_range(a, b - a, mid.keys.data(), mid.counts.data());
      for (uint64_t i = a; i < b; ++i) {
        ASSERT_TRUE(std::equal(host.key(i).begin(), host.key(i).end(), mid.key(i - a).begin()));
        ASSERT_EQ(host.counts[i], mid.counts[i - a]);
      }
      std::unique_ptr<DeviceRecords> copy = dev->allocate(n);
      copy->upload_range(0, a, host.keys.data(), host.counts.data());
      copy->copy_range(*dev, a, a, b - a);
      copy->upload_range(b, n - b, host.keys.data() + b * w, host.counts.data() + b);
      expect_same(host, copy->download());
      RecordBatch shifted = host;  // records [0, n - a) written at a
      copy->upload_range(a, n - a, host.keys.data(), host.counts.data());
      std::copy_n(host.keys.data(), (n - a) * w, shifted.keys.data() + a * w);
      std::copy_n(host.counts.data(), n - a, shifted.counts.data() + a);
      expect_same(shifted, copy->download());
    }
    // The owner's reduce on the device equals reduce_records, from the shuffled order and
    // from an already reduced set.
    reduce_records(host, 2);
    dev->reduce();
    expect_same(host, dev->download());
    dev->reduce();
    expect_same(host, dev->download());
    // A count-ordered --top keeps, in order, the records of at least the k-th largest count
    // (chained: each k filters what the previous one kept; ties at the cut all stay).
    for (uint64_t k : {host.size() + 1, std::max<uint64_t>(1, host.size() / 3), uint64_t{1}}) {
      std::vector<uint64_t> c(host.counts.begin(), host.counts.end());
      std::sort(c.begin(), c.end(), std::greater<uint64_t>());
      const uint64_t threshold = host.size() <= k ? 0 : c[k - 1];
      RecordBatch want;
      want.width = host.width;
      for (size_t i = 0; i < host.size(); ++i)
        if (host.counts[i] >= threshold) want.push(host.key(i), host.counts[i]);
      dev->keep_top_counts(k);
      expect_same(want, dev->download());
      host = std::move(want);
    }
    // The row order of count-ordered tasks (order_by_count) against its host reference, from
    // freshly reduced records: every grouping width, all records and a --top cut.
    for (uint32_t group = 0; group <= layout.width; ++group)
      for (uint64_t keep : {uint64_t{0}, uint64_t{5}}) {
        if (group > 0 && keep > 0) continue;
        SCOPED_TRACE("order_by_count group " + std::to_string(group) + " keep " +
                     std::to_string(keep));
        engine->keep_records(true);
        for (auto& s : shards) {
          ShardRunStats st;
          engine->run(*s, q, norm, st);
        }
        std::unique_ptr<DeviceRecords> fresh = engine->take_records(layout.width);
        ASSERT_NE(fresh, nullptr);
        RecordBatch want = fresh->download();
        reduce_records(want, 2);
        want = testutil::order_by_count(want, group, keep);
        fresh->reduce();
        ASSERT_TRUE(fresh->order_by_count(group, keep));
        expect_same(want, fresh->download());
        if (group != 0 || keep != 0) continue;
        // The row exchange's reads: rows at positions, and cuts by (count, key) splitters
        // (rows of the set and one between rows), against a scan of the host rows.
        const uint64_t n = want.size();
        const std::vector<uint64_t> at = {n / 4, n / 2, n / 2, n - 1};
        RecordBatch split;
        split.width = want.width;
        for (uint64_t i : at) split.push(want.key(i), want.counts[i]);
        expect_same(split, fresh->rows_at(at));
        split.counts[1] += 1;  // (count + 1, key): between rows
        auto after = [&](uint64_t i, uint64_t s) {
          if (want.counts[i] != split.counts[s]) return want.counts[i] < split.counts[s];
          const auto a = want.key(i), b = split.key(s);
          return std::lexicographical_compare(b.begin(), b.end(), a.begin(), a.end());
        };
        std::vector<uint64_t> cuts = {0};
        for (uint64_t s = 0; s < split.size(); ++s) {
          uint64_t c = 0;
          for (uint64_t i = 0; i < n; ++i) c += !after(i, s);
          cuts.push_back(std::max(c, cuts.back()));
        }
        cuts.push_back(n);
        EXPECT_EQ(fresh->count_order_cuts(split), cuts);
      }
    std::unique_ptr<DeviceRecords> empty = dev->allocate(0);
    EXPECT_EQ(empty->size(), 0u);
    KeyLayout hashed = layout;
    hashed.range_partition = false;
    EXPECT_EQ(empty->partition(hashed, 3, {}), (std::vector<uint64_t>{0, 0, 0, 0}));
    EXPECT_EQ(empty->download().size(), 0u);
    empty->reduce();
    EXPECT_EQ(empty->size(), 0u);
    EXPECT_TRUE(empty->order_by_count(0, 3));
    EXPECT_EQ(empty->size(), 0u);
    EXPECT_EQ(empty->count_order_cuts(host).back(), 0u);
  }
}

TEST(DevicePartitionTest, ReduceShortOfDeviceMemorySortsRangesForTheHost) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device visible";
  // 2 Mi records of 4 key values (48 MiB), many keys repeated. Sorting them all at once takes
  // about 72 MiB more; a half, about 28 MiB more.
  const uint32_t w = 4;
  const uint64_t n = uint64_t{1} << 21;
  std::mt19937_64 rng(11);
  RecordBatch host;
  host.width = w;
  host.keys.resize(n * w);
  host.counts.resize(n);
  for (uint32_t& k : host.keys) k = static_cast<uint32_t>(rng() % 48);
  for (uint64_t& c : host.counts) c = 1 + rng() % 5;
  RecordBatch want = host;
  reduce_records(want, 2);
  bool ranges_seen = false;
  for (uint64_t extra_mib : {400, 90, 70, 60, 50, 40, 30}) {
    SCOPED_TRACE("bound: the records and " + std::to_string(extra_mib) + " MiB");
    testutil::ScopedEnv bound("GTADOC_GPU_MEMORY_LIMIT", std::to_string((48 + extra_mib) << 20));
    auto engine = make_gpu_engine(0);
    engine->keep_records(true);
    std::unique_ptr<DeviceRecords> none = engine->take_records(w);
    ASSERT_NE(none, nullptr);
    std::unique_ptr<DeviceRecords> dev = none->allocate(n);
    dev->upload_range(0, n, host.keys.data(), host.counts.data());
    try {
      dev->reduce();
      expect_same(want, dev->download());
      continue;
    } catch (const ResourceError& e) {
      RecordBatch back = dev->download();
      const std::string msg = e.what();
      const size_t at = msg.find("sorted in ");
      if (at != std::string::npos) {
        const uint64_t ranges = std::stoull(msg.substr(at + 10));
        EXPECT_GE(ranges, 2u) << msg;
        EXPECT_LE(ranges, 256u) << msg;
        uint64_t runs = 1;
        for (uint64_t i = 1; i < n; ++i)
          runs += std::lexicographical_compare(back.key(i).begin(), back.key(i).end(),
                                               back.key(i - 1).begin(), back.key(i - 1).end());
        EXPECT_LE(runs, ranges) << msg;
        ranges_seen = true;
      }
      reduce_records(back, 2);  // the same records: the host's reduce gives the same answer
      expect_same(want, back);
    }
  }
  EXPECT_TRUE(ranges_seen) << "no bound had the whole sort fail and its ranges fit";
}

}  // namespace
}  // namespace gtadoc
