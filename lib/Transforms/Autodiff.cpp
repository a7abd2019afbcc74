//===- Autodiff.cpp - reverse-mode automatic differentiation -------*- C++ -*-===//

#include "ptrain/Transforms/Autodiff.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::ptrain;

FailureOr<SmallVector<Value>> mlir::ptrain::buildGradients(OpBuilder &builder, Value loss, Value seed,
                                                           ArrayRef<Value> wrt, int64_t *numBuiltOps) {
  Block *block = loss.getParentBlock();
  // Ops that depend on a wrt value (forward reachability within the block).
  llvm::DenseSet<Value> dependsOnWrt(wrt.begin(), wrt.end());
  llvm::DenseSet<Operation *> active;
  for (Operation &op : *block) {
    if (llvm::any_of(op.getOperands(), [&](Value v) { return dependsOnWrt.contains(v); })) {
      active.insert(&op);
      for (Value r : op.getResults())
        dependsOnWrt.insert(r);
    }
  }

  llvm::DenseMap<Value, Value> grads;
  auto accumulate = [&](Value v, Value g) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
      it->second = BinaryOp::create(builder, g.getLoc(), BinaryKind::Add, it->second, g);
  };
  grads[loss] = seed;

  // The ops up to the loss, listed before any gradient op is built: when the loss is the block's last op
  // (a pipeline stage's output), the gradient ops are appended right after it, and a reverse walk over the
  // live block would meet them and then the loss's op a second time (doubling its gradient).
  Operation *lossOp = loss.getDefiningOp();
  Block::iterator end = lossOp ? std::next(lossOp->getIterator()) : block->begin();
  SmallVector<Operation *> forward;
  for (Operation &op : llvm::make_range(block->begin(), end))
    forward.push_back(&op);
  int64_t built = 0;
  for (Operation *opPtr : llvm::reverse(forward)) {
    Operation &op = *opPtr;
    if (!active.contains(&op))
      continue;
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op.getResults()) {
      Value g = grads.lookup(r);
      resultGrads.push_back(g);
      any |= static_cast<bool>(g);
    }
    if (!any)
      continue;
    auto rule = dyn_cast<GradientOpInterface>(&op);
    if (!rule)
      return op.emitOpError("is on the path to the loss but has no gradient rule");
    SmallVector<Value> operandGrads;
    size_t sizeBefore = builder.getInsertionBlock()->getOperations().size();
    if (failed(rule.buildGradients(builder, resultGrads, operandGrads)))
      return failure();
    built += builder.getInsertionBlock()->getOperations().size() - sizeBefore;
    for (auto [operand, g] : llvm::zip(op.getOperands(), operandGrads))
      if (g && dependsOnWrt.contains(operand))
        accumulate(operand, g);
  }

  SmallVector<Value> result;
  for (Value v : wrt) {
    Value g = grads.lookup(v);
    if (!g) {
      auto type = cast<RankedTensorType>(v.getType());
      g = arith::ConstantOp::create(builder, v.getLoc(),
                                    DenseElementsAttr::get(type, builder.getFloatAttr(type.getElementType(), 0.0)));
    }
    result.push_back(g);
  }
  if (numBuiltOps)
    *numBuiltOps = built;
  return result;
}
