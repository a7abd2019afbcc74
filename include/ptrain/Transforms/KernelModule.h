//===- KernelModule.h - Naming the kernels of an outlining pass ---*- C++ -*-===//
//
// The per-site outlining passes (--ptrain-outline-codecs, --ptrain-outline-adamw; issue 26,
// docs/GeneratedKernels.md) write one kernel per distinct signature into the nested module @ptrain_kernels
// (ElementwiseChains.h's kKernelModuleName), created if no earlier pass made it, and mark each site with the
// kernel's symbol. KernelNamer is that bookkeeping, shared by the passes.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_KERNELMODULE_H
#define PTRAIN_TRANSFORMS_KERNELMODULE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

#include <utility>

namespace mlir::ptrain {

/// Names the kernels of one pass run `<prefix>0`, `<prefix>1`, ... in the order their signatures first occur.
class KernelNamer {
public:
  /// Finds @ptrain_kernels in `module` or creates it at the module's end.
  KernelNamer(ModuleOp module, StringRef prefix);

  /// The kernel of `signature`, `@ptrain_kernels::@<name>`, and whether it is new (the caller then builds it at
  /// builder()). Fails with an error at `site`, naming `pass`, when @ptrain_kernels already holds the new name.
  FailureOr<std::pair<SymbolRefAttr, bool>> kernelFor(Operation *site, StringRef pass, StringRef signature);

  /// The insertion point at the end of @ptrain_kernels.
  OpBuilder &builder() { return inKernels; }

private:
  ModuleOp kernels;
  OpBuilder inKernels;
  std::string prefix;
  llvm::StringMap<SymbolRefAttr> bySignature;
};

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_KERNELMODULE_H
