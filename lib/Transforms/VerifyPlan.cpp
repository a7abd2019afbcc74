//===- VerifyPlan.cpp - abstract execution of every rank ----------*- C++ -*-===//
//
// --ptrain-verify-plan: see the pass description in Passes.td. The multi-rank executor in abstract mode runs
// the lowered train and eval steps of every rank; any error it reports rejects the plan.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Interpreter/MultiRankExecutor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "ptrain-verify-plan"

namespace mlir::ptrain {
#define GEN_PASS_DEF_VERIFYPLANPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// The grid axes on which the plan is symmetric (Passes.td, "Symmetry"): not `pp`, not used by a transfer,
/// and every rank runs the entry of its replica at coordinate 0 of the axis.
std::vector<std::string> symmetricAxes(ModuleOp module, const interp::MultiRankExecutor &executor,
                                       llvm::ArrayRef<std::string> entries) {
  llvm::StringSet<> transferAxes;
  module.walk([&](Operation *op) {
    if (auto send = dyn_cast<SendStartOp>(op))
      transferAxes.insert(send.getAxis());
    else if (auto recv = dyn_cast<RecvStartOp>(op))
      transferAxes.insert(recv.getAxis());
  });
  llvm::ArrayRef<std::string> names = executor.getAxisNames();
  const int64_t numRanks = executor.getNumRanks();
  std::vector<std::string> symmetric;
  int64_t stride = numRanks; // ranks are row-major over the axes in order
  for (const std::string &axis : names) {
    const int64_t size = executor.getAxisSize(axis);
    stride /= size;
    if (axis == "pp" || size < 2 || transferAxes.contains(axis))
      continue;
    bool same = true;
    for (int64_t r = 0; r < numRanks && same; ++r)
      same = entries[r] == entries[r - executor.getCoordinate(r, axis) * stride];
    if (same)
      symmetric.push_back(axis);
  }
  return symmetric;
}

struct VerifyPlanPass : ptrain::impl::VerifyPlanPassBase<VerifyPlanPass> {
  using VerifyPlanPassBase::VerifyPlanPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    std::vector<std::string> symmetric;
    int64_t executed = 0, covered = 0; // ranks executed and ranks covered by symmetry (statistics may be compiled out)
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
      if (!allRanks)
        symmetric = symmetricAxes(module, **executor, entries);
      if (llvm::Error error = (*executor)->setSymmetricAxes(symmetric)) {
        emitError(module.getLoc(), "--ptrain-verify-plan: ") << llvm::toString(std::move(error));
        return signalPassFailure();
      }
      llvm::Expected<std::vector<std::vector<interp::Tensor>>> ran = (*executor)->run(
          [&](int64_t r) { return entries[r]; }, [](int64_t) { return std::vector<interp::Tensor>(); });
      if (!ran) {
        auto diag = emitError(module.getLoc(), "--ptrain-verify-plan: ")
                    << kind << " step: " << llvm::toString(ran.takeError());
        if (!symmetric.empty())
          diag << "\n(verified one rank per coordinate of the other axes: the replicas over "
               << llvm::join(symmetric, ", ")
               << " run the same steps and post the same communication; all-ranks=true runs every rank)";
        return signalPassFailure();
      }
      executed = (*executor)->getNumActiveRanks();
      covered = (*executor)->getNumRanks() - executed;
      numRanks = executed;
      numSymmetricRanks = covered;
    }
    // Say so when symmetry shortened the run.
    if (any && covered > 0)
      emitRemark(module.getLoc(), "--ptrain-verify-plan: ran ")
          << executed << " of " << executed + covered
          << " ranks, one per coordinate of the other axes: the replicas over " << llvm::join(symmetric, ", ")
          << " run the same steps and post the same communication (all-ranks=true runs every rank)";
    if (!any) {
      emitError(module.getLoc(), "--ptrain-verify-plan: no function with ptrain.entry = \"train\" or \"eval\" (run "
                                 "--ptrain-lower-to-runtime first)");
      return signalPassFailure();
    }
  }
};

} // namespace
