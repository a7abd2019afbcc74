//===- TimingPlanTest.cpp - the event simulation and its slack -------------===//
//
// Synthetic pipeline plans (PipelinePlan.h) with known answers: the bubble of 1F1B and GPipe with uniform
// stages and free communication is (p - 1) / m; on random stage costs, a step's slack is exactly how much
// its duration can grow before the iteration time grows (checked by re-simulating).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/TimingPlan.h"
#include "ptrain/Analysis/CriticalPathBreakdown.h"
#include "ptrain/Analysis/ModuleCosts.h"
#include "ptrain/Analysis/PipelinePlan.h"

#include "gtest/gtest.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <random>

using namespace mlir::ptrain;

namespace {

PipelineCosts uniformCosts(const char *kind, int p, int m, double f, double b, int v = 1) {
  PipelineCosts costs;
  std::string error;
  costs.table = *buildScheduleTable(kind, p, v, m, error);
  costs.virtualStages = v;
  costs.stages.resize(p * v);
  costs.ranks.resize(p);
  for (StageCosts &c : costs.stages) {
    c.forward = f;
    c.backward = b;
    c.forwardBackward = f + b;
  }
  return costs;
}

Timeline simulateOrDie(const Plan &plan) {
  Timeline t;
  std::string error;
  EXPECT_TRUE(simulate(plan, t, error)) << error;
  return t;
}

Plan planOrDie(const PipelineCosts &costs, PipelinePlanIndex &index) {
  auto plan = buildPipelinePlan(costs, index);
  EXPECT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  return std::move(*plan);
}

TEST(TimingPlanTest, OneFOneBBubbleIsPMinusOneOverM) {
  for (const char *kind : {"1f1b", "gpipe"})
    for (int p : {1, 2, 4, 8})
      for (int m : {1, 3, 8, 16, 64}) {
        if (std::string(kind) == "1f1b" && m < p)
          continue; // 1F1B without a steady state is GPipe-like; the formula assumes m >= p
        PipelinePlanIndex index;
        Plan plan = planOrDie(uniformCosts(kind, p, m, 1.0, 2.0), index);
        Timeline t = simulateOrDie(plan);
        EXPECT_NEAR(t.bubble, (p - 1.0) / m, 1e-12) << kind << " p=" << p << " m=" << m;
        // The pipeline takes (m + p - 1)(f + b); the optimizer steps are free here.
        EXPECT_NEAR(t.iterationTime, (m + p - 1) * 3.0, 1e-9) << kind << " p=" << p << " m=" << m;
      }
}

TEST(TimingPlanTest, CommunicationDelaysTheWarmUp) {
  // Two stages, one micro-batch, transfers of 0.5 s each way: F0, send, FB0, send, B0.
  PipelineCosts costs = uniformCosts("1f1b", 2, 1, 1.0, 2.0);
  costs.stages[0].sendForward.seconds = 0.5;
  costs.stages[1].sendBackward.seconds = 0.5;
  PipelinePlanIndex index;
  Plan plan = planOrDie(costs, index);
  Timeline t = simulateOrDie(plan);
  EXPECT_DOUBLE_EQ(t.iterationTime, 1.0 + 0.5 + 3.0 + 0.5 + 2.0);
  std::vector<std::string> path;
  for (int id : t.criticalPath)
    path.push_back(plan.steps[id].name);
  EXPECT_EQ(path, (std::vector<std::string>{"F0", "send F0 0->1", "FB0", "send B0 1->0", "B0", "O"}));
  // Stage 1's optimizer step (free, after its send ended at 5) could wait until 7.
  EXPECT_DOUBLE_EQ(t.slack[index.tableSteps[1][1]], 2.0);
  // Stage 1 waits 1.5 s for its input (0.5 of it the transfer), then its optimizer step waits 0.5 s for its
  // gradient send to end (the lowering waits on every send before the optimizer): 1 s exposed.
  EXPECT_DOUBLE_EQ(t.exposedCommTime[1], 1.0);
  EXPECT_DOUBLE_EQ(t.computeTime[1], 3.0);
}

TEST(TimingPlanTest, LinkDirectionCarriesOneTransferAtATime) {
  // Two transfers on one link, both ready at 1: the second starts when the first ends.
  Plan plan;
  plan.numRanks = 2;
  plan.computeOrder.resize(2);
  plan.commOrder.resize(2);
  plan.peakMemory.resize(2);
  PlanStep a;
  a.ranks = {0};
  a.duration = 1;
  a.name = "a";
  int ia = plan.add(a);
  for (int k = 0; k < 2; ++k) {
    PlanStep t;
    t.kind = PlanStep::Transfer;
    t.ranks = {0, 1};
    t.duration = 2;
    t.deps = {ia};
    t.name = "t" + std::to_string(k);
    plan.add(t);
  }
  Timeline t = simulateOrDie(plan);
  EXPECT_DOUBLE_EQ(t.start[1], 1);
  EXPECT_DOUBLE_EQ(t.start[2], 3);
  EXPECT_DOUBLE_EQ(t.iterationTime, 5);
}

TEST(TimingPlanTest, CollectiveWaitsForAllMembers) {
  Plan plan;
  for (int r = 0; r < 3; ++r) {
    PlanStep c;
    c.ranks = {r};
    c.duration = r + 1.0;
    c.name = "c" + std::to_string(r);
    plan.add(c);
  }
  PlanStep ar;
  ar.kind = PlanStep::Collective;
  ar.ranks = {0, 1, 2};
  ar.deps = {0, 1, 2};
  ar.duration = 0.5;
  ar.name = "ar";
  int id = plan.add(ar);
  Timeline t = simulateOrDie(plan);
  EXPECT_DOUBLE_EQ(t.start[id], 3.0);
  EXPECT_DOUBLE_EQ(t.slack[0], 2.0);
  EXPECT_DOUBLE_EQ(t.slack[1], 1.0);
  EXPECT_TRUE(t.critical[2]);
}

TEST(TimingPlanTest, DeadlockIsAnError) {
  Plan plan;
  PlanStep a, b;
  a.ranks = {0};
  a.name = "a";
  b.ranks = {0};
  b.name = "b";
  a.deps = {1}; // a waits for b, which runs after a on the same stream
  plan.add(a);
  plan.add(b);
  Timeline t;
  std::string error;
  EXPECT_FALSE(simulate(plan, t, error));
  EXPECT_NE(error.find("never starts"), std::string::npos) << error;
}

/// Slack against brute force: growing a step by a bit less than its slack keeps the iteration time; growing
/// it by a bit more makes it grow.
TEST(TimingPlanTest, SlackMatchesResimulation) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.5, 3.0), comm(0.0, 1.0);
  for (int trial = 0; trial < 12; ++trial) {
    int p = 2 + trial % 4, m = 2 + (trial * 5) % 7;
    PipelineCosts costs = uniformCosts(trial % 3 == 2 ? "gpipe" : "1f1b", p, m, 1, 1);
    for (int s = 0; s < p; ++s) {
      StageCosts &c = costs.stages[s];
      c.forward = cost(rng);
      c.backward = cost(rng);
      c.forwardBackward = c.forward + c.backward;
      costs.ranks[s].optimizer = cost(rng) / 4;
      c.sendForward.seconds = comm(rng);
      c.sendBackward.seconds = comm(rng);
      costs.ranks[s].dataParallel = {comm(rng) * 4, 1.0, true};
      // Compressed gradient sends and a compressed dp all-reduce on some stages: their codec steps obey the
      // same slack rule.
      if (s > 0 && trial % 2 == 1)
        c.compressedBackward[m - 1] = {comm(rng), comm(rng), {comm(rng) / 4, 0.1, true}, "test"};
      if (s == 0 && trial % 4 == 3) {
        CompressedAllReduce ca;
        ca.phasePSeconds = comm(rng);
        ca.phaseQSeconds = comm(rng);
        ca.finishSeconds = comm(rng);
        ca.first = {comm(rng), 0.1, true};
        ca.second = {comm(rng), 0.1, true};
        costs.ranks[s].compressedDataParallel = ca;
      }
    }
    costs.tied = {comm(rng), 1.0, true};
    PipelinePlanIndex index;
    Plan plan = planOrDie(costs, index);
    Timeline base = simulateOrDie(plan);
    double delta = 1e-6 * base.iterationTime;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      Plan grown = plan;
      grown.steps[i].duration += base.slack[i] + delta;
      Timeline more = simulateOrDie(grown);
      EXPECT_GT(more.iterationTime, base.iterationTime + delta / 2)
          << "trial " << trial << " step " << plan.steps[i].name;
      if (base.slack[i] > 2 * delta) {
        grown.steps[i].duration = plan.steps[i].duration + base.slack[i] - delta;
        Timeline less = simulateOrDie(grown);
        EXPECT_NEAR(less.iterationTime, base.iterationTime, 1e-9 * base.iterationTime)
            << "trial " << trial << " step " << plan.steps[i].name;
      }
    }
    // The critical path is a chain of critical steps from time 0 to the end.
    ASSERT_FALSE(base.criticalPath.empty());
    EXPECT_DOUBLE_EQ(base.start[base.criticalPath.front()], 0);
    EXPECT_DOUBLE_EQ(base.end[base.criticalPath.back()], base.iterationTime);
    for (int id : base.criticalPath)
      EXPECT_TRUE(base.critical[id]);
  }
}

