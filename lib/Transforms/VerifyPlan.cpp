//===- VerifyPlan.cpp - abstract execution of every rank ----------*- C++ -*-===//
//
// --ptrain-verify-plan: see the pass description in Passes.td. The multi-rank executor in abstract mode runs
// the lowered train and eval steps of every rank; any error it reports rejects the plan.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Interpreter/MultiRankExecutor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "ptrain-verify-plan"

namespace mlir::ptrain {
#define GEN_PASS_DEF_VERIFYPLANPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

struct VerifyPlanPass : ptrain::impl::VerifyPlanPassBase<VerifyPlanPass> {
  using VerifyPlanPassBase::VerifyPlanPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    for (StringRef kind : {"train", "eval"}) {
      bool present = llvm::any_of(module.getOps<func::FuncOp>(), [&](func::FuncOp fn) {
        auto entry = fn->getAttrOfType<StringAttr>("ptrain.entry");
        return entry && entry.getValue() == kind;
      });
      if (!present)
        continue;
      any = true;
      auto noState = [](StringRef key, RankedTensorType) -> llvm::Expected<interp::Tensor> {
        return interp::makeError("abstract execution reads no state");
      };
      llvm::Expected<std::unique_ptr<interp::MultiRankExecutor>> executor =
          interp::MultiRankExecutor::create(module, noState, interp::ExecutionMode::Abstract);
      if (!executor) {
        emitError(module.getLoc(), "--ptrain-verify-plan: ") << llvm::toString(executor.takeError());
        return signalPassFailure();
      }
      std::vector<std::string> entries;
      for (int64_t r = 0, n = (*executor)->getNumRanks(); r < n; ++r) {
        llvm::Expected<std::string> entry = (*executor)->entryForRank(r, kind);
        if (!entry) {
          emitError(module.getLoc(), "--ptrain-verify-plan: ")
              << kind << " step: " << (*executor)->describeRank(r) << ": " << llvm::toString(entry.takeError());
          return signalPassFailure();
        }
        entries.push_back(*entry);
      }
      llvm::Expected<std::vector<std::vector<interp::Tensor>>> ran = (*executor)->run(
          [&](int64_t r) { return entries[r]; }, [](int64_t) { return std::vector<interp::Tensor>(); });
      if (!ran) {
        emitError(module.getLoc(), "--ptrain-verify-plan: ") << kind << " step: " << llvm::toString(ran.takeError());
        return signalPassFailure();
      }
      numRanks = (*executor)->getNumRanks();
    }
    if (!any) {
      emitError(module.getLoc(), "--ptrain-verify-plan: no function with ptrain.entry = \"train\" or \"eval\" (run "
                                 "--ptrain-lower-to-runtime first)");
      return signalPassFailure();
    }
  }
};

} // namespace
