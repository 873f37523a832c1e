// ShardPrefetcher (coordinator/pipeline/shard_prefetch.h) and prepare_shard (worker/engine.h):
// shards come out in the order asked, each equal to a direct read; for the GPU engine with the
// layout that build_shard_layout gives on one thread, whatever the prefetch's thread count; a
// shard above the prepare bound comes unprepared; a damaged shard's error comes with that shard
// and no other, and the prefetcher is destroyed cleanly with work in flight; bodies left to the
// GPU engine's device checks are checked before any host use.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "coordinator/pipeline/shard_prefetch.h"
#include "formats/archive.h"
#include "tests/testutil/corpus.h"
#include "tests/testutil/grammars.h"
#include "tests/testutil/scoped_env.h"
#include "worker/engine.h"
#include "worker/plan/shard_layout.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;

struct Archive {
  testutil::TempDir tmp;
  fs::path path = tmp / "s.gtd";
  Manifest manifest;
  Archive() {
    auto r = testutil::run_gtadoc({"compress", (testutil::source_dir() / "data/sample").string(),
                                   "-o", path.string(), "--shards", "6"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    manifest = read_manifest(path);
  }
};

void expect_same_layout(const plan::ShardLayout& a, const plan::ShardLayout& b) {
  EXPECT_EQ(a.num_inner, b.num_inner);
  EXPECT_EQ(a.num_docs, b.num_docs);
  EXPECT_EQ(a.has_bags, b.has_bags);
  EXPECT_EQ(a.local_words, b.local_words);
  EXPECT_EQ(a.body, b.body);
  EXPECT_EQ(a.unit_begin, b.unit_begin);
  EXPECT_EQ(a.unit_end, b.unit_end);
  EXPECT_EQ(a.children.off, b.children.off);
  EXPECT_EQ(a.children.item, b.children.item);
  EXPECT_EQ(a.children.cnt, b.children.cnt);
  EXPECT_EQ(a.terms.off, b.terms.off);
  EXPECT_EQ(a.terms.item, b.terms.item);
  EXPECT_EQ(a.terms.cnt, b.terms.cnt);
  EXPECT_EQ(a.root_uses, b.root_uses);
  EXPECT_EQ(a.level_of, b.level_of);
}

TEST(ShardPrefetch, InOrderEqualToDirectReadsWithTheGpuLayout) {
  testutil::ScopedEnv device_checks("GTADOC_GPU_DEVICE_CHECKS", "1");
  Archive a;
  ASSERT_EQ(a.manifest.shards.size(), 6u);
  const std::vector<uint32_t> order{4, 0, 5, 2, 1, 3};
  for (const std::string engine : {"gpu", "cpu"})
    for (unsigned threads : {1u, 3u, 16u}) {
      ShardPrefetcher prefetch(a.path, a.manifest, order, engine, threads, 0);
      EXPECT_TRUE(prefetch.fresh());
      for (uint32_t want : order) {
        ASSERT_FALSE(prefetch.done());
        uint32_t id = 99;
        PreparedShard p = prefetch.next(&id);
        EXPECT_FALSE(prefetch.fresh());
        EXPECT_EQ(id, want);
        const ShardGrammar g = read_shard_grammar(a.path, a.manifest, want);
        EXPECT_EQ(p.grammar.symbols, g.symbols);
        EXPECT_EQ(p.grammar.first_doc, g.first_doc);
        EXPECT_EQ(p.grammar.num_docs, g.num_docs);
        if (engine == "gpu") {
          // The GPU engine's preparation: bodies, units and the level schedule; the bags are
          // built on the device (or here too with GTADOC_GPU_HOST_BAGS=1), and the bodies are
          // checked there.
          EXPECT_EQ(p.bodies_unchecked, (a.path / shard_file_name(want)).string());
          ASSERT_NE(p.layout, nullptr);
          expect_same_layout(*p.layout, plan::build_shard_layout(g, plan::Exec{}, nullptr,
                                                                 plan::gpu_layout_parts()));
          EXPECT_TRUE(p.layout->has_schedule);
          EXPECT_EQ(p.layout->schedule.sched.size(), p.layout->num_inner);
        } else {
          EXPECT_EQ(p.layout, nullptr);
          EXPECT_FALSE(p.bodies_unchecked);
        }
      }
      EXPECT_TRUE(prefetch.done());
    }
}

TEST(ShardPrefetch, ShardsAboveThePrepareBoundComeUnprepared) {
  testutil::ScopedEnv device_checks("GTADOC_GPU_DEVICE_CHECKS", "1");
  Archive a;
  uint64_t smallest = ~uint64_t{0};
  for (const ShardEntry& s : a.manifest.shards) smallest = std::min(smallest, s.symbols);
  ShardPrefetcher prefetch(a.path, a.manifest, {0, 1, 2, 3, 4, 5}, "gpu", 4, smallest);
  int prepared = 0;
  while (!prefetch.done()) {
    uint32_t id = 0;
    PreparedShard p = prefetch.next(&id);
    EXPECT_EQ(p.layout != nullptr, p.grammar.symbols.size() <= smallest) << id;
    // One to be split on the host is validated whole at its read.
    EXPECT_EQ(p.bodies_unchecked.has_value(), p.layout != nullptr) << id;
    prepared += p.layout != nullptr;
  }
  EXPECT_GE(prepared, 1);
}

TEST(ShardPrefetch, ADamagedShardFailsAloneAndInFlightWorkEndsCleanly) {
  Archive a;
  fs::resize_file(a.path / shard_file_name(2), 100);
  {
    ShardPrefetcher prefetch(a.path, a.manifest, {0, 1, 2, 3, 4, 5}, "gpu", 8, 0);
    EXPECT_NO_THROW(prefetch.next(nullptr));
    EXPECT_NO_THROW(prefetch.next(nullptr));
    EXPECT_THROW(prefetch.next(nullptr), Error);
    EXPECT_NO_THROW(prefetch.next(nullptr));  // shard 3
  }                                           // shards 4 and 5 may still be in flight
  ShardPrefetcher again(a.path, a.manifest, {2}, "cpu", 1, 0);
  EXPECT_THROW(again.next(nullptr), Error);
  EXPECT_TRUE(again.done());
}

/// A shard whose bodies break an invariant (its checksums and sizes intact) passes a read for the
/// GPU engine, which checks only its frame, with its name kept for the device's checks; the host
/// consumers of such a grammar (check_bodies_on_host, the CPU engine's load) reject it with the
/// message a full read gives; with GTADOC_GPU_DEVICE_CHECKS=0 the read validates it whole.
TEST(ShardPrefetch, BodiesLeftToTheDeviceAreCheckedBeforeAnyHostUse) {
  std::optional<testutil::ScopedEnv> device_checks;
  device_checks.emplace("GTADOC_GPU_DEVICE_CHECKS", "1");
  testutil::TempDir dir;
  const uint32_t V = 500;
  testutil::RandomGrammarOptions o;
  o.rule_one_in = 3;
  ShardGrammar g = finalize_grammar(V, 0, 6, testutil::random_raw_grammar(V, 6, 2000, 800, 5, o));
  g.rule_uses[g.root() / 2] += 1;  // a body invariant: the uses counted in the bodies differ
  const Manifest m = testutil::write_one_shard(dir.path(), g, V);
  std::string message;
  try {
    read_shard_grammar(dir.path(), m, 0);
  } catch (const InputError& err) {
    message = err.what();
  }
  ASSERT_NE(message, "");
  ShardPrefetcher prefetch(dir.path(), m, {0}, "gpu", 2, 0);
  PreparedShard p = prefetch.next(nullptr);
  ASSERT_TRUE(p.bodies_unchecked);
  PreparedShard copy{ShardGrammar(p.grammar), nullptr, p.bodies_unchecked};
  try {
    check_bodies_on_host(p);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& err) {
    EXPECT_EQ(std::string(err.what()), message);
  }
  try {
    make_cpu_engine(1)->load_prepared(copy);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& err) {
    EXPECT_EQ(std::string(err.what()), message);
  }
  device_checks.emplace("GTADOC_GPU_DEVICE_CHECKS", "0");  // validated whole at the read
  ShardPrefetcher whole(dir.path(), m, {0}, "gpu", 2, 0);
  EXPECT_THROW(whole.next(nullptr), InputError);
}

}  // namespace
}  // namespace gtadoc

