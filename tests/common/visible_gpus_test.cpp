// common/visible_gpus.h: the only rank on a node leaves visible the device it would pick (the
// first of CUDA_VISIBLE_DEVICES, or index 0), written as CUDA_VISIBLE_DEVICES names it; nothing is
// narrowed when ranks share the node and may exchange data GPU to GPU (NCCL's IPC needs their
// peers visible); ranks that share it without that keep their local rank's device; nothing when
// the choice is uncertain (unknown rank count, MIG, entries that are not plain indices or
// GPU-UUIDs, fewer than two devices).
#include "common/visible_gpus.h"

#include <gtest/gtest.h>

namespace gtadoc {
namespace {

TEST(VisibleGpus, TheOnlyRankKeepsTheDeviceItWouldPick) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 2, false, true), "0");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 8, false, true), "0");
  EXPECT_EQ(narrowed_visible_devices("3,1", 1, -1, 4, false, true), "3");
  EXPECT_EQ(narrowed_visible_devices("GPU-aa,GPU-bb", 1, -1, 2, false, true), "GPU-aa");
}

TEST(VisibleGpus, RanksSharingANodeWithoutPeerTrafficKeepTheirOwnDevice) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, 0, 2, false, false), "0");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, 1, 2, false, false), "1");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 4, 3, 4, false, false), "3");
  EXPECT_EQ(narrowed_visible_devices("3,1", 2, 1, 4, false, false), "1");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 4, 3, 2, false, false), "1");  // 2 ranks per GPU
  EXPECT_EQ(narrowed_visible_devices("GPU-aa,GPU-bb", 2, 1, 2, false, false), "GPU-bb");
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, -1, 2, false, false), std::nullopt);  // unknown
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, 1, 2, true, false), std::nullopt);    // MIG
}

TEST(VisibleGpus, RanksSharingANodeKeepEveryDevice) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, -1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("0,1", 4, 1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices(nullptr, 2, 1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices(nullptr, -1, -1, 2, false, true), std::nullopt);  // unknown
}

TEST(VisibleGpus, NothingWhenUncertainOrPointless) {
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 1, false, true), std::nullopt);  // one GPU
  EXPECT_EQ(narrowed_visible_devices("2", 1, -1, 4, false, true), std::nullopt);      // already one
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 2, true, true), std::nullopt);   // MIG
  EXPECT_EQ(narrowed_visible_devices(nullptr, 1, -1, 0, false, true), std::nullopt);  // no driver
  EXPECT_EQ(narrowed_visible_devices("0,7", 1, -1, 2, false, true),
            std::nullopt);  // 7: no such GPU
  EXPECT_EQ(narrowed_visible_devices("MIG-x,MIG-y", 1, -1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("0,,1", 1, -1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("", 1, -1, 2, false, true), std::nullopt);
  EXPECT_EQ(narrowed_visible_devices("-1", 1, -1, 2, false, true), std::nullopt);
}

}  // namespace
}  // namespace gtadoc
