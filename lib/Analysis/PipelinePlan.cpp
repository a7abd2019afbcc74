//===- PipelinePlan.cpp - a timed plan from pipeline schedule tables -*- C++ -*-===//
//
// See PipelinePlan.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/PipelinePlan.h"

#include <algorithm>
#include <map>

using namespace mlir::ptrain;

static llvm::Error planError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

namespace {
/// Builds the plan; one object per call of buildPipelinePlan.
class PipelinePlanBuilder {
public:
  PipelinePlanBuilder(const PipelineCosts &costs, PipelinePlanIndex &index)
      : costs(costs), index(index), p(costs.ranks.size()), v(costs.virtualStages) {}

  llvm::Expected<Plan> build();

private:
  /// A compute step of rank `rank` (not a table entry).
  int addCompute(int rank, PlanStep::Category category, double seconds, std::string name, int64_t microBatch,
                 std::vector<int> deps) {
    PlanStep step;
    step.kind = PlanStep::Compute;
    step.category = category;
    step.ranks = {rank};
    step.duration = seconds;
    step.deps = std::move(deps);
    step.name = std::move(name);
    step.stage = rank;
    step.microBatch = microBatch;
    return plan.add(step);
  }
  llvm::Error addTableSteps();
  llvm::Error addTransfers(int64_t src, bool forward);
  void addDataParallel(int rank);
  /// The link resources of a transfer from rank `src` to rank `dst`: the NICs when they sit on different
  /// nodes (PipelinePlan.h), else their own direction.
  std::vector<int> linksOf(int src, int dst) const;

  const PipelineCosts &costs;
  PipelinePlanIndex &index;
  const int p;
  const int64_t v;
  Plan plan;
  /// Per virtual stage: the step consuming (forward) / producing (backward) micro-batch i, and per
  /// direction (0 forward, 1 backward) and micro-batch the decode step before the consumer of a compressed
  /// transfer and the encode step after its producer.
  std::vector<std::map<int64_t, int>> fwd, bwd, decode[2], encode[2];
  std::vector<int> lastBackward, optimizerStep;
  std::vector<std::vector<int>> sends;
};
} // namespace

std::vector<int> PipelinePlanBuilder::linksOf(int src, int dst) const {
  if (costs.rankNodes.empty() || costs.rankNodes[src] == costs.rankNodes[dst])
    return {};
  // Node n's egress is resource 2 n, its ingress 2 n + 1 (half duplex: both 2 n).
  const int in = costs.halfDuplex ? 0 : 1;
  return {static_cast<int>(2 * costs.rankNodes[src]), static_cast<int>(2 * costs.rankNodes[dst] + in)};
}

