// common/visible_gpus.h: the only rank on a node leaves visible the device it would pick (the
// first of CUDA_VISIBLE_DEVICES, or index 0), written as CUDA_VISIBLE_DEVICES names it; nothing is
// narrowed when ranks share the node (NCCL's IPC needs their peers visible) or when the choice is
// uncertain (unknown rank count, MIG, entries that are not plain indices or GPU-UUIDs, fewer than
// two devices).
#include "common/visible_gpus.h"

#include <gtest/gtest.h>

namespace gtadoc {
namespace {

TEST(VisibleGpus, TheOnlyRankKeepsTheDeviceItWouldPick) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, 2, false), "0");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, 8, false), "0");
  EXPECT_EQ(narrowed_visible_devices("3,1", 1, 4, false), "3");
  EXPECT_EQ(narrowed_visible_devices("GPU-aa,GPU-bb", 1, 2, false), "GPU-aa");
}

TEST(VisibleGpus, RanksSharingANodeKeepEveryDevice) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, 2, false), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("0,1", 4, 2, false), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices(nullptr, -1, 2, false), std::nullopt);  // unknown
}

TEST(VisibleGpus, NothingWhenUncertainOrPointless) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, 1, false), std::nullopt);  // one GPU
  EXPECT_EQ(narrowed_visible_devices("2", 1, 4, false), std::nullopt);      // already one
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, 2, true), std::nullopt);   // MIG
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, 0, false), std::nullopt);  // no driver
  EXPECT_EQ(narrowed_visible_devices("0,7", 1, 2, false), std::nullopt);    // 7: no such GPU
  EXPECT_EQ(narrowed_visible_devices("MIG-x,MIG-y", 1, 2, false), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("0,,1", 1, 2, false), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("", 1, 2, false), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("-1", 1, 2, false), std::nullopt);
}

}  // namespace
}  // namespace gtadoc
