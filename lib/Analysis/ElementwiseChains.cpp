//===- ElementwiseChains.cpp - Elementwise chains the compiler fuses ------===//
//
// See ElementwiseChains.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/ElementwiseChains.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::ptrain;

static ArrayRef<int64_t> shapeOfValue(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

bool mlir::ptrain::isFusibleElementwise(Operation *op) {
  if (!isa<BinaryOp, GeluOp, GeluGradOp>(op) || op->getNumResults() != 1)
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
    return false;
  // The exact (erf) GELU: GeluArith.h reproduces the runtime's definition bit for bit. The tanh form's runtime
  // kernel (cpu/GeluTanh.cpp) has no arith twin yet.
  if (auto gelu = dyn_cast<GeluOp>(op))
    return gelu.getApproximate() == GeluApproximation::None;
  if (auto grad = dyn_cast<GeluGradOp>(op))
    return grad.getApproximate() == GeluApproximation::None;
  auto binary = cast<BinaryOp>(op);
  switch (binary.getKind()) {
  case BinaryKind::Add:
  case BinaryKind::Sub:
  case BinaryKind::Mul:
  case BinaryKind::Div:
    return true;
  default: // pow goes through fp64 in the runtime; max and min have their NaN rules
    return false;
  }
}

/// Whether `op` is an `OpT` (ptrain.softmax or ptrain.softmax_grad) over the last axis of an f32 tensor of
/// static shape and rank >= 1.
template <typename OpT> static bool isLastAxisF32(Operation *op) {
  auto row = dyn_cast<OpT>(op);
  if (!row)
    return false;
  auto type = dyn_cast<RankedTensorType>(row.getResult().getType());
  if (!type || !type.hasStaticShape() || type.getRank() < 1 || !type.getElementType().isF32())
    return false;
  int64_t axis = row.getAxisAttr().getInt();
  return axis == -1 || axis == type.getRank() - 1;
}

bool mlir::ptrain::isRowSoftmax(Operation *op) { return isLastAxisF32<SoftmaxOp>(op); }

bool mlir::ptrain::isRowSoftmaxGrad(Operation *op) { return isLastAxisF32<SoftmaxGradOp>(op); }

bool ElementwiseChain::startsWithSoftmaxGrad() const { return !ops.empty() && isa<SoftmaxGradOp>(ops.front()); }

bool ElementwiseChain::endsInSoftmax() const { return !ops.empty() && isa<SoftmaxOp>(ops.back()); }

ArrayRef<int64_t> ElementwiseChain::shape() const { return shapeOfValue(ops.front()->getResult(0)); }

AffineMap ElementwiseChain::inputMap(Value input) const {
  ArrayRef<int64_t> out = shape(), in = shapeOfValue(input);
  MLIRContext *ctx = input.getContext();
  SmallVector<AffineExpr> exprs;
  const size_t lead = out.size() - in.size();
  for (auto [d, size] : llvm::enumerate(in))
    exprs.push_back(size == 1 && out[lead + d] != 1 ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(lead + d, ctx));
  return AffineMap::get(out.size(), 0, exprs, ctx);
}

static int64_t bytesOfValue(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

int64_t ElementwiseChain::fusedBytes() const {
  int64_t bytes = 0;
  for (Value v : llvm::concat<const Value>(inputs, outputs))
    bytes += bytesOfValue(v);
  return bytes;
}

int64_t ElementwiseChain::unfusedBytes() const {
  int64_t bytes = 0;
  for (Operation *op : ops) {
    for (Value v : op->getOperands())
      bytes += bytesOfValue(v);
    bytes += bytesOfValue(op->getResult(0));
  }
  return bytes;
}

SmallVector<Operation *> mlir::ptrain::markedChainAt(ArrayRef<Operation *> ops, size_t i, TransparentOps transparent) {
  auto positionOf = [](Operation *op) -> int64_t {
    auto position = op->getAttrOfType<IntegerAttr>(kKernelOpAttr);
    return position ? position.getInt() : -1;
  };
  auto kernel = ops[i]->getAttrOfType<SymbolRefAttr>(kKernelAttr);
  if (!kernel || positionOf(ops[i]) != 0)
    return {};
  SmallVector<Operation *> members{ops[i]};
  for (size_t j = i + 1; j < ops.size(); ++j) {
    if (ops[j]->getAttr(kKernelAttr) == kernel && positionOf(ops[j]) == static_cast<int64_t>(members.size()))
      members.push_back(ops[j]);
    else if (!transparent || !transparent(ops[j]) || ops[j]->getAttr(kKernelAttr))
      break;
  }
  return members;
}

std::string ElementwiseChain::signature() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto shapeText = [&](ArrayRef<int64_t> s) {
    os << "<";
    llvm::interleave(s, os, "x");
    os << ">";
  };
  shapeText(shape());
  for (Value in : inputs) {
    os << " in";
    shapeText(shapeOfValue(in));
  }
  for (Operation *op : ops) {
    if (auto binary = dyn_cast<BinaryOp>(op))
      os << " " << stringifyBinaryKind(binary.getKind()) << "(";
    else
      os << " " << op->getName().stripDialect() << "(";
    for (Value operand : op->getOperands()) {
      if (const Value *in = llvm::find(inputs, operand); in != inputs.end())
        os << "i" << (in - inputs.begin());
      else
        os << "t" << (llvm::find(ops, operand.getDefiningOp()) - ops.begin());
      os << ",";
    }
    os << ")";
  }
  for (Value out : outputs)
    os << " out" << (llvm::find(ops, out.getDefiningOp()) - ops.begin());
  return text;
}

ElementwiseChain mlir::ptrain::describeChain(ArrayRef<Operation *> ops, TransparentOps transparent) {
  ElementwiseChain chain;
  chain.ops.assign(ops.begin(), ops.end());
  llvm::SmallPtrSet<Operation *, 8> members(ops.begin(), ops.end());
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (!members.contains(operand.getDefiningOp()) && !llvm::is_contained(chain.inputs, operand))
        chain.inputs.push_back(operand);
    Value result = op->getResult(0);
    if (op == ops.back() || llvm::any_of(result.getUsers(), [&](Operation *user) {
          return !members.contains(user) && !(transparent && transparent(user));
        }))
      chain.outputs.push_back(result);
  }
  return chain;
}

