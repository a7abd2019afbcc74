//===- TimingAnalysis.h - iteration time, slack and critical path -*- C++ -*-===//
//
// The analysis of a scheduled module on a cluster (STYLE habit 8): builds the timing model
// (ModuleCosts.h), the plan (PipelinePlan.h) and simulates it (TimingPlan.h). Used by
// --ptrain-critical-path, --ptrain-report and --test-ptrain-timing (docs/TimingModel.md).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_TIMINGANALYSIS_H
#define PTRAIN_ANALYSIS_TIMINGANALYSIS_H

#include "ptrain/Analysis/ModuleCosts.h"
#include "ptrain/Analysis/PipelinePlan.h"
#include "ptrain/Analysis/TimingPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <memory>

namespace mlir::ptrain {

/// Timing of one step, in seconds.
struct StepTiming {
  double start = 0, end = 0, slack = 0;
  bool critical = false;
};

class TimingAnalysis {
public:
  /// `parameterCastsOnce`: buildModuleTimingModel's (the lowering's parameter-casts is `once`).
  TimingAnalysis(ModuleOp module, ClusterSpec cluster, bool parameterCastsOnce = true)
      : module(module), cluster(std::move(cluster)), parameterCastsOnce(parameterCastsOnce) {}

  /// Builds and simulates the plan. Errors name what is missing in the module or the cluster.
  llvm::Error run();

  /// The table entry `index` of stage `stage`; std::nullopt when out of range.
  std::optional<StepTiming> lookup(int64_t stage, int64_t index) const;
  /// The transfer the table entry sends (activation or gradient); std::nullopt when it sends none.
  std::optional<StepTiming> lookupSend(int64_t stage, int64_t index) const;
  /// The stage's dp all-reduce; std::nullopt when dp = 1.
  std::optional<StepTiming> lookupDataParallel(int64_t stage) const;

  /// Every step with start, end and slack (microseconds), critical steps marked `*`.
  void print(llvm::raw_ostream &os) const;
  /// The readable report: configuration, time split, traffic per link kind, critical path, memory.
  void printReport(llvm::raw_ostream &os) const;
  /// The report as JSON (schema in docs/TimingModel.md).
  llvm::json::Value toJSON() const;
  /// A Chrome trace (Perfetto) with one process per stage rank and one thread per stream.
  llvm::json::Value toTrace() const;

  const ModuleTimingModel &getModel() const { return model; }
  const Plan &getPlan() const { return plan; }
  const Timeline &getTimeline() const { return timeline; }
  const PipelinePlanIndex &getIndex() const { return index; }
  const ClusterSpec &getCluster() const { return cluster; }

  /// With `ptrain.compression`: the same plan without compression, simulated alongside (the report's
  /// baseline and modelled speedup); null otherwise.
  struct Baseline {
    ModuleTimingModel model;
    Plan plan;
    PipelinePlanIndex index;
    Timeline timeline;
  };
  const Baseline *getBaseline() const { return baseline.get(); }

private:
  StepTiming timingOf(int id) const;
  /// The compression section of the report (printReport) and its JSON (toJSON).
  void printCompression(llvm::raw_ostream &os) const;
  llvm::json::Value compressionToJSON() const;

  ModuleOp module;
  ClusterSpec cluster;
  bool parameterCastsOnce;
  ModuleTimingModel model;
  Plan plan;
  PipelinePlanIndex index;
  Timeline timeline;
  std::shared_ptr<Baseline> baseline;
};

/// The passes' entry point: the cluster from `clusterPath` (attached to the module) or from the module's
/// `ptrain.cluster` (ModuleCluster.h), then TimingAnalysis::run(). Errors as there. `parameterCasts` is the
/// lowering's option (`once` or `per-call`; parseParameterCasts), which the model prices.
llvm::Expected<TimingAnalysis> analyzeModule(ModuleOp module, llvm::StringRef clusterPath,
                                             llvm::StringRef parameterCasts = "once");

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_TIMINGANALYSIS_H
