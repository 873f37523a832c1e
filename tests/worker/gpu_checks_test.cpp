// The GPU engine's load checks on the device the bodies of a grammar read with only its frame
// checked (PreparedShard::bodies_unchecked, formats/grammar.h): every mutation of the bodies
// (tests/testutil/grammar_mutations.h) is rejected with the InputError the host's checks give,
// on one load and on the load lanes; a valid grammar loads and answers as the CPU engine does.
// Compiles without CUDA; skips at run time without a GPU.
#include <gtest/gtest.h>

#include "worker/engine.h"

#ifdef GTADOC_HAVE_GPU_ENGINE

#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "formats/grammar.h"
#include "tests/testutil/grammar_mutations.h"
#include "tests/testutil/grammars.h"
#include "tests/testutil/scoped_env.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc {
namespace {

constexpr uint32_t kWords = 3000;

ShardGrammar good_grammar() {
  testutil::RandomGrammarOptions o;
  o.rule_one_in = 3;
  o.boundary_stride = 7;
  o.boundary_offset = 3;
  return finalize_grammar(kWords, 5, 40,
                          testutil::random_raw_grammar(kWords, 40, 30000, 3000, 17, o));
}

/// A grammar prepared for the GPU engine as a frame-checked read leaves it (`layout`: with the
/// host's shard layout built ahead, as the prefetcher does, or without).
PreparedShard unchecked(const ShardGrammar& g, bool layout) {
  PreparedShard p = layout ? prepare_shard("gpu", ShardGrammar(g), 2)
                           : PreparedShard{ShardGrammar(g), nullptr, {}};
  p.bodies_unchecked = "g";
  return p;
}

std::map<std::vector<uint32_t>, uint64_t> rows(const RecordBatch& b) {
  std::map<std::vector<uint32_t>, uint64_t> out;
  for (size_t i = 0; i < b.size(); ++i)
    out[std::vector<uint32_t>(b.keys.begin() + i * b.width, b.keys.begin() + (i + 1) * b.width)] +=
        b.counts[i];
  return out;
}

/// The message of loading `p` on `engine`, "" when it loads.
std::string load_message(Engine& engine, PreparedShard& p) {
  try {
    engine.load_prepared(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuBodyChecks, AValidGrammarLoadsAndAnswersAsTheCpuEngine) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device visible";
  const ShardGrammar good = good_grammar();
  auto gpu = make_gpu_engine(0);
  auto cpu = make_cpu_engine(2);
  auto cs = cpu->load(ShardGrammar(good));
  for (const bool layout : {true, false}) {
    PreparedShard p = unchecked(good, layout);
    auto gs = gpu->load_prepared(p);
    for (const Task task : {Task::kWordCount, Task::kInvertedIndex, Task::kSequenceCount}) {
      QueryOptions q;
      q.task = task;
      ShardRunStats stats;
      const Normalization norm;
      EXPECT_EQ(rows(gpu->run(*gs, q, norm, stats)), rows(cpu->run(*cs, q, norm, stats)))
          << task_name(task) << (layout ? " (layout built ahead)" : "");
    }
  }
}

TEST(GpuBodyChecks, EveryBodyMutationIsRejectedWithTheHostsMessage) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device visible";
  const ShardGrammar good = good_grammar();
  auto engine = make_gpu_engine(0);
  std::mt19937_64 rng(11);
  size_t on_device = 0;
  for (auto& [name, mutate] : testutil::grammar_mutations(good, rng)) {
    for (int trial = 0; trial < 4; ++trial) {
      ShardGrammar g = good;
      mutate(g);
      const std::string host = testutil::validation_message(g, 1);
      SCOPED_TRACE(name + " (trial " + std::to_string(trial) + "): " + host);
      ASSERT_NE(host, "");
      try {
        check_grammar_frame(g, "g");
      } catch (const InputError&) {
        continue;  // the read rejects it (tests/formats/parallel_read_test.cpp)
      }
      ++on_device;
      PreparedShard p = unchecked(g, trial % 2 == 0);
      EXPECT_EQ(load_message(*engine, p), host);
      EXPECT_EQ(p.grammar.symbols, g.symbols);  // handed back whole
    }
  }
  EXPECT_GE(on_device, 60u);  // 16 body mutations, 4 trials each (some draw a frame violation)
}

TEST(GpuBodyChecks, TheLoadLanesRejectABadShardAndLoadTheOthers) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device visible";
  testutil::ScopedEnv lanes("GTADOC_GPU_LOAD_LANES", "2");
  const ShardGrammar good = good_grammar();
  ShardGrammar bad = good;
  bad.rule_length[good.root() / 2] += 1;
  const std::string host = testutil::validation_message(bad, 1);
  ASSERT_NE(host, "");
  auto engine = make_gpu_engine(0);
  std::vector<PreparedShard> shards;
  shards.push_back(unchecked(good, true));
  shards.push_back(unchecked(good, true));
  shards.push_back(unchecked(bad, true));
  std::vector<Engine::LoadOutcome> got = engine->load_prepared_many(shards);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].shard);
  ASSERT_FALSE(got[2].shard);
  ASSERT_TRUE(got[2].error);
  try {
    std::rethrow_exception(got[2].error);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), host);
  } catch (...) {
    ADD_FAILURE() << "not an InputError";
  }
}

}  // namespace
}  // namespace gtadoc

#else  // no GPU engine in this build

TEST(GpuBodyChecks, NotBuilt) {
  EXPECT_FALSE(gtadoc::gpu_available());
  GTEST_SKIP() << "built without CUDA";
}

#endif
