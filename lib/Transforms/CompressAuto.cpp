//===- CompressAuto.cpp - policy=auto: greedy search by re-simulation -*- C++ -*-===//
//
// See include/ptrain/Transforms/CompressAuto.h. The codec costs of every candidate come from the timing
// model itself (one probe model per rank with every allowed edge compressed at that rank), so the search
// prices a change exactly as --ptrain-report will; each candidate is then timed by rebuilding and
// simulating the plan from the changed PipelineCosts.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/CompressAuto.h"

#include "ptrain/Analysis/ModuleCluster.h"
#include "ptrain/Analysis/ModuleCosts.h"
#include "ptrain/Analysis/PipelinePlan.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::ptrain;

double mlir::ptrain::estimatePowerSGDError(int64_t n, int64_t m, int64_t r) {
  int64_t k = std::min(n, m);
  return r >= k ? 0.0 : std::sqrt(1.0 - static_cast<double>(r) / static_cast<double>(k));
}

namespace {
/// One codec a backward send can take, with its modelled cost.
struct SendOption {
  int64_t rank = 0;
  CodecAttrInterface codec;
  CompressedTransfer transfer;
};
} // namespace

static llvm::Expected<double> iterationSeconds(const PipelineCosts &costs) {
  PipelinePlanIndex index;
  auto plan = buildPipelinePlan(costs, index);
  if (!plan)
    return plan.takeError();
  Timeline timeline;
  std::string error;
  if (!simulate(*plan, timeline, error))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  return timeline.iterationTime;
}

