//===- ClusterTest.cpp - cluster descriptions and rank placement -----------===//

#include "ptrain/Analysis/Cluster.h"

#include "gtest/gtest.h"

using namespace mlir::ptrain;

namespace {

const char *kCluster = R"({
  "name": "test", "nodes": 16, "gpus_per_node": 8,
  "gpu": {"name": "g", "peak_flops": {"f32": 1e12, "tf32": 8e12}, "f32_matmul_dtype": "tf32",
          "memory_bandwidth": 1e12, "memory_capacity": 4e10, "efficiency": 0.5},
  "intra_node": {"bandwidth": 3e11, "latency": 5e-6},
  "inter_node": {"bandwidth": 2.5e10, "latency": 1e-5}
})";

ClusterSpec parseOrDie(const char *text) {
  auto value = llvm::json::parse(text);
  EXPECT_TRUE(static_cast<bool>(value));
  auto cluster = parseCluster(*value);
  EXPECT_TRUE(static_cast<bool>(cluster)) << llvm::toString(cluster.takeError());
  return *cluster;
}

TEST(ClusterTest, ParsesAndSelectsPeaks) {
  ClusterSpec c = parseOrDie(kCluster);
  EXPECT_EQ(c.nodes, 16);
  EXPECT_DOUBLE_EQ(*c.getPeakFlops("f32", /*matmul=*/true), 8e12);
  EXPECT_DOUBLE_EQ(*c.getPeakFlops("f32", /*matmul=*/false), 1e12);
  auto bf16 = c.getPeakFlops("bf16", false);
  ASSERT_FALSE(static_cast<bool>(bf16));
  EXPECT_EQ(llvm::toString(bf16.takeError()), "gpu.peak_flops.bf16: missing (needed for bf16 ops)");
}

TEST(ClusterTest, MegatronPlacement) {
  // tp innermost, then dp, then pp: TP 8 fills a node, DP 4 and PP 4 cross nodes (Optimus-CC's layout).
  ClusterSpec c = parseOrDie(kCluster);
  auto p = Placement::create(c, {{"dp", 4}, {"pp", 4}, {"tp", 8}});
  ASSERT_TRUE(static_cast<bool>(p));
  EXPECT_FALSE(p->crossesNodes({"tp"}));
  EXPECT_TRUE(p->crossesNodes({"dp"}));
  EXPECT_TRUE(p->crossesNodes({"pp"}));
  EXPECT_EQ(p->getMaxRanksPerNodeWithSame("pp"), 8);
  // With dp innermost (and 2 x 4 on a node) the dp group stays inside a node.
  c.axisOrder = {"dp", "tp", "pp"};
  auto q = Placement::create(c, {{"dp", 4}, {"pp", 4}, {"tp", 2}});
  ASSERT_TRUE(static_cast<bool>(q));
  EXPECT_FALSE(q->crossesNodes({"dp"}));
  EXPECT_FALSE(q->crossesNodes({"tp"}));
  EXPECT_TRUE(q->crossesNodes({"pp"}));
}

TEST(ClusterTest, TooFewGpusNamesBothCounts) {
  ClusterSpec c = parseOrDie(kCluster);
  auto p = Placement::create(c, {{"dp", 8}, {"pp", 4}, {"tp", 8}});
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_EQ(llvm::toString(p.takeError()), "nodes: the grid needs 256 GPUs but the cluster has 16 x 8 = 128");
}

} // namespace
