//===- PipelinePlan.h - a timed plan from pipeline schedule tables -*- C++ -*-===//
//
// Builds the Plan (TimingPlan.h) of one training iteration from the schedule table and per-stage costs in
// seconds, following what --ptrain-lower-to-runtime generates (docs/TrainingStep.md, DESIGN decision 6):
//
// * one rank per pipeline stage stands for all its data- and tensor-parallel replicas (SPMD: they run the
//   same steps at the same time; the costs already account for their sharing of links);
// * F<i> on stage s > 0 needs micro-batch i's activation from s - 1; that transfer starts when s - 1 has
//   finished F<i> and s has finished the step before F<i> (it posts its receive then);
// * B<i> / FB<i> on stage s < P - 1 needs the gradient from s + 1 (sent by its B<i> or FB<i>) and the end of
//   its own F<i> send (the lowering waits on it there);
// * after its last backward, a stage all-reduces its gradients over dp on its communication stream; then
//   every stage joins the tied-parameter all-reduce over pp (when the model has tied parameters); the
//   optimizer step O runs after both and after every send of the stage has ended.
//
// The table is taken entry by entry, so new step kinds (interleaved 1F1B's chunks) add cases in one place.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_PIPELINEPLAN_H
#define PTRAIN_ANALYSIS_PIPELINEPLAN_H

#include "ptrain/Analysis/TimingPlan.h"
#include "ptrain/Transforms/ScheduleTable.h"

#include "llvm/Support/Error.h"

#include <vector>

namespace mlir::ptrain {

/// A transfer or collective: seconds it takes, bytes each rank sends, whether it crosses nodes.
struct CommCost {
  double seconds = 0;
  double bytes = 0;
  bool interNode = false;
};

/// Costs of one stage, per micro-batch where it applies, in seconds.
struct StageCosts {
  double forward = 0;
  /// Backward of a stage s < P - 1 (with activation recomputation: includes the recomputed forward).
  double backward = 0;
  /// The last stage's fused forward, loss and backward.
  double forwardBackward = 0;
  double optimizer = 0;
  /// Activation to s + 1 and gradient to s - 1.
  CommCost sendForward, sendBackward;
  /// The stage's gradient all-reduce over dp; none when bytes == 0.
  CommCost dataParallel;
  /// Peak device memory (bytes).
  double peakMemory = 0;
};

struct PipelineCosts {
  std::vector<StageCosts> stages;
  /// Per stage, the table row (docs/TrainingStep.md).
  std::vector<std::vector<ScheduleStep>> table;
  /// The tied-parameter all-reduce over pp before the optimizer step; none when bytes == 0.
  CommCost tied;
  double memoryCapacity = 0;
};

/// Where the plan steps of the table went.
struct PipelinePlanIndex {
  /// [stage][table index] -> the compute step.
  std::vector<std::vector<int>> tableSteps;
  /// [stage][table index] -> the transfer the entry sends (activation of F<i>, gradient of B<i>/FB<i>), -1.
  std::vector<std::vector<int>> sendSteps;
  /// [stage] -> the dp all-reduce, -1.
  std::vector<int> dataParallelSteps;
  /// The tied-parameter all-reduce, -1.
  int tiedStep = -1;
};

/// Builds the plan. Fails when the table does not have one row per stage, a micro-batch is out of range or
/// appears twice in a row, or a stage's forward (backward) has no matching entry on its neighbour.
llvm::Expected<Plan> buildPipelinePlan(const PipelineCosts &costs, PipelinePlanIndex &index);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_PIPELINEPLAN_H
