//===- CriticalPath.cpp - slack and critical flags on the schedule -*- C++ -*-===//
//
// --ptrain-critical-path: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Analysis/TimingAnalysis.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"

#define DEBUG_TYPE "ptrain-critical-path"

namespace mlir::ptrain {
#define GEN_PASS_DEF_CRITICALPATHPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {
struct CriticalPathPass : public ptrain::impl::CriticalPathPassBase<CriticalPathPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void CriticalPathPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto analysis = analyzeModule(module, cluster, parameterCasts);
  if (!analysis) {
    emitError(module.getLoc()) << "--ptrain-critical-path: " << llvm::toString(analysis.takeError());
    return signalPassFailure();
  }
  Builder b(module.getContext());
  const ModuleTimingModel &model = analysis->getModel();
  SmallVector<Attribute> slack, critical, sendSlack, sendCritical;
  for (int64_t s = 0; s < model.pp; ++s) {
    SmallVector<Attribute> sl, cr, ssl, scr;
    for (size_t i = 0; i < model.costs.table[s].size(); ++i) {
      StepTiming t = *analysis->lookup(s, i);
      sl.push_back(b.getF64FloatAttr(t.slack));
      cr.push_back(b.getBoolAttr(t.critical));
      std::optional<StepTiming> send = analysis->lookupSend(s, i);
      ssl.push_back(b.getF64FloatAttr(send ? send->slack : -1.0));
      scr.push_back(b.getBoolAttr(send && send->critical));
    }
    slack.push_back(b.getArrayAttr(sl));
    critical.push_back(b.getArrayAttr(cr));
    sendSlack.push_back(b.getArrayAttr(ssl));
    sendCritical.push_back(b.getArrayAttr(scr));
    if (model.costs.ranks[s].peakMemory > model.costs.memoryCapacity) {
      std::string gib;
      llvm::raw_string_ostream(gib) << llvm::format("%.2f GiB per device, more than the %.2f GiB of ",
                                                    model.costs.ranks[s].peakMemory / (1 << 30),
                                                    model.costs.memoryCapacity / (1 << 30));
      emitWarning(module.getLoc()) << "--ptrain-critical-path: stage " << s << " needs about " << gib
                                   << analysis->getCluster().gpuName;
    }
  }
  ArrayAttr dpSlackAttr, dpCriticalAttr;
  if (model.dp > 1) {
    SmallVector<Attribute> dpSlack, dpCritical;
    for (int64_t s = 0; s < model.pp; ++s) {
      std::optional<StepTiming> t = analysis->lookupDataParallel(s);
      dpSlack.push_back(b.getF64FloatAttr(t ? t->slack : -1.0));
      dpCritical.push_back(b.getBoolAttr(t && t->critical));
    }
    dpSlackAttr = b.getArrayAttr(dpSlack);
    dpCriticalAttr = b.getArrayAttr(dpCritical);
  }
  // The analysis read the schedule (analyzeModule fails without one); a second run replaces the first's results.
  ScheduleAttr schedule = getSchedule(module);
  setSchedule(module,
              ScheduleAttr::get(module.getContext(), schedule.getKind(), schedule.getMicroBatches(),
                                schedule.getVirtualStages(), schedule.getTable(), b.getArrayAttr(slack),
                                b.getArrayAttr(critical), b.getArrayAttr(sendSlack), b.getArrayAttr(sendCritical),
                                dpSlackAttr, dpCriticalAttr, b.getF64FloatAttr(analysis->getTimeline().iterationTime),
                                b.getF64FloatAttr(analysis->getTimeline().bubble)));
}