TEST(TimingPlanTest, CompressedSendRunsCodecKernelsOnBothComputeStreams) {
  // Two stages, one micro-batch: F0 (1), send (0.5), FB0 (3), encode (0.25) on stage 1, the codes (0.125),
  // decode (0.375) on stage 0, B0 (2).
  PipelineCosts costs = uniformCosts("1f1b", 2, 1, 1.0, 2.0);
  costs.stages[0].sendForward.seconds = 0.5;
  costs.stages[1].sendBackward = {4.0, 1000, true};
  costs.stages[1].compressedBackward[0] = {0.25, 0.375, {0.125, 10, true}, "#ptrain.powersgd<rank = 1>"};
  PipelinePlanIndex index;
  Plan plan = planOrDie(costs, index);
  Timeline t = simulateOrDie(plan);
  EXPECT_DOUBLE_EQ(t.iterationTime, 1.0 + 0.5 + 3.0 + 0.25 + 0.125 + 0.375 + 2.0);
  std::vector<std::string> path;
  for (int id : t.criticalPath)
    path.push_back(plan.steps[id].name);
  EXPECT_EQ(path, (std::vector<std::string>{"F0", "send F0 0->1", "FB0", "encode B0", "send B0 1->0", "decode B0", "B0",
                                            "O"}));
  // The transfer carries the codes; the encode is on stage 1's compute stream after FB0, the decode on stage
  // 0's before B0.
  const PlanStep &send = plan.steps[index.sendSteps[1][0]];
  EXPECT_EQ(send.bytes, 10);
  EXPECT_EQ(plan.steps[index.encodeSteps[1][0]].category, PlanStep::Encode);
  EXPECT_EQ(plan.computeOrder[1],
            (std::vector<int>{index.tableSteps[1][0], index.encodeSteps[1][0], index.tableSteps[1][1]}));
  ASSERT_EQ(plan.computeOrder[0].size(), 4u);
  EXPECT_EQ(plan.steps[plan.computeOrder[0][1]].category, PlanStep::Decode);
  // Codec kernels count as busy compute, not as bubble.
  EXPECT_DOUBLE_EQ(t.computeTime[1], 3.25);
}

