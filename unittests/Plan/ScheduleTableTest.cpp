//===- ScheduleTableTest.cpp - schedule tables and their unit-cost timing -===//
//
// The bubble of the tables --ptrain-schedule writes, counted by executing them in the timing model
// (PipelinePlan.h, TimingPlan.h) with equal stage costs and free communication: 1F1B (P - 1) / M and
// interleaved (P - 1) / (V M) of the ideal time (Narayanan et al., SC'21, sec. 2.2.1 and 2.2.2); the step
// strings' round trip; the degenerate and refused cases.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Plan/ScheduleTable.h"
#include "ptrain/Analysis/PipelinePlan.h"

#include "gtest/gtest.h"

using namespace mlir::ptrain;

namespace {

/// Simulates `table` with unit costs per chunk in the timing model; the error message when it deadlocks.
std::optional<Timeline> execute(const ScheduleTableRows &table, int64_t v, double tf, double tb, std::string &stuck) {
  PipelinePlanIndex index;
  llvm::Expected<Plan> plan = buildPipelinePlan(getUniformPipelineCosts(table, v, tf, tb, tf + tb), index);
  if (!plan) {
    stuck = llvm::toString(plan.takeError());
    return std::nullopt;
  }
  Timeline timeline;
  if (!simulate(*plan, timeline, stuck))
    return std::nullopt;
  return timeline;
}

/// Per stage idle / busy of `kind` with P stages, V chunks, M micro-batches and a forward of t_f, a backward of
/// t_b per chunk.
std::vector<double> bubbles(llvm::StringRef kind, int64_t p, int64_t v, int64_t m, double tf, double tb) {
  std::string error, stuck;
  std::optional<ScheduleTableRows> table = buildScheduleTable(kind, p, v, m, error);
  EXPECT_TRUE(table.has_value()) << error;
  if (!table)
    return {};
  std::optional<Timeline> timing = execute(*table, v, tf, tb, stuck);
  EXPECT_TRUE(timing.has_value()) << stuck;
  if (!timing)
    return {};
  std::vector<double> result;
  for (int64_t s = 0; s < p; ++s) {
    double busy = timing->computeTime[s];
    EXPECT_DOUBLE_EQ(busy, m * v * (tf + tb)) << "stage " << s;
    result.push_back((timing->iterationTime - busy) / busy);
  }
  // The model's own bubble (last F/B/FB end - the busiest rank's time) / that time agrees.
  EXPECT_NEAR(timing->bubble, result.front(), 1e-12);
  return result;
}

TEST(ScheduleTable, OneFOneBBubbleIsStagesMinusOneOverMicroBatches) {
  for (int64_t p : {2, 4, 8})
    for (int64_t m : {p, 2 * p, 8 * p})
      for (auto [tf, tb] : {std::pair{1.0, 1.0}, std::pair{1.0, 2.0}})
        for (double bubble : bubbles("1f1b", p, 1, m, tf, tb))
          EXPECT_DOUBLE_EQ(bubble, double(p - 1) / double(m)) << "p " << p << " m " << m << " tb " << tb;
}

TEST(ScheduleTable, GPipeHasTheSameBubbleAsOneFOneB) {
  for (int64_t p : {2, 4})
    for (int64_t m : {1, 3, 8})
      for (double bubble : bubbles("gpipe", p, 1, m, 1.0, 2.0))
        EXPECT_DOUBLE_EQ(bubble, double(p - 1) / double(m));
}

TEST(ScheduleTable, InterleavedBubbleIsDividedByTheChunks) {
  for (int64_t p : {2, 4})
    for (int64_t v : {2, 3})
      for (int64_t m : {p, 2 * p, 4 * p})
        for (double bubble : bubbles("interleaved", p, v, m, 1.0, 2.0))
          EXPECT_DOUBLE_EQ(bubble, double(p - 1) / double(v * m)) << "p " << p << " v " << v << " m " << m;
}

TEST(ScheduleTable, FewerMicroBatchesThanStagesIsDegenerateButComplete) {
  std::string error;
  for (llvm::StringRef kind : {"1f1b", "gpipe"})
    for (int64_t m : {1, 2}) {
      std::optional<ScheduleTableRows> table = buildScheduleTable(kind, 4, 1, m, error);
      ASSERT_TRUE(table.has_value()) << error;
      for (int64_t s = 0; s < 3; ++s) {
        // All forwards, then all backwards, then the optimizer.
        ASSERT_EQ(static_cast<int64_t>((*table)[s].size()), 2 * m + 1);
        for (int64_t i = 0; i < m; ++i) {
          EXPECT_EQ((*table)[s][i].str(), "F" + std::to_string(i));
          EXPECT_EQ((*table)[s][m + i].str(), "B" + std::to_string(i));
        }
      }
      std::string stuck;
      EXPECT_TRUE(execute(*table, 1, 1, 2, stuck).has_value()) << stuck;
    }
}

TEST(ScheduleTable, StepStringsRoundTrip) {
  for (llvm::StringRef text : {"F0", "B12", "FB3", "O", "F2.1", "B0.3", "FB7.2"}) {
    std::optional<ScheduleStep> step = ScheduleStep::parse(text);
    ASSERT_TRUE(step.has_value()) << text.str();
    EXPECT_EQ(step->str(), text.str());
  }
  EXPECT_EQ(ScheduleStep::parse("F1.0")->str(), "F1"); // chunk 0 is written without the suffix
  EXPECT_EQ(ScheduleStep::parse("F1.0")->chunk, 0);
  EXPECT_EQ(ScheduleStep::parse("B4.2")->chunk, 2);
  for (llvm::StringRef bad : {"", "X1", "F", "F1.", "F1.x", "F.1", "F1.-1", "FB", "O1"})
    EXPECT_FALSE(ScheduleStep::parse(bad).has_value()) << bad.str();
}

TEST(ScheduleTable, RefusedTables) {
  std::string error;
  EXPECT_FALSE(buildScheduleTable("interleaved", 2, 2, 3, error));
  EXPECT_NE(error.find("multiple of pp"), std::string::npos) << error;
  EXPECT_FALSE(buildScheduleTable("interleaved", 2, 1, 4, error));
  EXPECT_NE(error.find("virtual stages >= 2"), std::string::npos) << error;
  EXPECT_FALSE(buildScheduleTable("1f1b", 2, 2, 4, error));
  EXPECT_NE(error.find("schedule=interleaved"), std::string::npos) << error;
  EXPECT_FALSE(buildScheduleTable("zb", 2, 1, 4, error));
  EXPECT_FALSE(buildScheduleTable("1f1b", 0, 1, 4, error));
}

TEST(ScheduleTable, ADeadlockingTableIsReported) {
  // Stage 0 runs the backward of micro-batch 0 before any forward: nothing can run it.
  ScheduleTableRows table = {
      {{ScheduleStep::Backward, 0, 0}, {ScheduleStep::Forward, 0, 0}, {ScheduleStep::Optimizer, -1, 0}},
      {{ScheduleStep::ForwardBackward, 0, 0}, {ScheduleStep::Optimizer, -1, 0}}};
  std::string stuck;
  EXPECT_FALSE(execute(table, 1, 1, 2, stuck).has_value());
  EXPECT_NE(stuck.find("rank 0 at B0, rank 1 at FB0)"), std::string::npos) << stuck;
}

} // namespace
