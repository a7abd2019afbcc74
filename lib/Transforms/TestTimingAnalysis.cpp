//===- TestTimingAnalysis.cpp - the timing analysis for lit ---------*- C++ -*-===//
//
// --test-ptrain-timing: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Analysis/TimingAnalysis.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "test-ptrain-timing"

namespace mlir::ptrain {
#define GEN_PASS_DEF_TESTTIMINGANALYSISPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {
struct TestTimingAnalysisPass : public ptrain::impl::TestTimingAnalysisPassBase<TestTimingAnalysisPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void TestTimingAnalysisPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto analysis = analyzeModule(module, cluster);
  if (!analysis) {
    emitError(module.getLoc()) << "--test-ptrain-timing: " << llvm::toString(analysis.takeError());
    return signalPassFailure();
  }
  analysis->print(llvm::outs());
  module->setAttr("ptrain.test.iteration_time",
                  Builder(module.getContext()).getF64FloatAttr(analysis->getTimeline().iterationTime));
}
