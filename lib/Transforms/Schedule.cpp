//===- Schedule.cpp - per-stage pipeline schedule tables -----------*- C++ -*-===//
//
// --ptrain-schedule: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Transforms/ScheduleTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

#define DEBUG_TYPE "ptrain-schedule"

namespace mlir::ptrain {
#define GEN_PASS_DEF_SCHEDULEPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

using Step = ScheduleStep;
using Table = std::vector<std::vector<Step>>;

/// Executes the table with rendezvous semantics; returns "" or a description of the stuck steps.
std::string findDeadlock(const Table &table, int64_t m) {
  int64_t p = table.size();
  std::vector<size_t> next(p, 0);
  // forwardDone[s][i], backwardDone[s][i]
  std::vector<std::vector<bool>> fwd(p, std::vector<bool>(m, false)), bwd(p, std::vector<bool>(m, false));
  auto ready = [&](int64_t s, const Step &step) {
    switch (step.kind) {
    case Step::Forward:
      return s == 0 || fwd[s - 1][step.microBatch];
    case Step::Backward:
      return s == p - 1 || bwd[s + 1][step.microBatch];
    case Step::ForwardBackward:
      return s == 0 || fwd[s - 1][step.microBatch];
    case Step::Optimizer:
      // The optimizer's collectives need every stage there: all stages must have finished their micro-batches.
      for (int64_t t = 0; t < p; ++t)
        if (next[t] + 1 < table[t].size())
          return false;
      return true;
    }
    return false;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < p; ++s) {
      while (next[s] < table[s].size() && ready(s, table[s][next[s]])) {
        const Step &step = table[s][next[s]];
        if (step.kind == Step::Forward || step.kind == Step::ForwardBackward)
          fwd[s][step.microBatch] = true;
        if (step.kind == Step::Backward || step.kind == Step::ForwardBackward)
          bwd[s][step.microBatch] = true;
        ++next[s];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int64_t s = 0; s < p; ++s)
    if (next[s] < table[s].size())
      stuck += (stuck.empty() ? "" : ", ") + ("stage " + std::to_string(s) + " at " + table[s][next[s]].str());
  return stuck;
}

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
  if (schedule != "1f1b" && schedule != "gpipe") {
    emitError(module.getLoc()) << "--ptrain-schedule: schedule must be gpipe or 1f1b, got '" << schedule << "'";
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
  int64_t p = stages.size();
  Table table = buildScheduleTable(schedule, p, m);
  if (std::string stuck = findDeadlock(table, m); !stuck.empty()) {
    emitError(module.getLoc()) << "--ptrain-schedule: the " << schedule << " table deadlocks: " << stuck;
    return signalPassFailure();
  }
  Builder b(module.getContext());
  SmallVector<Attribute> rows;
  for (const std::vector<Step> &steps : table) {
    SmallVector<Attribute> row;
    for (const Step &step : steps)
      row.push_back(b.getStringAttr(step.str()));
    rows.push_back(b.getArrayAttr(row));
  }
  module->setAttr("ptrain.schedule", b.getDictionaryAttr({b.getNamedAttr("kind", b.getStringAttr(schedule)),
                                                          b.getNamedAttr("micro_batches", b.getI64IntegerAttr(m)),
                                                          b.getNamedAttr("table", b.getArrayAttr(rows))}));
}
