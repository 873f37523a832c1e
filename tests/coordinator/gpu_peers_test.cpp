// coordinator/cli.h gpu_peers_needed: which commands keep every GPU of a node visible to ranks
// sharing it (the service; runs whose shuffle may be NCCL, by task, ranks and archive size),
// read from raw arguments.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "cluster/cross_memory.h"
#include "cluster/nccl_comm.h"
#include "coordinator/cli.h"
#include "tests/testutil/corpus.h"
#include "tests/testutil/scoped_env.h"

namespace gtadoc {
namespace {

bool needed(std::initializer_list<const char*> args, int ranks_on_node, int ranks_in_job = -1) {
  std::vector<const char*> argv{"gtadoc"};
  argv.insert(argv.end(), args.begin(), args.end());
  return gpu_peers_needed(static_cast<int>(argv.size()), argv.data(), ranks_on_node, ranks_in_job);
}

class GpuPeersNeeded : public ::testing::Test {
 protected:
  testutil::ScopedEnv shuffle_{"GTADOC_SHUFFLE", std::nullopt};
  testutil::ScopedEnv cma_{"GTADOC_SHUFFLE_CMA", std::nullopt};
};

TEST_F(GpuPeersNeeded, ByCommandAndTask) {
  EXPECT_TRUE(needed({"serve", "a.gtd", "--engine", "gpu"}, 4));
  EXPECT_TRUE(needed({"-v", "serve", "a.gtd"}, 2));
  // No archive there: its size is unknown, so every one-query run takes MPI.
  EXPECT_FALSE(needed({"run", "a.gtd", "ranked-inverted-index"}, 2));
  EXPECT_FALSE(needed({"run", "a.gtd", "sequence-count"}, 2));
  EXPECT_FALSE(needed({"run", "a.gtd", "word-count", "--top", "100"}, 4));
  EXPECT_FALSE(needed({"run", "a.gtd", "inverted-index", "-o", "out.tsv"}, 2));
  EXPECT_FALSE(needed({"compress", "docs", "-o", "a.gtd"}, 4));
  EXPECT_FALSE(needed({"info", "a.gtd"}, 4));
  EXPECT_FALSE(needed({}, 4));
}

TEST_F(GpuPeersNeeded, IndexTasksByTheArchiveSizePerRank) {
  // Cross-memory pulls off: the size rule decides (with them, a one-node job never takes NCCL
  // for one query: OneNodeWithPulls below).
  testutil::ScopedEnv cma("GTADOC_SHUFFLE_CMA", "0");
  // An archive directory whose shard files hold 3 x 384 MiB (sparse files: only sizes count).
  testutil::TempDir dir;
  const std::filesystem::path a = dir / "big.gtd";
  std::filesystem::create_directories(a);
  testutil::write_file(a / "manifest.h5", "m");
  for (int i = 0; i < 3; ++i) {
    const std::filesystem::path shard = a / ("shard-0000" + std::to_string(i) + ".h5");
    testutil::write_file(shard, "");
    std::filesystem::resize_file(shard, kNcclShardBytesPerRank);
  }
  const std::string path = a.string();
  // 3 x 384 MiB over 2 ranks: 576 MiB each, NCCL; over 4 ranks (two nodes of 2): 288 MiB, MPI,
  // but ranked-inverted-index (from 96 MiB a rank) takes NCCL there too.
  EXPECT_TRUE(needed({"run", path.c_str(), "inverted-index"}, 2, 2));
  EXPECT_TRUE(needed({"run", "--engine", "gpu", path.c_str(), "term-vector", "-o", "x"}, 2, 2));
  EXPECT_TRUE(needed({"run", path.c_str(), "sequence-count"}, 2, 2));
  EXPECT_FALSE(needed({"run", path.c_str(), "inverted-index"}, 2, 4));
  EXPECT_FALSE(needed({"run", path.c_str(), "sequence-count"}, 2, 4));
  EXPECT_TRUE(needed({"run", "--n", "2", path.c_str(), "ranked-inverted-index", "-o", "x"}, 2, 4));
  EXPECT_TRUE(needed({"run", path.c_str(), "inverted-index"}, 2, -1));  // per node's ranks
  EXPECT_FALSE(needed({"run", path.c_str(), "inverted-index"}, 4, 4));  // MPI from 3 a node
  EXPECT_FALSE(needed({"run", path.c_str(), "ranked-inverted-index"}, 4, 4));
  EXPECT_FALSE(needed({"run", path.c_str(), "word-count"}, 2, 2));
  // A file named like a task only costs the narrowing (the run then shuffles as it would).
  EXPECT_TRUE(needed({"run", path.c_str(), "word-count", "-o", "ranked-inverted-index"}, 2, 2));
  // Not an archive (no manifest): size unknown, MPI.
  EXPECT_FALSE(needed({"run", dir.path().c_str(), "inverted-index"}, 2, 2));
}

TEST_F(GpuPeersNeeded, OneNodeWithPulls) {
  testutil::TempDir dir;
  const std::filesystem::path a = dir / "big.gtd";
  std::filesystem::create_directories(a);
  testutil::write_file(a / "manifest.h5", "m");
  testutil::write_file(a / "shard-00000.h5", "");
  std::filesystem::resize_file(a / "shard-00000.h5", 4 * kNcclShardBytesPerRank);
  const std::string path = a.string();
  // Every rank on this node: no one-query NCCL where pulls are expected here; two nodes of two
  // ranks: the size rule.
  const bool pulls = cross_memory_expected();
  for (const char* task : {"ranked-inverted-index", "inverted-index", "sequence-count"}) {
    EXPECT_EQ(needed({"run", path.c_str(), task}, 2, 2), !pulls) << task;
    EXPECT_TRUE(needed({"run", path.c_str(), task}, 2, 4)) << task;
  }
  EXPECT_TRUE(needed({"serve", path.c_str()}, 2, 2));  // the service keeps NCCL
}

TEST_F(GpuPeersNeeded, ShuffleOverride) {
  {
    testutil::ScopedEnv nccl("GTADOC_SHUFFLE", "nccl");
    EXPECT_TRUE(needed({"run", "a.gtd", "word-count"}, 4));
  }
  testutil::ScopedEnv mpi("GTADOC_SHUFFLE", "mpi");
  EXPECT_FALSE(needed({"run", "a.gtd", "ranked-inverted-index"}, 2));
  EXPECT_TRUE(needed({"serve", "a.gtd"}, 2));  // the service keeps every GPU
}

bool asked(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"gtadoc"};
  argv.insert(argv.end(), args.begin(), args.end());
  return gpu_engine_asked(static_cast<int>(argv.size()), argv.data());
}

// coordinator/cli.h gpu_engine_asked: which processes start CUDA before MPI (warm_up_gpu).
TEST(GpuEngineAsked, RunAndServeWithEngineGpu) {
  EXPECT_TRUE(asked({"run", "a.gtd", "word-count", "--engine", "gpu"}));
  EXPECT_TRUE(asked({"-v", "run", "--engine=gpu", "a.gtd", "sort"}));
  EXPECT_TRUE(asked({"serve", "a.gtd", "--engine", "gpu", "--listen", "127.0.0.1:0"}));
  EXPECT_FALSE(asked({"run", "a.gtd", "word-count"}));  // auto may choose the CPU
  EXPECT_FALSE(asked({"run", "a.gtd", "word-count", "--engine", "cpu"}));
  EXPECT_FALSE(asked({"run", "a.gtd", "word-count", "--engine"}));
  EXPECT_FALSE(asked({"compress", "docs", "-o", "a.gtd", "--engine", "gpu"}));
  EXPECT_FALSE(asked({"info", "a.gtd"}));
  EXPECT_FALSE(asked({}));
}

}  // namespace
}  // namespace gtadoc
