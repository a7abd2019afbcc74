//===- DeadOps.cpp - Side-effect-free ops whose results nothing reads ------===//
//
// See DeadOps.h. Walking backwards, an op's users are decided before the op.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/DeadOps.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;

DeadOps::DeadOps(ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() == 0 || !isMemoryEffectFree(op) || op->hasTrait<OpTrait::IsTerminator>() ||
        isa<arith::ConstantOp, ReshapeOp, TPCopyOp>(op))
      continue;
    if (llvm::all_of(op->getUsers(), [&](Operation *user) { return dead.contains(user); }))
      dead.insert(op);
  }
  // The forward of a parameter stays computed (DeadOps.h): a dead op reading a parameter, the dead ops reading
  // its results, and the dead ops whose results those read (so that every value read has a buffer), to a
  // fixed point.
  auto readsParameter = [](Value v) {
    auto read = v.getDefiningOp<StateReadOp>();
    if (!read)
      return false;
    auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(read, read.getStateAttr());
    return state && state.getKind() == StateKind::Parameter;
  };
  llvm::DenseSet<Operation *> kept;
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *op : ops) {
      if (!dead.contains(op) || kept.contains(op))
        continue;
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            return readsParameter(v) || (v.getDefiningOp() && kept.contains(v.getDefiningOp()));
          }))
        changed |= kept.insert(op).second;
    }
    for (Operation *op : llvm::reverse(ops)) {
      if (!dead.contains(op) || kept.contains(op))
        continue;
      if (llvm::any_of(op->getUsers(), [&](Operation *user) { return kept.contains(user); }))
        changed |= kept.insert(op).second;
    }
  }
  for (Operation *op : kept)
    dead.erase(op);
}
