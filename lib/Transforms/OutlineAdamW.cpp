//===- OutlineAdamW.cpp - AdamW updates into generated kernels -------------===//
//
// --ptrain-outline-adamw: see the pass description in Passes.td and
// include/ptrain/Transforms/AdamWArith.h (issue 26).
//
//===----------------------------------------------------------------------===//

// The pass registers the math dialect (math.sqrt), which Passes.h does not include for every user.
#include "mlir/Dialect/Math/IR/Math.h"
#include "ptrain/Transforms/Passes.h"

#include "ptrain/Analysis/ElementwiseChains.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Transforms/AdamWArith.h"
#include "ptrain/Transforms/KernelModule.h"

#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "ptrain-outline-adamw"

namespace mlir::ptrain {
#define GEN_PASS_DEF_OUTLINEADAMWPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

struct OutlineAdamWPass : ptrain::impl::OutlineAdamWPassBase<OutlineAdamWPass> {
  using OutlineAdamWPassBase::OutlineAdamWPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<AdamWOp, AdamWKernelShape>> updates;
    for (auto func : module.getOps<func::FuncOp>())
      func.walk([&](AdamWOp op) {
        // An update already marked (an earlier run, or a kernel written by hand) keeps its kernel.
        if (op->hasAttr(kAdamWKernelAttr))
          return;
        if (std::optional<AdamWKernelShape> shape = adamwKernelShapeOf(op)) {
          // A mul a fused elementwise chain already computes stays there: the kernel then reads its result.
          if (BinaryOp mul = foldedClipScaleOf(op); mul && mul->hasAttr(kKernelAttr))
            shape->clipScale = false;
          updates.emplace_back(op, *shape);
        }
      });
    if (updates.empty())
      return;
    KernelNamer namer(module, "ptrain_adamw_kernel_");
    for (auto &[op, shape] : updates) {
      FailureOr<std::pair<SymbolRefAttr, bool>> kernel =
          namer.kernelFor(op, "--ptrain-outline-adamw", shape.signature());
      if (failed(kernel))
        return signalPassFailure();
      StringAttr name = kernel->first.getLeafReference();
      if (kernel->second) {
        ++numKernels;
        buildAdamWKernel(namer.builder(), op.getLoc(), name, shape);
      }
      op->setAttr(kAdamWKernelAttr, kernel->first);
      ++numUpdates;
      if (remarks)
        emitRemark(op.getLoc()) << "AdamW update: " << name.getValue() << ", " << shape.numel << " elements"
                                << (shape.clipScale ? ", the clip scale folded in" : "");
    }
  }
};

} // namespace
