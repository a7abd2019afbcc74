//===- OutlineCodecs.cpp - Codec sites into generated kernels --------------===//
//
// --ptrain-outline-codecs: see the pass description in Passes.td and
// include/ptrain/Transforms/QuantArith.h (issue 26).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Analysis/ElementwiseChains.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Transforms/QuantArith.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringMap.h"

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
    MLIRContext *ctx = module.getContext();
    SmallVector<std::pair<CompressOp, QuantKernelShape>> sites;
    for (auto func : module.getOps<func::FuncOp>())
      func.walk([&](CompressOp op) {
        if (std::optional<QuantKernelShape> shape = quantKernelShapeOf(op))
          sites.emplace_back(op, *shape);
      });
    if (sites.empty())
      return;
    auto kernels = dyn_cast_or_null<ModuleOp>(SymbolTable::lookupSymbolIn(module, kKernelModuleName));
    if (!kernels) {
      OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
      kernels = ModuleOp::create(builder, module.getLoc(), StringRef(kKernelModuleName));
    }
    OpBuilder inKernels = OpBuilder::atBlockEnd(kernels.getBody());
    llvm::StringMap<StringAttr> bySignature;
    int64_t kernelCount = 0;
    for (auto &[op, shape] : sites) {
      StringAttr &name = bySignature[shape.signature()];
      if (!name) {
        name = StringAttr::get(ctx, "ptrain_codec_kernel_" + std::to_string(kernelCount++));
        if (SymbolTable::lookupSymbolIn(kernels, name)) {
          op.emitError("--ptrain-outline-codecs: @")
              << kKernelModuleName << " already has @" << name.getValue() << "; the pass runs once";
          return signalPassFailure();
        }
        ++numKernels;
        buildQuantBlockEncoder(inKernels, op.getLoc(), name, shape);
      }
      op->setAttr(kCodecKernelAttr, SymbolRefAttr::get(ctx, kKernelModuleName, {FlatSymbolRefAttr::get(name)}));
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
