//===- AbstractSteps.cpp - the ops abstract execution must step ------*- C++ -*-===//
//
// See AbstractSteps.h.
//
//===----------------------------------------------------------------------===//

#include "AbstractSteps.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

/// The ops the executor treats as communication (MultiRankExecutor::Impl::step).
static bool isCommunication(Operation *op) {
  return isa<WaitOp, SendStartOp, RecvStartOp, CompressedAllReduceStartOp, TPAllReduceOp, TPAllGatherOp,
             AllReduceStartOp, AllGatherStartOp, ReduceScatterStartOp, BroadcastStartOp, CompressedReduceScatterStartOp>(op);
}

func::FuncOp AbstractSteps::calleeOf(func::CallOp call) {
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock())
    return {};
  return callee;
}

bool AbstractSteps::communicatesNothing(func::FuncOp fn) {
  if (auto it = silent.find(fn); it != silent.end())
    return it->second;
  silent[fn] = false; // while visiting: recursion is stepped (the executor reports it)
  bool result = !fn.walk([&](Operation *op) {
                     if (isCommunication(op))
                       return WalkResult::interrupt();
                     if (auto call = dyn_cast<func::CallOp>(op)) {
                       func::FuncOp callee = calleeOf(call);
                       if (!callee || !communicatesNothing(callee))
                         return WalkResult::interrupt();
                     }
                     return WalkResult::advance();
                   }).wasInterrupted();
  silent[fn] = result;
  return result;
}

bool AbstractSteps::mustStep(Operation *op) {
  if (isCommunication(op) || op->hasTrait<OpTrait::IsTerminator>())
    return true;
  if (auto call = dyn_cast<func::CallOp>(op)) {
    func::FuncOp callee = calleeOf(call);
    return !callee || !communicatesNothing(callee);
  }
  return false;
}

Operation *AbstractSteps::nextToStep(Operation *op) {
  if (auto it = target.find(op); it != target.end())
    return it->second;
  Operation *next = nullptr;
  for (Operation &o : llvm::reverse(*op->getBlock())) {
    if (!next || mustStep(&o))
      next = &o;
    target[&o] = next;
  }
  return target.lookup(op);
}
