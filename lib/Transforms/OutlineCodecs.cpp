//===- OutlineCodecs.cpp - Codec sites into generated kernels --------------===//
//
// --ptrain-outline-codecs: see the pass description in Passes.td and
// include/ptrain/Transforms/QuantArith.h (issue 26).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Analysis/ElementwiseChains.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Transforms/KernelModule.h"
#include "ptrain/Transforms/QuantArith.h"

#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "ptrain-outline-codecs"

namespace mlir::ptrain {
#define GEN_PASS_DEF_OUTLINECODECSPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

struct OutlineCodecsPass : ptrain::impl::OutlineCodecsPassBase<OutlineCodecsPass> {
  using OutlineCodecsPassBase::OutlineCodecsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<CompressOp, QuantKernelShape>> sites;
    for (auto func : module.getOps<func::FuncOp>())
      func.walk([&](CompressOp op) {
        if (std::optional<QuantKernelShape> shape = quantKernelShapeOf(op))
          sites.emplace_back(op, *shape);
      });
    if (sites.empty())
      return;
    KernelNamer namer(module, "ptrain_codec_kernel_");
    for (auto &[op, shape] : sites) {
      FailureOr<std::pair<SymbolRefAttr, bool>> kernel =
          namer.kernelFor(op, "--ptrain-outline-codecs", shape.signature());
      if (failed(kernel))
        return signalPassFailure();
      StringAttr name = kernel->first.getLeafReference();
      if (kernel->second) {
        ++numKernels;
        buildQuantBlockEncoder(namer.builder(), op.getLoc(), name, shape);
      }
      op->setAttr(kCodecKernelAttr, kernel->first);
      ++numSites;
      if (remarks)
        emitRemark(op.getLoc()) << "codec site: " << name.getValue() << ", " << shape.numel << " elements, "
                                << shape.bits << " bits, blocks of " << shape.block
                                << (shape.symmetric ? ", symmetric" : ", asymmetric")
                                << (shape.feedback ? ", error feedback" : "");
    }
  }
};

} // namespace
