//===- PTrainStepOps.cpp - clipping and SGD -----------------------*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.cpp.inc"

LogicalResult ClipScaleOp::verify() {
  // (C1)
  double maxNorm = getMaxNorm().convertToDouble();
  if (!std::isfinite(maxNorm) || !(maxNorm > 0.0))
    return emitOpError() << "max_norm must be finite and > 0, got " << maxNorm;
  return success();
}

LogicalResult SGDOp::verify() {
  // (C1)
  double momentum = getMomentum().convertToDouble(), decay = getWeightDecay().convertToDouble();
  if (!(momentum >= 0.0 && momentum < 1.0) || !std::isfinite(decay) || decay < 0.0)
    return emitOpError() << "needs momentum in [0, 1) and a finite weight_decay >= 0, got momentum " << momentum
                         << " and weight_decay " << decay;
  // (C2)
  bool buffered = momentum > 0.0;
  if (static_cast<bool>(getMomentumBuf()) != buffered || static_cast<bool>(getNewMomentumBuf()) != buffered)
    return emitOpError() << "momentum_buf and new_momentum_buf must be given exactly when momentum > 0 (momentum "
                         << momentum << ")";
  // (C3)
  Type type = getParam().getType();
  for (Value v : {getGrad(), getNewParam(), getMomentumBuf(), getNewMomentumBuf()})
    if (v && v.getType() != type)
      return emitOpError() << "param, grad, new_param and the momentum buffers must have one type " << type << ", got "
                           << v.getType();
  return success();
}

/// Elements of a static tensor type.
static double elementCount(Type type) { return static_cast<double>(cast<RankedTensorType>(type).getNumElements()); }

double SumSquaresOp::getFlops() { return 2.0 * elementCount(getInput().getType()); }
double SGDOp::getFlops() { return (getMomentumBuf() ? 4.0 : 2.0) * elementCount(getParam().getType()); }