TEST(TimingPlanTest, CompressedDataParallelRunsItsPhasesBeforeTheOptimizer) {
  // One stage, dp PowerSGD: phase P (1), all-reduce P (2), phase Q (3), all-reduce Q (4), finish (5), O.
  PipelineCosts costs = uniformCosts("1f1b", 1, 2, 1.0, 2.0);
  costs.ranks[0].optimizer = 0.5;
  CompressedAllReduce ca;
  ca.phasePSeconds = 1;
  ca.first = {2, 100, true};
  ca.phaseQSeconds = 3;
  ca.second = {4, 100, true};
  ca.finishSeconds = 5;
  costs.ranks[0].compressedDataParallel = ca;
  PipelinePlanIndex index;
  Plan plan = planOrDie(costs, index);
  Timeline t = simulateOrDie(plan);
  EXPECT_DOUBLE_EQ(t.iterationTime, 2 * 3.0 + 1 + 2 + 3 + 4 + 5 + 0.5);
  ASSERT_EQ(index.dataParallelPhases[0].size(), 5u);
  EXPECT_EQ(index.dataParallelSteps[0], index.dataParallelPhases[0][1]);
  // O is last on the compute stream, after the three codec phases.
  EXPECT_EQ(plan.computeOrder[0].back(), index.tableSteps[0].back());
  EXPECT_EQ(plan.steps[plan.computeOrder[0][2]].category, PlanStep::DataParallelCodec);
}

TEST(TimingPlanTest, CompressedForwardSendDecodesBeforeTheConsumer) {
  // Two stages, one micro-batch: F0 (1), encode F0 (0.25) on stage 0, the codes (0.125), decode F0 (0.375)
  // on stage 1, FB0 (3), the gradient back (0.5), B0 (2), O.
  PipelineCosts costs = uniformCosts("1f1b", 2, 1, 1.0, 2.0);
  costs.stages[0].sendForward = {4.0, 1000, true};
  costs.stages[1].sendBackward.seconds = 0.5;
  costs.stages[0].compressedForward[0] = {0.25, 0.375, {0.125, 10, true}, "#ptrain.quant<bits = 8>"};
  PipelinePlanIndex index;
  Plan plan = planOrDie(costs, index);
  Timeline t = simulateOrDie(plan);
  EXPECT_DOUBLE_EQ(t.iterationTime, 1.0 + 0.25 + 0.125 + 0.375 + 3.0 + 0.5 + 2.0);
  std::vector<std::string> path;
  for (int id : t.criticalPath)
    path.push_back(plan.steps[id].name);
  EXPECT_EQ(path, (std::vector<std::string>{"F0", "encode F0", "send F0 0->1", "decode F0", "FB0", "send B0 1->0", "B0",
                                            "O"}));
  EXPECT_EQ(plan.steps[index.sendSteps[0][0]].bytes, 10);
  EXPECT_EQ(plan.steps[index.encodeSteps[0][0]].name, "encode F0");
  ASSERT_EQ(plan.computeOrder[1].size(), 3u);
  EXPECT_EQ(plan.steps[plan.computeOrder[1][0]].name, "decode F0");
}

