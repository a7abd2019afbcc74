//===- Report.cpp - the plan report, JSON and Perfetto trace ---------*- C++ -*-===//
//
// --ptrain-report: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Analysis/TimingAnalysis.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "ptrain-report"

namespace mlir::ptrain {
#define GEN_PASS_DEF_REPORTPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {
struct ReportPass : public ptrain::impl::ReportPassBase<ReportPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

/// Writes `value` to `path`; false with a diagnostic on failure.
static bool writeJSON(ModuleOp module, StringRef path, StringRef what, const llvm::json::Value &value) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    emitError(module.getLoc()) << "--ptrain-report: cannot write the " << what << " to '" << path
                               << "': " << ec.message();
    return false;
  }
  os << llvm::formatv("{0:2}", value) << "\n";
  return true;
}

void ReportPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto analysis = analyzeModule(module, cluster, parameterCasts);
  if (!analysis) {
    emitError(module.getLoc()) << "--ptrain-report: " << llvm::toString(analysis.takeError());
    return signalPassFailure();
  }
  analysis->printReport(llvm::errs());
  if (!json.empty() && !writeJSON(module, json, "report", analysis->toJSON()))
    return signalPassFailure();
  if (!trace.empty() && !writeJSON(module, trace, "trace", analysis->toTrace()))
    return signalPassFailure();
}
