//===- Schedule.cpp - per-stage pipeline schedule tables -----------*- C++ -*-===//
//
// --ptrain-schedule: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

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
  auto pipeline = module->getAttrOfType<DictionaryAttr>("ptrain.pipeline");
  auto stages = pipeline ? pipeline.getAs<ArrayAttr>("stages") : ArrayAttr();
  if (!stages) {
    emitError(module.getLoc()) << "--ptrain-schedule: the module has no pipeline (run --ptrain-split-stages and "
                                  "--ptrain-build-training-step first)";
    return signalPassFailure();
  }
  // The table is what --ptrain-build-training-step's functions run and what the later passes read: without the
  // step the next pass failed on a misleading count; after the critical path, compression or lowering a new
  // table would silently disagree with their records and the lowered steps.
  if (!pipeline.get("micro_batches")) {
    emitError(module.getLoc()) << "--ptrain-schedule: the pipeline has no training step (run "
                                  "--ptrain-build-training-step micro-batches=M first)";
    return signalPassFailure();
  }
  if (auto old = module->getAttrOfType<DictionaryAttr>("ptrain.schedule"); old && old.get("send_critical")) {
    emitError(module.getLoc()) << "--ptrain-schedule: the module's schedule already has the critical path of "
                                  "--ptrain-critical-path (and what was planned on it); schedule before "
                                  "--ptrain-critical-path";
    return signalPassFailure();
  }
  if (module->hasAttr("ptrain.compression") || module.lookupSymbol("stage0_train_step")) {
    emitError(module.getLoc()) << "--ptrain-schedule: the module is already "
                               << (module.lookupSymbol("stage0_train_step") ? "lowered (@stage0_train_step)"
                                                                            : "compressed (ptrain.compression)")
                               << " for its schedule; schedule before --ptrain-compress and "
                                  "--ptrain-lower-to-runtime";
    return signalPassFailure();
  }
  int64_t m = microBatches;
  if (m == 0)
    if (auto attr = pipeline.getAs<IntegerAttr>("micro_batches"))
      m = attr.getInt();
  if (m < 1) {
    emitError(module.getLoc()) << "--ptrain-schedule: micro-batches must be >= 1 (give micro-batches= or build "
                                  "the training step with micro-batches=), got "
                               << m;
    return signalPassFailure();
  }
  if (auto built = pipeline.getAs<IntegerAttr>("micro_batches"); built && built.getInt() != m) {
    emitError(module.getLoc()) << "--ptrain-schedule: micro-batches = " << m << " differs from the training step's "
                               << built.getInt() << " (its loss gradient is seeded with 1 / micro-batches)";
    return signalPassFailure();
  }
  int64_t p = stages.size(), v = 1;
  if (auto pp = pipeline.getAs<IntegerAttr>("pp"))
    p = pp.getInt();
  if (auto virtualStages = pipeline.getAs<IntegerAttr>("virtual_stages"))
    v = virtualStages.getInt();
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
  SmallVector<NamedAttribute> attrs = {b.getNamedAttr("kind", b.getStringAttr(schedule)),
                                       b.getNamedAttr("micro_batches", b.getI64IntegerAttr(m)),
                                       b.getNamedAttr("table", b.getArrayAttr(rows))};
  if (v > 1)
    attrs.push_back(b.getNamedAttr("virtual_stages", b.getI64IntegerAttr(v)));
  module->setAttr("ptrain.schedule", b.getDictionaryAttr(attrs));
}