namespace gtadoc {
namespace {

TEST(ShardPrefetch, ThreadsPerPreparationAreTwoOrTheSetting) {
  {
    testutil::ScopedEnv unset("GTADOC_PREPARE_THREADS", std::nullopt);
    EXPECT_EQ(ShardPrefetcher::threads_each_for(16), 2u);
    EXPECT_EQ(ShardPrefetcher::threads_each_for(32), 2u);
    EXPECT_EQ(ShardPrefetcher::threads_each_for(2), 2u);
    EXPECT_EQ(ShardPrefetcher::threads_each_for(1), 1u);
  }
  {
    testutil::ScopedEnv three("GTADOC_PREPARE_THREADS", "3");
    EXPECT_EQ(ShardPrefetcher::threads_each_for(16), 3u);
  }
  {
    testutil::ScopedEnv zero("GTADOC_PREPARE_THREADS", "0");  // out of range: refused
    EXPECT_THROW(ShardPrefetcher::threads_each_for(16), UsageError);
  }
}

TEST(ShardPrefetch, DepthAndReadsAtOnce) {
  testutil::ScopedEnv depth("GTADOC_PREFETCH_DEPTH", std::nullopt);
  testutil::ScopedEnv reads("GTADOC_READS_AT_ONCE", std::nullopt);
  EXPECT_EQ(ShardPrefetcher::depth_for("cpu", 2), 2u);
  EXPECT_EQ(ShardPrefetcher::depth_for("cpu", 32), 8u);
  EXPECT_EQ(ShardPrefetcher::depth_for("cpu", 256), 16u);
  EXPECT_EQ(ShardPrefetcher::depth_for("gpu", 32), 16u);
  EXPECT_EQ(ShardPrefetcher::reads_at_once_for(16, 32), 16u);
  EXPECT_EQ(ShardPrefetcher::reads_at_once_for(16, 16), 8u);
  EXPECT_EQ(ShardPrefetcher::reads_at_once_for(2, 32), 2u);
  EXPECT_EQ(ShardPrefetcher::reads_at_once_for(16, 2), 2u);
}

}  // namespace
}  // namespace gtadoc