SmallVector<ElementwiseChain> mlir::ptrain::findElementwiseChains(ArrayRef<Operation *> ops,
                                                                  function_ref<bool(Operation *)> skip,
                                                                  TransparentOps transparent) {
  SmallVector<ElementwiseChain> chains;
  SmallVector<Operation *> run;
  auto close = [&] {
    if (run.size() >= 2)
      chains.push_back(describeChain(run, transparent));
    run.clear();
  };
  auto extends = [&](Operation *op) {
    return !run.empty() && shapeOfValue(op->getResult(0)) == shapeOfValue(run.front()->getResult(0)) &&
           llvm::any_of(op->getOperands(), [&](Value v) { return llvm::is_contained(run, v.getDefiningOp()); });
  };
  for (Operation *op : ops) {
    if (transparent && transparent(op))
      continue; // not emitted: neither in the chain nor between its ops
    // A row softmax gradient starts a run (its rows' dot products come first).
    if (isRowSoftmaxGrad(op) && !skip(op)) {
      close();
      run.push_back(op);
      continue;
    }
    // A row softmax ends the run it extends (its rows read the elementwise prologue's results); one row
    // reduction per kernel.
    if (isRowSoftmax(op) && !skip(op) && extends(op) && !isRowSoftmaxGrad(run.front())) {
      run.push_back(op);
      close();
      continue;
    }
    if (!isFusibleElementwise(op) || skip(op)) {
      close();
      continue;
    }
    if (!extends(op))
      close();
    run.push_back(op);
  }
  close();
  return chains;
}