TEST(TimingPlanTest, DataParallelWaitsForTheSendsAndTheLossEndsTheIteration) {
  // Two stages, one micro-batch. Stage 1 sends its gradient (5) after FB0; the lowering waits on it before
  // the optimizer step posts the dp all-reduce (0.5), so stage 1's all-reduce starts at the end of the send,
  // not at the end of FB0. After both optimizer steps (0.25) the loss all-reduce (0.125) joins the ranks.
  PipelineCosts costs = uniformCosts("1f1b", 2, 1, 1.0, 2.0);
  costs.stages[1].sendBackward.seconds = 5.0;
  for (RankCosts &rc : costs.ranks) {
    rc.dataParallel = {0.5, 100, true, 150};
    rc.optimizer = 0.25;
  }
  costs.loss = {0.125, 4, true, 6};
  PipelinePlanIndex index;
  Plan plan = planOrDie(costs, index);
  Timeline t = simulateOrDie(plan);
  const double fb0End = 1.0 + 3.0, sendEnd = fb0End + 5.0;
  EXPECT_DOUBLE_EQ(t.start[index.dataParallelSteps[1]], sendEnd);
  // Stage 0: B0 after the gradient (ends 11), its all-reduce, O; stage 1's O ends earlier.
  EXPECT_DOUBLE_EQ(t.start[index.dataParallelSteps[0]], sendEnd + 2.0);
  ASSERT_GE(index.lossStep, 0);
  const PlanStep &loss = plan.steps[index.lossStep];
  EXPECT_EQ(loss.category, PlanStep::Loss);
  EXPECT_EQ(loss.ranks, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(loss.sentBytes, 6);
  EXPECT_DOUBLE_EQ(t.start[index.lossStep], sendEnd + 2.0 + 0.5 + 0.25);
  EXPECT_DOUBLE_EQ(t.iterationTime, sendEnd + 2.0 + 0.5 + 0.25 + 0.125);
  EXPECT_TRUE(t.critical[index.lossStep]);
  // Stage 0's exposed communication: B0 waits for the gradient (5), O for the dp all-reduce (0.5), and the
  // loss all-reduce after the last compute step (0.125) counts as exposed, not as idle time.
  EXPECT_DOUBLE_EQ(t.exposedCommTime[0], 5.0 + 0.5 + 0.125);
  EXPECT_DOUBLE_EQ(t.idleTime[0], 3.0); // while stage 1 runs FB0
}

TEST(TimingPlanTest, TransfersThroughOneNicGoOneAtATime) {
  // Two transfers between different rank pairs, both ready at 0, through the same NIC resource (link 0):
  // the second waits for the first; without the shared resource they overlap.
  for (bool shared : {true, false}) {
    Plan plan;
    for (int k = 0; k < 2; ++k) {
      PlanStep t;
      t.kind = PlanStep::Transfer;
      t.ranks = {2 * k, 2 * k + 1};
      t.duration = 1;
      t.name = "t" + std::to_string(k);
      if (shared)
        t.links = {0, 1 + k};
      plan.add(t);
    }
    Timeline t = simulateOrDie(plan);
    EXPECT_DOUBLE_EQ(t.iterationTime, shared ? 2 : 1);
  }
  // Stages alternating between two nodes (axis order with pp innermost): 0 -> 1 and 2 -> 3 leave node 0
  // through its egress (resource 0) and enter node 1 (resource 3); 1 -> 2 goes the other way.
  PipelineCosts costs = uniformCosts("1f1b", 4, 4, 1.0, 2.0);
  costs.rankNodes = {0, 1, 0, 1};
  PipelinePlanIndex index;
  Plan plan = planOrDie(costs, index);
  for (const PlanStep &s : plan.steps) {
    if (s.kind != PlanStep::Transfer)
      continue;
    int src = s.ranks[0], dst = s.ranks[1];
    EXPECT_EQ(s.links, (std::vector<int>{2 * (src % 2), 2 * (dst % 2) + 1})) << s.name;
  }
  // On one node, no NIC: each direction is its own link.
  costs.rankNodes = {0, 0, 0, 0};
  plan = planOrDie(costs, index);
  for (const PlanStep &s : plan.steps)
    EXPECT_TRUE(s.links.empty()) << s.name;
}

TEST(TimingPlanTest, OppositeSendsOverlapOnAFullDuplexLink) {
  // Two stages on two nodes, 1F1B over 2 micro-batches, F 1 s, FB 3 s, B 2 s, every send 4 s (a slow link).
  // By hand, with the rendezvous rules of docs/TimingModel.md (a receive is posted when the step before its
  // consumer ends): F0 [0, 1], send F0 [1, 5], F1 [1, 2], FB0 [5, 8]; stage 1 posts the receive of F1 at 8, when
  // its send B0 (1 -> 0) is also ready: the two cross. Full duplex (node 0's egress and node 1's ingress are
  // not node 1's egress and node 0's ingress): both run [8, 12], FB1 [12, 15], B0 [12, 14], send B1 [15, 19],
  // B1 [19, 21]: 21 s, the sends of F1 and B0 on no common resource. Half duplex (one resource per node):
  // send F1 [8, 12] first (readiness order), send B0 [12, 16], FB1 [12, 15], B0 [16, 18], send B1 posted by
  // the receiver at 18: [18, 22], B1 [22, 24]: 24 s.
  for (bool half : {false, true}) {
    PipelineCosts costs = uniformCosts("1f1b", 2, 2, 1.0, 2.0);
    costs.rankNodes = {0, 1};
    costs.halfDuplex = half;
    costs.stages[0].sendForward.seconds = 4;
    costs.stages[1].sendBackward.seconds = 4;
    PipelinePlanIndex index;
    Plan plan = planOrDie(costs, index);
    Timeline t = simulateOrDie(plan);
    EXPECT_DOUBLE_EQ(t.iterationTime, half ? 24 : 21) << (half ? "half" : "full") << " duplex";
    for (auto [id, step] : llvm::enumerate(plan.steps)) {
      if (step.name == "send B0 1->0") {
        EXPECT_DOUBLE_EQ(t.start[id], half ? 12 : 8) << step.name;
      }
      if (step.name == "send F1 0->1") {
        EXPECT_DOUBLE_EQ(t.start[id], 8) << step.name;
      }
    }
    std::vector<std::string> path;
    for (int id : t.criticalPath)
      path.push_back(plan.steps[id].name);
    EXPECT_EQ(path, half ? (std::vector<std::string>{"F0", "send F0 0->1", "FB0", "send F1 0->1", "send B0 1->0",
                                                     "B0", "send B1 1->0", "B1", "O"})
                         : (std::vector<std::string>{"F0", "send F0 0->1", "FB0", "send F1 0->1", "FB1",
                                                     "send B1 1->0", "B1", "O"}))
        << (half ? "half" : "full") << " duplex";
  }
}

TEST(TimingPlanTest, CrossingSendsMoveSlowerWhileBothAreInFlight) {
  // The plan of OppositeSendsOverlapOnAFullDuplexLink (2 stages on 2 nodes, 1F1B over 2 micro-batches, F 1 s,
  // FB 3 s, B 2 s) with a crossing slowdown k = 2 on every send (PlanStep::crossingSlowdown), both crossing
  // sends re-rated (processor sharing of the link between its directions). By hand, full duplex: F0 [0, 1],
  // send F0 [1, 5] (nothing crosses it: 4 s), F1 [1, 2], FB0 [5, 8]; send F1 (0 -> 1) and send B0 (1 -> 0)
  // both start at 8 and move at half rate while both move: each 4 s of work takes 8 s, [8, 16], 4 s lost each.
  // FB1 [16, 19], B0 [16, 18], send B1 posted at 19 (FB1's end) with nothing in flight from 0 to 1: [19, 23],
  // B1 [23, 25]: 25 s (21 without the slowdown; 22 when only the send starting second was slowed). With send B0
  // of 1 s: both at half rate until B0 has moved its 1 s, [8, 10] (1 s lost); send F1 has moved 1 s of its 4 by
  // then and moves the other 3 at full rate: [8, 13], 1 s lost. FB1 [13, 16], B0 [10, 12], send B1 [16, 17], B1
  // [17, 19]: 19 s. Half duplex: the sends never overlap, so nothing changes (24 s, as without the slowdown).
  struct Case {
    bool half;
    double backwardSeconds, iteration, sendF1End, sendF1Crossing, sendB0End, sendB0Crossing;
  };
  for (Case c : {Case{false, 4, 25, 16, 4, 16, 4}, Case{false, 1, 19, 13, 1, 10, 1}, Case{true, 4, 24, 12, 0, 16, 0}}) {
    PipelineCosts costs = uniformCosts("1f1b", 2, 2, 1.0, 2.0);
    costs.rankNodes = {0, 1};
    costs.halfDuplex = c.half;
    costs.stages[0].sendForward.seconds = 4;
    costs.stages[0].sendForward.crossingSlowdown = 2;
    costs.stages[1].sendBackward.seconds = c.backwardSeconds;
    costs.stages[1].sendBackward.crossingSlowdown = 2;
    PipelinePlanIndex index;
    Plan plan = planOrDie(costs, index);
    Timeline t = simulateOrDie(plan);
    std::string what = std::string(c.half ? "half" : "full") + " duplex, send B " +
                       std::to_string(c.backwardSeconds) + " s";
    EXPECT_DOUBLE_EQ(t.iterationTime, c.iteration) << what;
    int sendF0 = index.sendSteps[0][0], sendF1 = index.sendSteps[0][1], sendB0 = index.sendSteps[1][0];
    ASSERT_EQ(plan.steps[sendB0].name, "send B0 1->0");
    EXPECT_DOUBLE_EQ(t.end[sendF0], 5) << what;
    EXPECT_DOUBLE_EQ(t.crossing[sendF0], 0) << what;
    EXPECT_DOUBLE_EQ(t.start[sendF1], 8) << what;
    EXPECT_DOUBLE_EQ(t.end[sendF1], c.sendF1End) << what;
    EXPECT_DOUBLE_EQ(t.crossing[sendF1], c.sendF1Crossing) << what;
    EXPECT_DOUBLE_EQ(t.end[sendB0], c.sendB0End) << what;
    EXPECT_DOUBLE_EQ(t.crossing[sendB0], c.sendB0Crossing) << what;
    // The slack spans the lost seconds: send F1, re-rated after it started, decides FB1 and is critical; its
    // dependents started at its re-rated end, not at the end predicted when it started (12).
    if (!c.half) {
      EXPECT_TRUE(t.critical[sendF1]) << what;
      for (auto [id, step] : llvm::enumerate(plan.steps))
        if (step.name == "FB1") {
          EXPECT_DOUBLE_EQ(t.start[id], c.sendF1End) << what << ": FB1 waits for send F1";
        }
    }
  }
}

TEST(TimingPlanTest, CrossingReRatesTheTransferInFlight) {
  // Processor sharing on a synthetic plan, k = 2 on both directions. A: 0 -> 1, 4 s, starts at 0; B: 1 -> 0,
  // 2 s, after a 1 s compute step on rank 1; C: 1 s of compute on rank 1 after A. By hand: A alone moves 1 s of
  // its work over [0, 1]; from 1 both move at half rate; B's 2 s take 4 s, [1, 5]; A moves 2 s meanwhile and
  // its last 1 s alone: [0, 6]. Each loses 2 s. C starts at A's re-rated end, 6 (at 4, the end A had when it
  // started, before B re-rated it), and ends at 7. Without the slowdown: A [0, 4], B [1, 3], C [4, 5].
  for (double k : {1.0, 2.0}) {
    Plan plan;
    PlanStep a;
    a.kind = PlanStep::Transfer;
    a.ranks = {0, 1};
    a.duration = 4;
    a.crossingSlowdown = k;
    a.name = "A";
    int idA = plan.add(a);
    PlanStep w;
    w.ranks = {1};
    w.duration = 1;
    w.name = "W";
    int idW = plan.add(w);
    PlanStep b = a;
    b.ranks = {1, 0};
    b.duration = 2;
    b.deps = {idW};
    b.name = "B";
    int idB = plan.add(b);
    PlanStep c;
    c.ranks = {1};
    c.duration = 1;
    c.deps = {idA};
    c.name = "C";
    int idC = plan.add(c);
    Timeline t = simulateOrDie(plan);
    std::string what = "k = " + std::to_string(k);
    EXPECT_DOUBLE_EQ(t.start[idB], 1) << what;
    EXPECT_DOUBLE_EQ(t.end[idA], k == 2 ? 6 : 4) << what;
    EXPECT_DOUBLE_EQ(t.crossing[idA], k == 2 ? 2 : 0) << what;
    EXPECT_DOUBLE_EQ(t.end[idB], k == 2 ? 5 : 3) << what;
    EXPECT_DOUBLE_EQ(t.crossing[idB], k == 2 ? 2 : 0) << what;
    EXPECT_DOUBLE_EQ(t.start[idC], k == 2 ? 6 : 4) << what;
    EXPECT_DOUBLE_EQ(t.iterationTime, k == 2 ? 7 : 5) << what;
    // C waits for A, which decides the iteration: A, C critical; B (ends at 5, nothing after it) is not.
    EXPECT_TRUE(t.critical[idA]) << what;
    EXPECT_TRUE(t.critical[idC]) << what;
    EXPECT_FALSE(t.critical[idB]) << what;
  }
}

TEST(TimingPlanTest, CrossingMeetsTheRendezvousStall) {
  // A: 0 -> 1, 4 s with an eager part of 1 s, starting at 0 while its sender runs S [0, 3] (the rendezvous
  // stall: the rest waits for S's end); B: 1 -> 0, 2 s from 0; k = 2. By hand: both move at half rate over
  // [0, 2], when A has moved its eager 1 s and pauses until 3, moving nothing; B has moved 1 s and moves its
  // last 1 s alone over [2, 3]; A moves its rest of 3 s alone over [3, 6]. A: stall 1 s (paused [2, 3]), 1 s
  // lost to crossing (6 - 0 - 4 - 1); B: [0, 3], 1 s lost. Without the slowdown: A's eager part ends at 1, the
  // stall is [1, 3] and A ends at 6; B [0, 2].
  for (double k : {1.0, 2.0}) {
    Plan plan;
    PlanStep sender;
    sender.ranks = {0};
    sender.duration = 3;
    sender.name = "S";
    int idS = plan.add(sender);
    PlanStep a;
    a.kind = PlanStep::Transfer;
    a.ranks = {0, 1};
    a.duration = 4;
    a.eagerSeconds = 1;
    a.crossingSlowdown = k;
    a.name = "A";
    int idA = plan.add(a);
    PlanStep b = a;
    b.ranks = {1, 0};
    b.duration = 2;
    b.eagerSeconds = -1;
    b.name = "B";
    int idB = plan.add(b);
    Timeline t = simulateOrDie(plan);
    std::string what = "k = " + std::to_string(k);
    EXPECT_DOUBLE_EQ(t.end[idS], 3) << what;
    EXPECT_DOUBLE_EQ(t.end[idA], 6) << what;
    EXPECT_DOUBLE_EQ(t.stall[idA], k == 2 ? 1 : 2) << what;
    EXPECT_DOUBLE_EQ(t.crossing[idA], k == 2 ? 1 : 0) << what;
    EXPECT_DOUBLE_EQ(t.end[idB], k == 2 ? 3 : 2) << what;
    EXPECT_DOUBLE_EQ(t.crossing[idB], k == 2 ? 1 : 0) << what;
    // A's rest waited for S: S is its critical predecessor.
    EXPECT_TRUE(t.critical[idS]) << what;
    EXPECT_TRUE(t.critical[idA]) << what;
  }
}

TEST(TimingPlanTest, CpuOverheadLengthensBothEndpoints) {
  // Two stages, one micro-batch, each send 0.5 s on the link and 0.0625 s of CPU overhead at each end (LogP's
  // o, CommCost::cpuOverhead). By hand: F0 [0, 1.0625] (1 + the send's o), send F0 [1.0625, 1.5625], FB0 3 +
  // o (receive) + o (send) = 3.125 [1.5625, 4.6875], send B0 [4.6875, 5.1875], B0 2 + o [5.1875, 7.25]: the
  // iteration is the link-free chain plus 4 o. Without the overhead: 1 + 0.5 + 3 + 0.5 + 2 = 7.
  for (double o : {0.0, 0.0625}) {
    PipelineCosts costs = uniformCosts("1f1b", 2, 1, 1.0, 2.0);
    costs.stages[0].sendForward = {0.5, 1000, true};
    costs.stages[0].sendForward.cpuOverhead = o;
    costs.stages[1].sendBackward = {0.5, 1000, true};
    costs.stages[1].sendBackward.cpuOverhead = o;
    PipelinePlanIndex index;
    Plan plan = planOrDie(costs, index);
    Timeline t = simulateOrDie(plan);
    EXPECT_DOUBLE_EQ(t.iterationTime, 7.0 + 4 * o) << "o = " << o;
    EXPECT_DOUBLE_EQ(t.start[index.sendSteps[0][0]], 1.0 + o);
    EXPECT_DOUBLE_EQ(plan.steps[index.tableSteps[1][0]].duration, 3.0 + 2 * o);
    // The overhead is busy compute, not bubble.
    EXPECT_DOUBLE_EQ(t.computeTime[0], 3.0 + 2 * o);
  }
}

TEST(TimingPlanTest, RendezvousRestWaitsForTheSendersComputeStep) {
  // Two stages, two micro-batches of 1F1B (stage 0: F0 F1 B0 B1, stage 1: FB0 FB1), f = 1, b = 2, every send
  // 0.5 s on the link; the forward sends are over the eager limit with an eager part of 0.125 s
  // (PlanStep::eagerSeconds), the backward ones are not. By hand, without the limit: send F0 [1, 1.5], FB0
  // [1.5, 4.5], send B0 [4.5, 5], send F1 [4.5, 5] (posted by the receiver at FB0's end), FB1 [5, 8], send B1
  // [8, 8.5], B0 [5, 7], B1 [8.5, 10.5]: 10.5 s. With it: send F0 starts at 1 while rank 0 starts F1 [1, 2], so
  // its rest (0.375 s) waits for F1's end: it ends at max(1.125, 2) + 0.375 = 2.375, a stall of 0.875 s; FB0
  // [2.375, 5.375], send B0 [5.375, 5.875]; send F1 starts at 5.375 while rank 0 is idle (waiting for the
  // gradient inside MPI): no stall, [5.375, 5.875]; FB1 [5.875, 8.875], send B1 [8.875, 9.375], B1
  // [9.375, 11.375]: 11.375 s.
  for (bool limit : {false, true}) {
    PipelineCosts costs = uniformCosts("1f1b", 2, 2, 1.0, 2.0);
    costs.stages[0].sendForward = {0.5, 131072, true};
    costs.stages[0].sendForward.eagerSeconds = limit ? 0.125 : -1;
    costs.stages[1].sendBackward = {0.5, 131072, true};
    PipelinePlanIndex index;
    Plan plan = planOrDie(costs, index);
    Timeline t = simulateOrDie(plan);
    int sendF0 = index.sendSteps[0][0], sendF1 = index.sendSteps[0][1];
    ASSERT_EQ(plan.steps[sendF0].name, "send F0 0->1");
    ASSERT_EQ(plan.steps[sendF1].name, "send F1 0->1");
    EXPECT_DOUBLE_EQ(t.iterationTime, limit ? 11.375 : 10.5);
    EXPECT_DOUBLE_EQ(t.start[sendF0], 1.0);
    EXPECT_DOUBLE_EQ(t.end[sendF0], limit ? 2.375 : 1.5);
    EXPECT_DOUBLE_EQ(t.stall[sendF0], limit ? 0.875 : 0.0);
    EXPECT_DOUBLE_EQ(t.start[sendF1], limit ? 5.375 : 4.5);
    EXPECT_DOUBLE_EQ(t.end[sendF1], limit ? 5.875 : 5.0);
    EXPECT_DOUBLE_EQ(t.stall[sendF1], 0.0);
    // With the stall the critical path runs through the sender's F1 into the send's rest.
    std::vector<std::string> path;
    for (int id : t.criticalPath)
      path.push_back(plan.steps[id].name);
    auto f1 = std::find(path.begin(), path.end(), "F1");
    EXPECT_EQ(f1 != path.end() && f1 + 1 != path.end() && *(f1 + 1) == "send F0 0->1", limit)
        << llvm::join(path, ", ");
    EXPECT_DOUBLE_EQ(t.slack[index.tableSteps[0][1]], limit ? 0.0 : 2.5);
  }
}

/// The link entry `name` of a breakdown ("0->1"); a failed expectation and an empty entry where missing.
CriticalPathBreakdown::Link linkOf(const CriticalPathBreakdown &b, const std::string &name) {
  for (const CriticalPathBreakdown::Link &l : b.links)
    if (l.name == name)
      return l;
  ADD_FAILURE() << "no link " << name << " on the critical path";
  return {};
}

/// The critical path breakdown of `costs`' plan, with a failed expectation unless its parts sum to the
/// iteration time.
CriticalPathBreakdown breakdownOf(const PipelineCosts &costs) {
  PipelinePlanIndex index;
  Plan plan = planOrDie(costs, index);
  Timeline t = simulateOrDie(plan);
  CriticalPathBreakdown b = breakDownCriticalPath(plan, t);
  EXPECT_DOUBLE_EQ(b.total(), t.iterationTime);
  return b;
}

TEST(TimingPlanTest, CriticalPathBreakdownSplitsTheIterationByKind) {
  // The parts telescope to the iteration time; each case's path and parts by hand.
  // (1) CpuOverheadLengthensBothEndpoints' plan, o = 0.0625: F0 [0, 1.0625], send F0 [.., 1.5625], FB0 3.125,
  // send B0 0.5, B0 2.0625: compute 1 + 3 + 2 = 6, overhead 4 o = 0.25, one 0.5 s send each way: 7.25.
  {
    PipelineCosts costs = uniformCosts("1f1b", 2, 1, 1.0, 2.0);
    costs.stages[0].sendForward = {0.5, 1000, true};
    costs.stages[0].sendForward.cpuOverhead = 0.0625;
    costs.stages[1].sendBackward = {0.5, 1000, true};
    costs.stages[1].sendBackward.cpuOverhead = 0.0625;
    CriticalPathBreakdown b = breakdownOf(costs);
    EXPECT_DOUBLE_EQ(b.compute, 6.0);
    EXPECT_DOUBLE_EQ(b.cpuOverhead, 0.25);
    EXPECT_DOUBLE_EQ(b.codecKernels, 0.0);
    EXPECT_DOUBLE_EQ(linkOf(b, "0->1").seconds, 0.5);
    EXPECT_DOUBLE_EQ(linkOf(b, "1->0").seconds, 0.5);
    EXPECT_DOUBLE_EQ(b.total(), 7.25);
  }
  // (2) CrossingSendsMoveSlowerWhileBothAreInFlight's plan, k = 2, 4 s sends: F0 [0, 1], send F0 [1, 5],
  // FB0 [5, 8], send F1 [8, 16] (4 s of link, 4 s lost to send B0 crossing it), FB1 [16, 19], send B1
  // [19, 23], B1 [23, 25]: compute 9; 0->1 two sends, 8 s of link + 4 s crossing; 1->0 one send, 4 s.
  {
    PipelineCosts costs = uniformCosts("1f1b", 2, 2, 1.0, 2.0);
    costs.rankNodes = {0, 1};
    costs.stages[0].sendForward.seconds = 4;
    costs.stages[0].sendForward.crossingSlowdown = 2;
    costs.stages[1].sendBackward.seconds = 4;
    costs.stages[1].sendBackward.crossingSlowdown = 2;
    CriticalPathBreakdown b = breakdownOf(costs);
    EXPECT_DOUBLE_EQ(b.compute, 9.0);
    EXPECT_DOUBLE_EQ(b.cpuOverhead, 0.0);
    CriticalPathBreakdown::Link forward = linkOf(b, "0->1"), backward = linkOf(b, "1->0");
    EXPECT_EQ(forward.transfers, 2);
    EXPECT_DOUBLE_EQ(forward.seconds, 8.0);
    EXPECT_DOUBLE_EQ(forward.crossing, 4.0);
    EXPECT_EQ(backward.transfers, 1);
    EXPECT_DOUBLE_EQ(backward.seconds, 4.0);
    EXPECT_DOUBLE_EQ(backward.crossing, 0.0);
    EXPECT_DOUBLE_EQ(b.total(), 25.0);
  }
  // (3) RendezvousRestWaitsForTheSendersComputeStep's plan with the limit: F0 [0, 1], F1 [1, 2], the rest of
  // send F0 after F1 [2, 2.375] (its stall is F1's time, counted as compute), FB0 [2.375, 5.375], send F1
  // [5.375, 5.875], FB1 [5.875, 8.875], send B1 [8.875, 9.375], B1 [9.375, 11.375]: compute 1 + 1 + 3 + 3 + 2
  // = 10, 0->1 0.375 + 0.5, 1->0 0.5.
  {
    PipelineCosts costs = uniformCosts("1f1b", 2, 2, 1.0, 2.0);
    costs.stages[0].sendForward = {0.5, 131072, true};
    costs.stages[0].sendForward.eagerSeconds = 0.125;
    costs.stages[1].sendBackward = {0.5, 131072, true};
    CriticalPathBreakdown b = breakdownOf(costs);
    EXPECT_DOUBLE_EQ(b.compute, 10.0);
    EXPECT_EQ(linkOf(b, "0->1").transfers, 2);
    EXPECT_DOUBLE_EQ(linkOf(b, "0->1").seconds, 0.875);
    EXPECT_DOUBLE_EQ(linkOf(b, "1->0").seconds, 0.5);
    EXPECT_DOUBLE_EQ(b.total(), 11.375);
  }
}

TEST(TimingPlanTest, InterleavedBubbleIsDividedByTheChunks) {
  // Equal chunk costs, free communication: (p - 1) / (v m) (Narayanan et al., SC'21, sec. 2.2.2).
  for (int p : {2, 4})
    for (int v : {2, 3})
      for (int m : {p, 2 * p, 4 * p}) {
        PipelinePlanIndex index;
        Plan plan = planOrDie(uniformCosts("interleaved", p, m, 1.0, 2.0, v), index);
        Timeline t = simulateOrDie(plan);
        EXPECT_NEAR(t.bubble, (p - 1.0) / (v * m), 1e-12) << "p=" << p << " v=" << v << " m=" << m;
      }
}

TEST(TimingPlanTest, NcclBusBandwidthFactors) {
  // 8 ranks, 1 GB at 100 GB/s, no latency: all-reduce moves 2 * 7/8 GB, reduce-scatter 7/8 GB.
  EXPECT_DOUBLE_EQ(allReduceSeconds(1e9, 8, 1e11, 0), 2.0 * 7 / 8 * 1e-2);
  EXPECT_DOUBLE_EQ(reduceScatterSeconds(1e9, 8, 1e11, 0), 7.0 / 8 * 1e-2);
  EXPECT_DOUBLE_EQ(allReduceSeconds(1e9, 1, 1e11, 1), 0);
  EXPECT_DOUBLE_EQ(allReduceSeconds(0, 4, 1e11, 1e-5), 6e-5);
}

} // namespace
