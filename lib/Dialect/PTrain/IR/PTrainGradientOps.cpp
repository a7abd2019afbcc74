//===- PTrainGradientOps.cpp - ops of the backward pass ----------*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainCrossEntropy.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainGradientOps.cpp.inc"

LogicalResult SumToOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  // (C1)
  SmallVector<int64_t> shape;
  if (in.getElementType() != out.getElementType() ||
      !OpTrait::util::getBroadcastedShape(out.getShape(), in.getShape(), shape) || ArrayRef(shape) != in.getShape())
    return emitOpError() << "result " << out << " must broadcast to the input " << in;
  return success();
}

LogicalResult PadOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  // (C1)
  if (static_cast<int64_t>(getLow().size()) != in.getRank() || static_cast<int64_t>(getHigh().size()) != in.getRank())
    return emitOpError() << "needs one low and one high entry per dimension of " << in;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (getLow()[d] < 0 || getHigh()[d] < 0)
      return emitOpError() << "padding of dimension " << d << " must be >= 0";
    shape.push_back(getLow()[d] + in.getDimSize(d) + getHigh()[d]);
  }
  // (C2)
  if (in.clone(shape) != out)
    return emitOpError() << "result must be " << in.clone(shape) << ", got " << out;
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  auto x = getInput().getType();
  int64_t axis = getAxisAttr().getInt();
  if (axis < -x.getRank() || axis >= x.getRank())
    return emitOpError() << "axis " << axis << " is out of range for rank " << x.getRank();
  if (axis < 0)
    axis += x.getRank();
  auto normalized = RankedTensorType::get(x.getShape().drop_front(axis), x.getElementType());
  // (C1)
  if (getGrad().getType() != x || getScale().getType() != normalized)
    return emitOpError() << "grad must be " << x << " and scale " << normalized;
  // (C2)
  if (getInputGrad().getType() != x || getScaleGrad().getType() != normalized ||
      (getBiasGrad() && getBiasGrad().getType() != normalized))
    return emitOpError() << "gradients must be " << x << " for the input and " << normalized
                         << " for scale and bias";
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  auto table = getResult().getType();
  auto grad = getGrad().getType();
  auto ids = getIds().getType();
  // (C1)
  SmallVector<int64_t> expected(ids.getShape());
  if (table.getRank() == 2)
    expected.push_back(table.getDimSize(1));
  if (table.getRank() != 2 || grad.getShape() != ArrayRef(expected) ||
      grad.getElementType() != table.getElementType())
    return emitOpError() << "grad " << grad << " must be ids.shape x H for the V x H table " << table;
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  auto logits = getLogits().getType();
  auto labels = getLabels().getType();
  // (C1)
  if (getGrad().getType().getRank() != 0)
    return emitOpError() << "grad must be a scalar, got " << getGrad().getType();
  if (logits.getRank() < 1 || logits.getShape().drop_back() != labels.getShape())
    return emitOpError() << "labels " << labels << " must have the logits' shape without the class dimension, got "
                         << logits;
  if (getResult().getType() != logits)
    return emitOpError() << "result must have the logits' type " << logits;
  // (C2)
  return verifyCrossEntropyOptions(*this, logits, labels, getWeight(), getIgnoreIndex(), getReduction());
}
