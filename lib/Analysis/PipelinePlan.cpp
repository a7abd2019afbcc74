//===- PipelinePlan.cpp - a timed plan from pipeline schedule tables -*- C++ -*-===//
//
// See PipelinePlan.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/PipelinePlan.h"

#include <map>

using namespace mlir::ptrain;

static llvm::Error planError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

llvm::Expected<Plan> mlir::ptrain::buildPipelinePlan(const PipelineCosts &costs, PipelinePlanIndex &index) {
  int p = costs.stages.size();
  if (p < 1 || static_cast<int>(costs.table.size()) != p)
    return planError("the schedule table has " + llvm::Twine(costs.table.size()) + " rows for " + llvm::Twine(p) +
                     " stages");
  Plan plan;
  plan.numRanks = p;
  plan.computeOrder.resize(p);
  plan.commOrder.resize(p);
  plan.peakMemory.resize(p);
  plan.memoryCapacity = costs.memoryCapacity;
  index = PipelinePlanIndex();
  index.tableSteps.resize(p);
  index.sendSteps.resize(p);
  index.dataParallelSteps.assign(p, -1);

  // 1. Compute steps in table order; remember forward and backward steps per (stage, micro-batch).
  std::vector<std::map<int64_t, int>> fwd(p), bwd(p); // the step that consumes/produces micro-batch i
  std::vector<int> lastBackward(p, -1), optimizerStep(p, -1);
  for (int s = 0; s < p; ++s) {
    const StageCosts &c = costs.stages[s];
    plan.peakMemory[s] = c.peakMemory;
    for (const ScheduleStep &e : costs.table[s]) {
      PlanStep step;
      step.kind = PlanStep::Compute;
      step.ranks = {s};
      step.name = e.str();
      step.stage = s;
      step.tableIndex = index.tableSteps[s].size();
      step.microBatch = e.microBatch;
      switch (e.kind) {
      case ScheduleStep::Forward:
        step.category = PlanStep::Forward;
        step.duration = c.forward;
        break;
      case ScheduleStep::Backward:
        step.category = PlanStep::Backward;
        step.duration = c.backward;
        break;
      case ScheduleStep::ForwardBackward:
        step.category = PlanStep::ForwardBackward;
        step.duration = c.forwardBackward;
        break;
      case ScheduleStep::Optimizer:
        step.category = PlanStep::Optimizer;
        step.duration = c.optimizer;
        break;
      }
      int id = plan.add(step);
      index.tableSteps[s].push_back(id);
      index.sendSteps[s].push_back(-1);
      bool isF = e.kind == ScheduleStep::Forward || e.kind == ScheduleStep::ForwardBackward;
      bool isB = e.kind == ScheduleStep::Backward || e.kind == ScheduleStep::ForwardBackward;
      if (e.kind == ScheduleStep::Optimizer) {
        optimizerStep[s] = id;
        continue;
      }
      if ((isF && !fwd[s].insert({e.microBatch, id}).second) || (isB && !bwd[s].insert({e.microBatch, id}).second))
        return planError("stage " + llvm::Twine(s) + ": " + e.str() + " appears twice");
      if (isB)
        lastBackward[s] = id;
    }
  }
  // The compute step before `id` on its rank (the receiver posts its receive when that one ends), or -1.
  auto previous = [&](int id) -> int {
    const PlanStep &step = plan.steps[id];
    int pos = step.tableIndex;
    return pos > 0 ? index.tableSteps[step.stage][pos - 1] : -1;
  };
  auto posted = [&](int producer, int consumer) {
    std::vector<int> deps = {producer};
    if (int prev = previous(consumer); prev >= 0)
      deps.push_back(prev);
    return deps;
  };

  // 2. Transfers: activations s -> s + 1, gradients s + 1 -> s. `producers` are the sender's steps per
  // micro-batch, `consumers` the receiver's.
  std::vector<std::vector<int>> sends(p);
  auto addTransfers = [&](int src, int dst, PlanStep::Category category, const std::map<int64_t, int> &producers,
                          const std::map<int64_t, int> &consumers, const CommCost &cost) -> llvm::Error {
    bool forward = category == PlanStep::SendForward;
    for (auto [mb, producer] : producers) {
      auto consumer = consumers.find(mb);
      if (consumer == consumers.end())
        return planError("stage " + llvm::Twine(src) + " runs the " + (forward ? "forward" : "backward") +
                         " of micro-batch " + llvm::Twine(mb) + " but stage " + llvm::Twine(dst) + " does not");
      PlanStep t;
      t.kind = PlanStep::Transfer;
      t.category = category;
      t.ranks = {src, dst};
      t.duration = cost.seconds;
      t.bytes = cost.bytes;
      t.interNode = cost.interNode;
      t.deps = posted(producer, consumer->second);
      t.name = std::string(forward ? "send F" : "send B") + std::to_string(mb) + " " + std::to_string(src) + "->" +
               std::to_string(dst);
      t.stage = src;
      t.microBatch = mb;
      int id = plan.add(t);
      plan.steps[consumer->second].deps.push_back(id);
      index.sendSteps[src][plan.steps[producer].tableIndex] = id;
      sends[src].push_back(id);
      // The lowering waits on the activation send at the micro-batch's backward.
      if (auto b = bwd[src].find(mb); forward && b != bwd[src].end())
        plan.steps[b->second].deps.push_back(id);
    }
    return llvm::Error::success();
  };
  for (int s = 0; s + 1 < p; ++s) {
    if (llvm::Error e = addTransfers(s, s + 1, PlanStep::SendForward, fwd[s], fwd[s + 1], costs.stages[s].sendForward))
      return std::move(e);
    if (llvm::Error e =
            addTransfers(s + 1, s, PlanStep::SendBackward, bwd[s + 1], bwd[s], costs.stages[s + 1].sendBackward))
      return std::move(e);
  }

  // 3. Gradient all-reduce over dp after each stage's last backward, then the tied all-reduce over pp.
  std::vector<int> beforeOptimizer(p, -1);
  for (int s = 0; s < p; ++s) {
    beforeOptimizer[s] = lastBackward[s];
    const CommCost &cc = costs.stages[s].dataParallel;
    if (cc.bytes <= 0 || lastBackward[s] < 0)
      continue;
    PlanStep c;
    c.kind = PlanStep::Collective;
    c.category = PlanStep::DataParallel;
    c.ranks = {s};
    c.duration = cc.seconds;
    c.bytes = cc.bytes;
    c.interNode = cc.interNode;
    c.deps = {lastBackward[s]};
    c.name = "dp all-reduce stage " + std::to_string(s);
    c.stage = s;
    int id = plan.add(c);
    index.dataParallelSteps[s] = id;
    beforeOptimizer[s] = id;
  }
  if (costs.tied.bytes > 0 && p > 1) {
    PlanStep c;
    c.kind = PlanStep::Collective;
    c.category = PlanStep::Tied;
    for (int s = 0; s < p; ++s) {
      c.ranks.push_back(s);
      if (beforeOptimizer[s] >= 0)
        c.deps.push_back(beforeOptimizer[s]);
      c.deps.insert(c.deps.end(), sends[s].begin(), sends[s].end());
    }
    c.duration = costs.tied.seconds;
    c.bytes = costs.tied.bytes;
    c.interNode = costs.tied.interNode;
    c.name = "tied all-reduce";
    index.tiedStep = plan.add(c);
    for (int s = 0; s < p; ++s)
      beforeOptimizer[s] = index.tiedStep;
  }
  for (int s = 0; s < p; ++s) {
    if (optimizerStep[s] < 0)
      continue;
    std::vector<int> &deps = plan.steps[optimizerStep[s]].deps;
    if (beforeOptimizer[s] >= 0)
      deps.push_back(beforeOptimizer[s]);
    deps.insert(deps.end(), sends[s].begin(), sends[s].end());
  }
  return plan;
}