LogicalResult mlir::ptrain::searchAutoCompression(ModuleOp module, const CompressionEdges &edges,
                                                  const AutoSearchOptions &options, CompressionPlan &plan,
                                                  std::vector<AutoDecision> &decisions, double &uncompressedSeconds,
                                                  llvm::function_ref<InFlightDiagnostic()> emitError) {
  const int64_t pp = edges.pp, m = edges.m;
  auto modelError = [&](llvm::Error e) {
    emitError() << "policy=auto: the timing model: " << llvm::toString(std::move(e));
    return failure();
  };
  auto cluster = getModuleCluster(module, "");
  if (!cluster) {
    emitError() << "policy=auto times the plan on the module's cluster (run --ptrain-critical-path=\"cluster=FILE\" "
                   "first): "
                << llvm::toString(cluster.takeError());
    return failure();
  }
  auto base = buildModuleTimingModel(module, *cluster, /*applyCompression=*/false);
  if (!base)
    return modelError(base.takeError());
  if (base->virtualStages != 1) {
    emitError() << "policy=auto: virtual stages are not modelled with compression";
    return failure();
  }

  // Probe models: per rank, every edge within the error budget compressed at that rank (clamped to
  // min(n, m); a clamp that repeats a smaller option's rank is dropped).
  MLIRContext *context = module.getContext();
  std::vector<int64_t> ranks = options.ranks;
  llvm::sort(ranks);
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::vector<std::vector<std::vector<SendOption>>> sendOptions(pp, std::vector<std::vector<SendOption>>(m));
  std::vector<std::map<int64_t, CompressedAllReduce>> dpOptions(pp);
  for (int64_t r : ranks) {
    CompressionPlan probe;
    probe.policy = "auto";
    probe.backwardSends.assign(pp, std::vector<CodecAttrInterface>(m));
    probe.forwardSends.assign(pp, std::vector<CodecAttrInterface>(m));
    probe.dpAllReduce.assign(pp, false);
    probe.scRank = r;
    std::vector<int64_t> stageRank(pp, 0);
    bool any = false;
    for (int64_t s = 1; s < pp; ++s) {
      auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), edges.backwardTypes[s], nullptr);
      if (failed(nm))
        continue;
      int64_t rc = std::min({r, nm->first, nm->second});
      if (estimatePowerSGDError(nm->first, nm->second, rc) > options.errorBudget ||
          (!sendOptions[s][0].empty() && sendOptions[s][0].back().rank == rc))
        continue;
      auto codec = PowerSGDAttr::get(context, rc, BoolAttr(), MatrixViewAttr());
      if (failed(codec.verifyForType([] { return InFlightDiagnostic(); }, edges.backwardTypes[s])))
        continue;
      stageRank[s] = rc;
      for (int64_t i = 0; i < m; ++i)
        probe.backwardSends[s][i] = codec;
      any = true;
    }
    for (int64_t s = 0; s < pp && edges.dp > 1; ++s) {
      double error = 0;
      for (const auto &[key, type] : edges.gradients[s])
        if (auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), type, nullptr); succeeded(nm))
          error = std::max(error, estimatePowerSGDError(nm->first, nm->second, std::min({r, nm->first, nm->second})));
      probe.dpAllReduce[s] = !edges.gradients[s].empty() && error <= options.errorBudget;
      any |= probe.dpAllReduce[s];
    }
    if (!any)
      continue;
    module->setAttr("ptrain.compression", probe.toAttr(context));
    auto model = buildModuleTimingModel(module, *cluster, /*applyCompression=*/true);
    module->removeAttr("ptrain.compression");
    if (!model)
      return modelError(model.takeError());
    for (int64_t s = 1; s < pp; ++s)
      for (int64_t i = 0; i < m && stageRank[s]; ++i)
        if (auto it = model->costs.stages[s].compressedBackward.find(i);
            it != model->costs.stages[s].compressedBackward.end())
          sendOptions[s][i].push_back({stageRank[s], probe.backwardSends[s][i], it->second});
    for (int64_t s = 0; s < pp; ++s)
      if (probe.dpAllReduce[s] && model->costs.ranks[s].compressedDataParallel)
        dpOptions[s][r] = *model->costs.ranks[s].compressedDataParallel;
  }

  // The greedy search. Ties go to the first candidate in this order: dp all-reduces by stage, then backward
  // sends by stage and micro-batch; within an edge the larger rank (the smaller error) first.
  PipelineCosts current = base->costs;
  auto now = iterationSeconds(current);
  if (!now)
    return modelError(now.takeError());
  uncompressedSeconds = *now;
  std::vector<std::vector<int64_t>> sendRank(pp, std::vector<int64_t>(m, 0));
  std::vector<int64_t> dpRank(pp, 0);
  // The record has one data-parallel rank (sc_rank): the first dp pick fixes it.
  int64_t scRank = 0;
  for (int64_t pick = 0; pick < options.maxPicks; ++pick) {
    // The best change so far: a dp all-reduce (microBatch < 0) or a backward send, at `rank`.
    struct Change {
      int64_t stage = -1, microBatch = -1, rank = 0;
      const SendOption *send = nullptr;
      const CompressedAllReduce *allReduce = nullptr;
    } best;
    double bestTime = *now - options.minGain * uncompressedSeconds;
    auto apply = [](PipelineCosts &costs, const Change &change) {
      if (change.allReduce)
        costs.ranks[change.stage].compressedDataParallel = *change.allReduce;
      else
        costs.stages[change.stage].compressedBackward[change.microBatch] = change.send->transfer;
    };
    auto consider = [&](const Change &change) -> LogicalResult {
      PipelineCosts trial = current;
      apply(trial, change);
      auto t = iterationSeconds(trial);
      if (!t)
        return modelError(t.takeError());
      if (*t < bestTime) {
        bestTime = *t;
        best = change;
      }
      return success();
    };
    for (int64_t s = 0; s < pp; ++s)
      for (auto it = dpOptions[s].rbegin(); it != dpOptions[s].rend(); ++it)
        if (dpRank[s] != it->first && (!scRank || it->first == scRank) &&
            failed(consider({s, -1, it->first, nullptr, &it->second})))
          return failure();
    for (int64_t s = 1; s < pp; ++s)
      for (int64_t i = 0; i < m; ++i)
        for (auto it = sendOptions[s][i].rbegin(); it != sendOptions[s][i].rend(); ++it)
          if (sendRank[s][i] != it->rank && failed(consider({s, i, it->rank, &*it, nullptr})))
            return failure();
    if (best.stage < 0)
      break;
    apply(current, best);
    AutoDecision decision;
    if (best.allReduce) {
      dpRank[best.stage] = scRank = best.rank;
      decision.edge = "dp all-reduce stage " + std::to_string(best.stage);
      decision.codec = best.allReduce->codec;
    } else {
      sendRank[best.stage][best.microBatch] = best.rank;
      decision.edge = "backward send stage " + std::to_string(best.stage) + " " + (best.stage == pp - 1 ? "FB" : "B") +
                      std::to_string(best.microBatch);
      decision.codec = best.send->transfer.codec;
    }
    decision.savedSeconds = *now - bestTime;
    decision.iterationSeconds = bestTime;
    decisions.push_back(decision);
    *now = bestTime;
  }

  for (int64_t s = 1; s < pp; ++s)
    for (int64_t i = 0; i < m; ++i)
      for (const SendOption &option : sendOptions[s][i])
        if (option.rank == sendRank[s][i])
          plan.backwardSends[s][i] = option.codec;
  for (int64_t s = 0; s < pp; ++s)
    plan.dpAllReduce[s] = dpRank[s] != 0;
  plan.scRank = scRank ? scRank : plan.scRank;
  plan.backwardErrorFeedback = true;
  return success();
}
