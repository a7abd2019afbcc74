//===- FusedChains.h - The chains a step calls a generated kernel for -*- C++ -*-===//
//
// Both code generators' side of issue 26's elementwise chains
// (docs/GeneratedKernels.md): which chains --ptrain-outline-elementwise marked
// a function calls its generated kernel for (the CPU's object code, CUDA's
// PTX), given where the memory plan put the chain's values. One rule for
// both targets: a chain whose kernel would read an input another of its
// outputs overwrote first, or an input that is no memory, stays per-op
// runtime calls.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_FUSEDCHAINS_H
#define PTRAIN_TARGET_COMMON_FUSEDCHAINS_H

#include "Common/NamedStorage.h"

#include "ptrain/Analysis/ElementwiseChains.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::ptrain::target {

/// A chain whose generated kernel a function calls, and that kernel's symbol in @ptrain_kernels.
struct FusedChain {
  std::string kernel;
  ElementwiseChain chain;
};

/// The chains a function calls kernels for, and the chain of each of their ops.
struct FusedChains {
  std::vector<FusedChain> chains;
  llvm::DenseMap<Operation *, size_t> chainOf; ///< index into chains of each op of a fused chain

  /// The arena byte range [begin, end) of `v` (through aliases) in `liveness`'s placed buffers, or nullopt for
  /// memory outside the arena (states, arguments, literal constants).
  static std::optional<std::pair<int64_t, int64_t>>
  arenaRange(Value v, const llvm::DenseMap<Value, NamedStorage> &storage, const BufferLiveness &liveness);

  /// Plans the chains of `func` (its top-level ops `ops`, the storage of their values placed by `liveness`)
  /// marked by --ptrain-outline-elementwise: every chain whose inputs are real memory that no two share in
  /// part (a view and its root, or a buffer that changed hands inside the chain), whose outputs are arena
  /// buffers overlapping no input but one they equal exactly and read at the same index, and none of whose ops
  /// GEMM fusion or dead-op elimination takes, and for whose kernel `available` holds (null: every kernel; the
  /// CUDA target: those with a GPU version). An error at the chain's first op, prefixed with `flag`, when the mark
  /// names no kernel of this chain's inputs and outputs.
  LogicalResult plan(func::FuncOp func, ArrayRef<Operation *> ops, const llvm::DenseMap<Value, NamedStorage> &storage,
                     const BufferLiveness &liveness, StringRef flag,
                     function_ref<bool(func::FuncOp kernel)> available = nullptr);
};

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_FUSEDCHAINS_H