llvm::Error PipelinePlanBuilder::addTableSteps() {
  int64_t c = p * v;
  for (int s = 0; s < p; ++s) {
    plan.peakMemory[s] = costs.ranks[s].peakMemory;
    for (const ScheduleStep &e : costs.table[s]) {
      if (e.kind != ScheduleStep::Optimizer && (e.chunk < 0 || e.chunk >= v || e.microBatch < 0))
        return planError("stage " + llvm::Twine(s) + ": " + e.str() + " is out of range (" + llvm::Twine(v) +
                         " model chunks per stage)");
      int64_t vs = e.chunk * p + s;
      const StageCosts &sc = costs.stages[vs];
      bool isF = e.kind == ScheduleStep::Forward || e.kind == ScheduleStep::ForwardBackward;
      bool isB = e.kind == ScheduleStep::Backward || e.kind == ScheduleStep::ForwardBackward;
      // The decode of a compressed gradient from vs + 1 (activation from vs - 1) runs right before its
      // consumer.
      if (e.kind == ScheduleStep::Backward && vs + 1 < c) {
        const auto &in = costs.stages[vs + 1].compressedBackward;
        if (auto it = in.find(e.microBatch); it != in.end())
          decode[1][vs][e.microBatch] = addCompute(s, PlanStep::Decode, it->second.decodeSeconds,
                                                   "decode B" + std::to_string(e.microBatch), e.microBatch, {});
      }
      if (isF && vs > 0) {
        const auto &in = costs.stages[vs - 1].compressedForward;
        if (auto it = in.find(e.microBatch); it != in.end())
          decode[0][vs][e.microBatch] = addCompute(s, PlanStep::Decode, it->second.decodeSeconds,
                                                   "decode F" + std::to_string(e.microBatch), e.microBatch, {});
      }
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
        step.duration = sc.forward;
        break;
      case ScheduleStep::Backward:
        step.category = PlanStep::Backward;
        step.duration = sc.backward;
        break;
      case ScheduleStep::ForwardBackward:
        step.category = PlanStep::ForwardBackward;
        step.duration = sc.forwardBackward;
        break;
      case ScheduleStep::Optimizer:
        step.category = PlanStep::Optimizer;
        step.duration = costs.ranks[s].optimizer;
        break;
      }
      int id = plan.add(step);
      index.tableSteps[s].push_back(id);
      index.sendSteps[s].push_back(-1);
      index.encodeSteps[s].push_back(-1);
      if (e.kind == ScheduleStep::Optimizer) {
        optimizerStep[s] = id;
        continue;
      }
      if ((isF && !fwd[vs].insert({e.microBatch, id}).second) || (isB && !bwd[vs].insert({e.microBatch, id}).second))
        return planError("stage " + llvm::Twine(s) + ": " + e.str() + " appears twice");
      if (isB)
        lastBackward[s] = id;
      // The encode of a compressed gradient to vs - 1 (activation to vs + 1) runs right after its producer.
      if (auto it = sc.compressedBackward.find(e.microBatch); isB && vs > 0 && it != sc.compressedBackward.end()) {
        int enc = addCompute(s, PlanStep::Encode, it->second.encodeSeconds, "encode B" + std::to_string(e.microBatch),
                             e.microBatch, {id});
        encode[1][vs][e.microBatch] = enc;
        index.encodeSteps[s].back() = enc;
      }
      if (auto it = sc.compressedForward.find(e.microBatch);
          e.kind == ScheduleStep::Forward && vs + 1 < c && it != sc.compressedForward.end()) {
        int enc = addCompute(s, PlanStep::Encode, it->second.encodeSeconds, "encode F" + std::to_string(e.microBatch),
                             e.microBatch, {id});
        encode[0][vs][e.microBatch] = enc;
        index.encodeSteps[s].back() = enc;
      }
    }
  }
  return llvm::Error::success();
}

llvm::Error PipelinePlanBuilder::addTransfers(int64_t from, bool forward) {
  // Activations from -> from + 1, or gradients from + 1 -> from (virtual stages).
  int64_t srcStage = forward ? from : from + 1, dstStage = forward ? from + 1 : from;
  int src = srcStage % p, dst = dstStage % p;
  const auto &producers = forward ? fwd[srcStage] : bwd[srcStage];
  const auto &consumers = forward ? fwd[dstStage] : bwd[dstStage];
  const StageCosts &sc = costs.stages[srcStage];
  for (auto [mb, producer] : producers) {
    auto consumer = consumers.find(mb);
    if (consumer == consumers.end())
      return planError("stage " + llvm::Twine(src) + " runs the " + (forward ? "forward" : "backward") +
                       " of micro-batch " + llvm::Twine(mb) + " but stage " + llvm::Twine(dst) + " does not" +
                       (v > 1 ? " (virtual stages " + std::to_string(srcStage) + " -> " + std::to_string(dstStage) + ")"
                              : std::string()));
    const CompressedTransfer *compressed = nullptr;
    const auto &compressedSends = forward ? sc.compressedForward : sc.compressedBackward;
    if (auto it = compressedSends.find(mb); it != compressedSends.end())
      compressed = &it->second;
    const CommCost &cost = compressed ? compressed->codes : forward ? sc.sendForward : sc.sendBackward;
    PlanStep t;
    t.kind = PlanStep::Transfer;
    t.category = forward ? PlanStep::SendForward : PlanStep::SendBackward;
    t.ranks = {src, dst};
    t.links = linksOf(src, dst);
    t.duration = cost.seconds;
    t.eagerSeconds = cost.eagerSeconds;
    t.crossingSlowdown = cost.crossingSlowdown;
    t.bytes = cost.bytes;
    t.interNode = cost.interNode;
    // Posted by the sender when the producer (its encode) ends, by the receiver when the step before the
    // consumer ends.
    t.deps = {compressed ? encode[!forward][srcStage].at(mb) : producer};
    const PlanStep &consumerStep = plan.steps[consumer->second];
    if (consumerStep.tableIndex > 0)
      t.deps.push_back(index.tableSteps[dst][consumerStep.tableIndex - 1]);
    std::string suffix = v > 1 && srcStage / p > 0 ? "." + std::to_string(srcStage / p) : "";
    t.name = std::string(forward ? "send F" : "send B") + std::to_string(mb) + suffix + " " + std::to_string(src) +
             "->" + std::to_string(dst);
    t.stage = src;
    t.microBatch = mb;
    int id = plan.add(t);
    int receiver = compressed ? decode[!forward][dstStage].at(mb) : consumer->second;
    // LogP's o on both endpoints' compute streams.
    for (int endpoint : {t.deps[0], receiver}) {
      plan.steps[endpoint].duration += cost.cpuOverhead;
      plan.steps[endpoint].cpuOverhead += cost.cpuOverhead;
    }
    plan.steps[receiver].deps.push_back(id);
    index.sendSteps[src][plan.steps[producer].tableIndex] = id;
    sends[src].push_back(id);
    // The lowering waits on the activation send at the micro-batch's backward.
    if (auto b = bwd[srcStage].find(mb); forward && b != bwd[srcStage].end())
      plan.steps[b->second].deps.push_back(id);
  }
  return llvm::Error::success();
}

