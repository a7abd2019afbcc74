//===- PrintSchedule.cpp - the schedule table per rank -------------*- C++ -*-===//
//
// --ptrain-print-schedule: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "ptrain/Analysis/PipelinePlan.h"
#include "ptrain/Plan/ScheduleTable.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "ptrain-print-schedule"

namespace mlir::ptrain {
#define GEN_PASS_DEF_PRINTSCHEDULEPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

struct PrintSchedulePass : ptrain::impl::PrintSchedulePassBase<PrintSchedulePass> {
  using PrintSchedulePassBase::PrintSchedulePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    ScheduleAttr schedule = getSchedule(module);
    if (!schedule) {
      emitError(module.getLoc(), "--ptrain-print-schedule: no ptrain.schedule; run --ptrain-schedule first");
      return signalPassFailure();
    }
    StringRef kind = schedule.getKind();
    const int64_t m = schedule.getMicroBatches(), v = schedule.getVirtualStages();
    ArrayAttr table = schedule.getTable();
    const int64_t p = table.size();
    ScheduleTableRows rows(p);
    for (auto [s, rowAttr] : llvm::enumerate(table)) {
      auto row = dyn_cast<ArrayAttr>(rowAttr);
      for (Attribute entry : row ? row : ArrayAttr::get(module.getContext(), {})) {
        auto text = dyn_cast<StringAttr>(entry);
        std::optional<ScheduleStep> step = text ? ScheduleStep::parse(text.getValue()) : std::nullopt;
        if (!step) {
          emitError(module.getLoc(), "--ptrain-print-schedule: stage ") << s << ": malformed step " << entry;
          return signalPassFailure();
        }
        rows[s].push_back(*step);
      }
    }
    llvm::raw_ostream &os = llvm::outs();
    os << "schedule " << kind << ": pp = " << p << ", virtual stages = " << v << ", micro-batches = " << m << "\n";
    for (int64_t s = 0; s < p; ++s) {
      os << "stage " << s << ":";
      for (const ScheduleStep &step : rows[s])
        os << " " << step.str();
      os << "\n";
    }
    // The timing model with unit costs: a forward of one model chunk takes 1, its backward 2 (Narayanan et al.
    // 2021's t_b = 2 t_f), the fused FB 3; communication and the optimizer step are free.
    PipelinePlanIndex index;
    llvm::Expected<Plan> plan = buildPipelinePlan(getUniformPipelineCosts(rows, v, 1.0, 2.0, 3.0), index);
    Timeline timing;
    std::string stuck;
    bool ok = plan ? simulate(*plan, timing, stuck) : (stuck = llvm::toString(plan.takeError()), false);
    if (!ok) {
      emitError(module.getLoc(), "--ptrain-print-schedule: the table deadlocks: ") << stuck;
      return signalPassFailure();
    }
    double makespan = timing.iterationTime;
    os << "unit costs (forward 1, backward 2 per model chunk, free communication): makespan "
       << llvm::format("%g", makespan) << "\n";
    for (int64_t s = 0; s < p; ++s) {
      double busy = timing.computeTime[s], idle = makespan - busy;
      os << "stage " << s << ": busy " << llvm::format("%g", busy) << ", idle " << llvm::format("%g", idle)
         << ", bubble (idle / busy) " << llvm::format("%.4f", busy > 0 ? idle / busy : 0.0) << "\n";
    }
  }
};

} // namespace
