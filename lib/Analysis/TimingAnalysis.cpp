//===- TimingAnalysis.cpp - iteration time, slack and critical path -*- C++ -*-===//
//
// See TimingAnalysis.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/TimingAnalysis.h"

#include "ptrain/Analysis/ModuleCluster.h"

using namespace mlir;
using namespace mlir::ptrain;

/// Builds the model, the plan and its timeline.
static llvm::Error analyze(ModuleOp module, const ClusterSpec &cluster, bool applyCompression,
                           bool parameterCastsOnce, ModuleTimingModel &model, Plan &plan, PipelinePlanIndex &index,
                           Timeline &timeline) {
  auto built = buildModuleTimingModel(module, cluster, applyCompression, parameterCastsOnce);
  if (!built)
    return built.takeError();
  model = std::move(*built);
  auto p = buildPipelinePlan(model.costs, index);
  if (!p)
    return p.takeError();
  plan = std::move(*p);
  std::string error;
  if (!simulate(plan, timeline, error))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  return llvm::Error::success();
}

llvm::Error TimingAnalysis::run() {
  if (llvm::Error e = analyze(module, cluster, /*applyCompression=*/true, parameterCastsOnce, model, plan, index, timeline))
    return e;
  baseline.reset();
  if (model.compressionPolicy.empty())
    return llvm::Error::success();
  baseline = std::make_shared<Baseline>();
  return analyze(module, cluster, /*applyCompression=*/false, parameterCastsOnce, baseline->model, baseline->plan, baseline->index,
                 baseline->timeline);
}

StepTiming TimingAnalysis::timingOf(int id) const {
  return {timeline.start[id], timeline.end[id], timeline.slack[id], static_cast<bool>(timeline.critical[id])};
}

std::optional<StepTiming> TimingAnalysis::lookup(int64_t stage, int64_t i) const {
  if (stage < 0 || stage >= static_cast<int64_t>(index.tableSteps.size()) || i < 0 ||
      i >= static_cast<int64_t>(index.tableSteps[stage].size()))
    return std::nullopt;
  return timingOf(index.tableSteps[stage][i]);
}

std::optional<StepTiming> TimingAnalysis::lookupSend(int64_t stage, int64_t i) const {
  if (!lookup(stage, i) || index.sendSteps[stage][i] < 0)
    return std::nullopt;
  return timingOf(index.sendSteps[stage][i]);
}

std::optional<StepTiming> TimingAnalysis::lookupDataParallel(int64_t stage) const {
  if (stage < 0 || stage >= static_cast<int64_t>(index.dataParallelSteps.size()) || index.dataParallelSteps[stage] < 0)
    return std::nullopt;
  return timingOf(index.dataParallelSteps[stage]);
}

void TimingAnalysis::print(llvm::raw_ostream &os) const { printTimeline(plan, timeline, os); }

llvm::Expected<TimingAnalysis> mlir::ptrain::analyzeModule(ModuleOp module, StringRef clusterPath,
                                                          StringRef parameterCasts) {
  if (parameterCasts != "once" && parameterCasts != "per-call")
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "parameter-casts must be once or per-call, got '" + parameterCasts + "'");
  auto cluster = getModuleCluster(module, clusterPath);
  if (!cluster)
    return cluster.takeError();
  TimingAnalysis analysis(module, std::move(*cluster), /*parameterCastsOnce=*/parameterCasts == "once");
  if (llvm::Error e = analysis.run())
    return std::move(e);
  return analysis;
}
