//===- DeadOps.cpp - Side-effect-free ops whose results nothing reads ------===//
//
// See DeadOps.h. Walking backwards, an op's users are decided before the op.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/DeadOps.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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
}