void PipelinePlanBuilder::addDataParallel(int s) {
  const RankCosts &rc = costs.ranks[s];
  auto collective = [&](const CommCost &cc, std::string name, std::vector<int> deps) {
    PlanStep c;
    c.kind = PlanStep::Collective;
    c.category = PlanStep::DataParallel;
    c.ranks = {s};
    c.duration = cc.seconds;
    c.bytes = cc.bytes;
    c.sentBytes = cc.sentBytes;
    c.interNode = cc.interNode;
    c.deps = std::move(deps);
    c.name = std::move(name);
    c.stage = s;
    return plan.add(c);
  };
  std::string name = "dp all-reduce stage " + std::to_string(s);
  // Posted by the optimizer step, which the lowering calls once the rank's sends have ended.
  std::vector<int> deps = {lastBackward[s]};
  deps.insert(deps.end(), sends[s].begin(), sends[s].end());
  if (!rc.compressedDataParallel) {
    index.dataParallelSteps[s] = collective(rc.dataParallel, name, deps);
    return;
  }
  // Data-parallel PowerSGD: phase P, all-reduce P, phase Q, all-reduce Q, finish.
  const CompressedAllReduce &ca = *rc.compressedDataParallel;
  std::vector<int> &phases = index.dataParallelPhases[s];
  phases.push_back(
      addCompute(s, PlanStep::DataParallelCodec, ca.phasePSeconds, "dp PowerSGD P = M Q", -1, std::move(deps)));
  phases.push_back(collective(ca.first, name + " (P)", {phases.back()}));
  phases.push_back(
      addCompute(s, PlanStep::DataParallelCodec, ca.phaseQSeconds, "dp PowerSGD Q = M^T orth(P)", -1, {phases.back()}));
  phases.push_back(collective(ca.second, name + " (Q)", {phases.back()}));
  phases.push_back(
      addCompute(s, PlanStep::DataParallelCodec, ca.finishSeconds, "dp PowerSGD decode", -1, {phases.back()}));
  index.dataParallelSteps[s] = phases[1];
}

