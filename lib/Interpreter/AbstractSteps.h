//===- AbstractSteps.h - the ops abstract execution must step -------*- C++ -*-===//
//
// In abstract mode (ExecutionMode::Abstract, --ptrain-verify-plan) the multi-rank executor computes no
// values: only communication (point-to-point starts, collectives, waits), calls into functions that
// communicate and returns change what it checks. Every other op, and every call of a function that
// (transitively) communicates nothing, is a no-op there, so the executor jumps over them: on the 96-layer
// plan (1,024 ranks) this turns the per-op interpretation of every stage function into a walk over its
// collectives (bench/README.md, "plan passes").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_INTERPRETER_ABSTRACTSTEPS_H
#define PTRAIN_LIB_INTERPRETER_ABSTRACTSTEPS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::ptrain::interp {

class AbstractSteps {
public:
  explicit AbstractSteps(SymbolTable &symbols) : symbols(symbols) {}

  /// The first op at or after `op` in its block that abstract execution must step: a communication op, a
  /// wait, the terminator, or a call of a function that communicates (or that the executor rejects: an
  /// unknown, external or multi-block callee, or recursion). Memoized per block.
  Operation *nextToStep(Operation *op);

private:
  bool mustStep(Operation *op);
  /// Whether `fn` and its callees contain no communication op (false for recursion and bad callees).
  bool communicatesNothing(func::FuncOp fn);
  /// A callee the executor can enter: defined, with one block.
  func::FuncOp calleeOf(func::CallOp call);

  SymbolTable &symbols;
  llvm::DenseMap<Operation *, bool> silent;
  llvm::DenseMap<Operation *, Operation *> target;
};

} // namespace mlir::ptrain::interp

#endif // PTRAIN_LIB_INTERPRETER_ABSTRACTSTEPS_H
