//===- Autodiff.cpp - reverse-mode automatic differentiation -------*- C++ -*-===//

#include "ptrain/Transforms/Autodiff.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::ptrain;

/// The ONNX node name in `loc` (a NameLoc, possibly inside a fused or call-site location), or "".
static std::string nodeName(Location loc) {
  std::string name;
  loc->walk([&](Location inner) {
    if (auto named = dyn_cast<NameLoc>(inner)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

/// "initializer 'K'" (or "block argument #N") for the first `wrt` value found walking back from the
/// operands of `op` through the ops that depend on `wrt`: what made the op's input trainable.
static std::string trainableSource(Operation *op, const llvm::DenseSet<Value> &wrt,
                                   const llvm::DenseSet<Value> &dependsOnWrt) {
  SmallVector<Value> worklist(op->getOperands().begin(), op->getOperands().end());
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!dependsOnWrt.contains(v) || !seen.insert(v).second)
      continue;
    if (wrt.contains(v)) {
      if (auto read = v.getDefiningOp<StateReadOp>()) {
        auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(read, read.getStateAttr());
        return "initializer '" + (state ? state.getKey() : read.getState()).str() + "'";
      }
      if (auto arg = dyn_cast<BlockArgument>(v))
        return "block argument #" + std::to_string(arg.getArgNumber());
      return "a trained value";
    }
    if (Operation *def = v.getDefiningOp())
      worklist.append(def->getOperands().begin(), def->getOperands().end());
  }
  return "a trained value";
}

/// The error for an op on the path to the loss without a (working) gradient rule: the node, the op and
/// the initializer that made its input trainable.
static InFlightDiagnostic noGradientError(Operation &op, const llvm::DenseSet<Value> &wrt,
                                          const llvm::DenseSet<Value> &dependsOnWrt) {
  std::string node = nodeName(op.getLoc());
  InFlightDiagnostic diag = op.emitError();
  if (!node.empty())
    diag << "ONNX node '" << node << "': ";
  diag << "'" << op.getName() << "'";
  if (auto binary = dyn_cast<BinaryOp>(op))
    diag << " " << stringifyBinaryKind(binary.getKind());
  else if (auto unary = dyn_cast<UnaryOp>(op))
    diag << " " << stringifyUnaryKind(unary.getKind());
  diag << " is on the path to the loss but cannot be differentiated; its input is trainable through "
       << trainableSource(&op, wrt, dependsOnWrt)
       << " (if that should be a constant, pass the importer --frozen '<name>'; docs/ImportONNX.md)";
  return diag;
}

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
  llvm::DenseSet<Value> wrtSet(wrt.begin(), wrt.end());
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
      return noGradientError(op, wrtSet, dependsOnWrt) << ": it has no gradient rule";
    SmallVector<Value> operandGrads;
    size_t sizeBefore = builder.getInsertionBlock()->getOperations().size();
    if (failed(rule.buildGradients(builder, resultGrads, operandGrads)))
      return noGradientError(op, wrtSet, dependsOnWrt) << " (the rule's reason is above)";
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