llvm::Expected<Plan> PipelinePlanBuilder::build() {
  if (p < 1 || static_cast<int>(costs.table.size()) != p)
    return planError("the schedule table has " + llvm::Twine(costs.table.size()) + " rows for " + llvm::Twine(p) +
                     " stages");
  if (v < 1 || static_cast<int64_t>(costs.stages.size()) != p * v)
    return planError("the pipeline has " + llvm::Twine(costs.stages.size()) + " stage costs for " + llvm::Twine(p) +
                     " stages x " + llvm::Twine(v) + " model chunks");
  if (!costs.rankNodes.empty() && static_cast<int>(costs.rankNodes.size()) != p)
    return planError("rankNodes has " + llvm::Twine(costs.rankNodes.size()) + " entries for " + llvm::Twine(p) +
                     " stages");
  plan.numRanks = p;
  plan.computeOrder.resize(p);
  plan.commOrder.resize(p);
  plan.peakMemory.resize(p);
  plan.memoryCapacity = costs.memoryCapacity;
  index = PipelinePlanIndex();
  index.tableSteps.resize(p);
  index.sendSteps.resize(p);
  index.encodeSteps.resize(p);
  index.dataParallelSteps.assign(p, -1);
  index.dataParallelPhases.resize(p);
  int64_t c = p * v;
  fwd.resize(c);
  bwd.resize(c);
  for (int d = 0; d < 2; ++d) {
    decode[d].resize(c);
    encode[d].resize(c);
  }
  lastBackward.assign(p, -1);
  optimizerStep.assign(p, -1);
  sends.resize(p);

  // 1. Compute steps in table order, with the codec steps of compressed transfers.
  if (llvm::Error e = addTableSteps())
    return std::move(e);
  // 2. Transfers between neighbouring virtual stages.
  for (int64_t vs = 0; vs + 1 < c; ++vs)
    for (bool forward : {true, false})
      if (llvm::Error e = addTransfers(vs, forward))
        return std::move(e);

  // 3. Gradient all-reduce over dp after each rank's last backward, then the tied all-reduce over pp.
  std::vector<int> beforeOptimizer(p, -1);
  for (int s = 0; s < p; ++s) {
    beforeOptimizer[s] = lastBackward[s];
    const RankCosts &rc = costs.ranks[s];
    if ((rc.dataParallel.bytes <= 0 && !rc.compressedDataParallel) || lastBackward[s] < 0)
      continue;
    addDataParallel(s);
    beforeOptimizer[s] =
        index.dataParallelPhases[s].empty() ? index.dataParallelSteps[s] : index.dataParallelPhases[s].back();
  }
  if (costs.tied.bytes > 0 && p > 1) {
    PlanStep t;
    t.kind = PlanStep::Collective;
    t.category = PlanStep::Tied;
    for (int s = 0; s < p; ++s) {
      t.ranks.push_back(s);
      if (beforeOptimizer[s] >= 0)
        t.deps.push_back(beforeOptimizer[s]);
      t.deps.insert(t.deps.end(), sends[s].begin(), sends[s].end());
    }
    t.duration = costs.tied.seconds;
    t.bytes = costs.tied.bytes;
    t.sentBytes = costs.tied.sentBytes;
    t.interNode = costs.tied.interNode;
    t.name = "tied all-reduce";
    index.tiedStep = plan.add(t);
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
    // The dp codec phases were added after the table's O: O runs last on the compute stream.
    std::vector<int> &order = plan.computeOrder[s];
    std::stable_partition(order.begin(), order.end(), [&](int id) { return id != optimizerStep[s]; });
  }
  // 4. The loss all-reduce over dp x pp after every rank's optimizer step (the end of the train step).
  if (costs.loss.bytes > 0) {
    PlanStep l;
    l.kind = PlanStep::Collective;
    l.category = PlanStep::Loss;
    for (int s = 0; s < p; ++s) {
      l.ranks.push_back(s);
      if (optimizerStep[s] >= 0)
        l.deps.push_back(optimizerStep[s]);
    }
    l.duration = costs.loss.seconds;
    l.bytes = costs.loss.bytes;
    l.sentBytes = costs.loss.sentBytes;
    l.interNode = costs.loss.interNode;
    l.name = "loss all-reduce";
    index.lossStep = plan.add(l);
  }
  return std::move(plan);
}

llvm::Expected<Plan> mlir::ptrain::buildPipelinePlan(const PipelineCosts &costs, PipelinePlanIndex &index) {
  return PipelinePlanBuilder(costs, index).build();
}

PipelineCosts mlir::ptrain::getUniformPipelineCosts(const ScheduleTableRows &table, int64_t v, double forward,
                                                    double backward, double forwardBackward) {
  PipelineCosts costs;
  costs.table = table;
  costs.virtualStages = v;
  costs.stages.resize(table.size() * v);
  costs.ranks.resize(table.size());
  for (StageCosts &c : costs.stages) {
    c.forward = forward;
    c.backward = backward;
    c.forwardBackward = forwardBackward;
  }
  return costs;
}
