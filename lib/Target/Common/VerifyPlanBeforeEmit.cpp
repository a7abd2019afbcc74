//===- VerifyPlanBeforeEmit.cpp - The plan verifier ahead of code generation ------------------------------===//

#include "Common/VerifyPlanBeforeEmit.h"

#include "ptrain/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"

using namespace mlir;

static llvm::cl::opt<bool> verifyPlan(
    "emit-verify-plan",
    llvm::cl::desc("--emit-cpp, --emit-cuda: run --ptrain-verify-plan on a lowered plan before emitting it "
                   "(default); =false when the pipeline has just verified it (ptrain-compile)"),
    llvm::cl::init(true));

bool mlir::ptrain::shouldVerifyPlanBeforeEmit() { return verifyPlan; }

LogicalResult mlir::ptrain::verifyPlanBeforeEmit(ModuleOp module, StringRef flag) {
  bool lowered = llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp fn) {
    auto entry = fn->getAttrOfType<StringAttr>("ptrain.entry");
    return entry && (entry.getValue() == "train" || entry.getValue() == "eval");
  });
  if (!lowered)
    return success();
  // The verifier remarks when symmetry let it run fewer ranks; that is not news to a code generator's user.
  ScopedDiagnosticHandler dropRemarks(module.getContext(), [](Diagnostic &diag) {
    return success(diag.getSeverity() == DiagnosticSeverity::Remark);
  });
  PassManager pm(module.getContext());
  pm.addPass(createVerifyPlanPass());
  if (succeeded(pm.run(module)))
    return success();
  return mlir::emitError(module.getLoc(), flag)
         << ": the plan fails --ptrain-verify-plan (above); not emitting it (--emit-verify-plan=false skips "
            "the check)";
}
