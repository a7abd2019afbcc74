//===- KernelModule.cpp - Naming the kernels of an outlining pass ---------===//
//
// See include/ptrain/Transforms/KernelModule.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/KernelModule.h"

#include "ptrain/Analysis/ElementwiseChains.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::ptrain;

static ModuleOp kernelModuleOf(ModuleOp module) {
  if (auto kernels = dyn_cast_or_null<ModuleOp>(SymbolTable::lookupSymbolIn(module, kKernelModuleName)))
    return kernels;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  return ModuleOp::create(builder, module.getLoc(), StringRef(kKernelModuleName));
}

KernelNamer::KernelNamer(ModuleOp module, StringRef prefix)
    : kernels(kernelModuleOf(module)), inKernels(OpBuilder::atBlockEnd(kernels.getBody())), prefix(prefix.str()) {}

FailureOr<std::pair<SymbolRefAttr, bool>> KernelNamer::kernelFor(Operation *site, StringRef pass,
                                                                 StringRef signature) {
  SymbolRefAttr &kernel = bySignature[signature];
  if (kernel)
    return std::make_pair(kernel, false);
  MLIRContext *ctx = site->getContext();
  auto name = StringAttr::get(ctx, prefix + std::to_string(bySignature.size() - 1));
  if (SymbolTable::lookupSymbolIn(kernels, name))
    return site->emitError(pass) << ": @" << kKernelModuleName << " already has @" << name.getValue()
                                 << "; the pass runs once";
  kernel = SymbolRefAttr::get(ctx, kKernelModuleName, {FlatSymbolRefAttr::get(name)});
  return std::make_pair(kernel, true);
}
