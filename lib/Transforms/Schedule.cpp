//===- Schedule.cpp - per-stage pipeline schedule tables -----------*- C++ -*-===//
//
// --ptrain-schedule: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "ptrain/Analysis/PipelinePlan.h"
#include "ptrain/Plan/ScheduleTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

#define DEBUG_TYPE "ptrain-schedule"

namespace mlir::ptrain {
#define GEN_PASS_DEF_SCHEDULEPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

using Step = ScheduleStep;

struct SchedulePass : public ptrain::impl::SchedulePassBase<SchedulePass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void SchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  PipelineAttr pipeline = getPipeline(module);
  if (!pipeline) {
    emitError(module.getLoc()) << "--ptrain-schedule: the module has no pipeline (run --ptrain-split-stages and "
                                  "--ptrain-build-training-step first)";
    return signalPassFailure();
  }
  // The table is what --ptrain-build-training-step's functions run and what the later passes read: without the
  // step the next pass failed on a misleading count; after the critical path, compression or lowering a new
  // table would silently disagree with their records and the lowered steps.
  if (!pipeline.getMicroBatches()) {
    emitError(module.getLoc()) << "--ptrain-schedule: the pipeline has no training step (run "
                                  "--ptrain-build-training-step micro-batches=M first)";
    return signalPassFailure();
  }
  if (ScheduleAttr old = getSchedule(module); old && old.hasCriticalPath()) {
    emitError(module.getLoc()) << "--ptrain-schedule: the module's schedule already has the critical path of "
                                  "--ptrain-critical-path (and what was planned on it); schedule before "
                                  "--ptrain-critical-path";
    return signalPassFailure();
  }
  if (getCompression(module) || module.lookupSymbol("stage0_train_step")) {
    emitError(module.getLoc()) << "--ptrain-schedule: the module is already "
                               << (module.lookupSymbol("stage0_train_step") ? "lowered (@stage0_train_step)"
                                                                            : "compressed (ptrain.compression)")
                               << " for its schedule; schedule before --ptrain-compress and "
                                  "--ptrain-lower-to-runtime";
    return signalPassFailure();
  }
  int64_t m = microBatches;
  if (m == 0)
    m = *pipeline.getMicroBatches();
  if (m < 1) {
    emitError(module.getLoc()) << "--ptrain-schedule: micro-batches must be >= 1 (give micro-batches= or build "
                                  "the training step with micro-batches=), got "
                               << m;
    return signalPassFailure();
  }
  if (const int64_t built = *pipeline.getMicroBatches(); built != m) {
    emitError(module.getLoc()) << "--ptrain-schedule: micro-batches = " << m << " differs from the training step's "
                               << built << " (its loss gradient is seeded with 1 / micro-batches)";
    return signalPassFailure();
  }
  const int64_t p = pipeline.getPp(), v = pipeline.getVirtualStages();
  std::string error;
  std::optional<ScheduleTableRows> table = buildScheduleTable(schedule, p, v, m, error);
  if (!table) {
    emitError(module.getLoc()) << "--ptrain-schedule: " << error;
    return signalPassFailure();
  }
  // The timing model with unit costs (backward twice the forward): only whether every step runs matters here.
  PipelinePlanIndex index;
  llvm::Expected<Plan> plan = buildPipelinePlan(getUniformPipelineCosts(*table, v, 1.0, 2.0, 3.0), index);
  Timeline timeline;
  std::string stuck;
  bool ok = plan ? simulate(*plan, timeline, stuck) : (stuck = llvm::toString(plan.takeError()), false);
  if (!ok) {
    emitError(module.getLoc()) << "--ptrain-schedule: the " << schedule << " table deadlocks: " << stuck;
    return signalPassFailure();
  }
  Builder b(module.getContext());
  SmallVector<Attribute> rows;
  for (const std::vector<Step> &steps : *table) {
    SmallVector<Attribute> row;
    for (const Step &step : steps)
      row.push_back(b.getStringAttr(step.str()));
    rows.push_back(b.getArrayAttr(row));
  }
  setSchedule(module, ScheduleAttr::get(module.getContext(), schedule.getValue(), m, v, b.getArrayAttr(rows), {}, {},
                                        {}, {}, {}, {}, {}, {}));
}
