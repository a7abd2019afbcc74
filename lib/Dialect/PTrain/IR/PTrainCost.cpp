//===- PTrainCost.cpp - FLOPs and bytes of ptrain ops ---------------*- C++ -*-===//
//
// CostOpInterface implementations and the fallback (PTrainCost.h). The per-element counts are the
// arithmetic of the reference kernels in lib/Runtime (documented in PTrainInterfaces.td).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainCost.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::ptrain;

double mlir::ptrain::getTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
  return static_cast<double>(tensor.getNumElements()) * ((bits + 7) / 8);
}

double mlir::ptrain::getOperandAndResultBytes(Operation *op) {
  double bytes = 0;
  for (Value v : op->getOperands())
    bytes += getTensorBytes(v.getType());
  for (Value v : op->getResults())
    bytes += getTensorBytes(v.getType());
  return bytes;
}

/// Elements of a statically shaped ranked tensor type; 0 otherwise.
static double numElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? static_cast<double>(tensor.getNumElements()) : 0;
}

OpCost mlir::ptrain::getOpCost(Operation *op) {
  if (auto cost = dyn_cast<CostOpInterface>(op))
    return {cost.getFlops(), cost.getBytesAccessed()};
  if (isa<func::CallOp, func::ReturnOp, StateReadOp, StateWriteOp, WaitOp, AsyncStartOpInterface>(op) ||
      op->hasTrait<OpTrait::ConstantLike>() || op->getNumResults() == 0)
    return {};
  OpCost cost;
  for (Value r : op->getResults())
    cost.flops += numElements(r.getType());
  cost.bytes = getOperandAndResultBytes(op);
  return cost;
}

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

double MatmulOp::getFlops() { return 2.0 * numElements(getResult().getType()) * getLhs().getType().getShape().back(); }
double LayerNormOp::getFlops() { return 8.0 * numElements(getResult().getType()); }
double SoftmaxOp::getFlops() { return 5.0 * numElements(getResult().getType()); }
double GeluOp::getFlops() { return 8.0 * numElements(getResult().getType()); }
double CrossEntropyOp::getFlops() { return 5.0 * numElements(getLogits().getType()); }
double TransposeOp::getFlops() { return 0; }
double DropoutOp::getFlops() { return 2.0 * numElements(getResult().getType()); }

double EmbeddingOp::getFlops() { return 0; }
double EmbeddingOp::getBytesAccessed() {
  // A gather: reads the ids and one table row per id, writes the rows.
  return getTensorBytes(getIds().getType()) + 2 * getTensorBytes(getResult().getType());
}

double ReshapeOp::getFlops() { return 0; }
double ReshapeOp::getBytesAccessed() { return 0; } // a view: no data moves

//===----------------------------------------------------------------------===//
// Gradient and optimizer ops
//===----------------------------------------------------------------------===//

double LayerNormGradOp::getFlops() { return 12.0 * numElements(getInput().getType()); }
double SoftmaxGradOp::getFlops() { return 4.0 * numElements(getResult().getType()); }
double GeluGradOp::getFlops() { return 12.0 * numElements(getResult().getType()); }
double EmbeddingGradOp::getFlops() { return numElements(getGrad().getType()); }
double CrossEntropyGradOp::getFlops() { return 6.0 * numElements(getLogits().getType()); }
double AdamWOp::getFlops() { return 14.0 * numElements(getParam().getType()); }
