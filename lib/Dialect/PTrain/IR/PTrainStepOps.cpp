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

/// (C1) of loss_scale and grad_scaler_update: the scaler state {scale, growth_tracker, hysteresis_tracker}.
static LogicalResult verifyScalerState(Operation *op, Type type) {
  if (cast<RankedTensorType>(type).getDimSize(0) != 3)
    return op->emitOpError() << "needs a scaler state of 3 elements {scale, growth_tracker, hysteresis_tracker}, got "
                             << type;
  return success();
}

static bool isScale(double s) { return std::isfinite(s) && s > 0.0 && std::isfinite(static_cast<float>(s)); }

LogicalResult LossScaleOp::verify() {
  // (C1)
  if (failed(verifyScalerState(*this, getScaler().getType())))
    return failure();
  // (C2)
  double initial = getInitialScale().convertToDouble();
  if (!isScale(initial))
    return emitOpError() << "initial_scale must be a finite f32 value > 0, got " << initial;
  return success();
}

LogicalResult GradScalerUpdateOp::verify() {
  // (C1)
  if (failed(verifyScalerState(*this, getScaler().getType())))
    return failure();
  // (C2)
  double growth = getGrowthFactor().convertToDouble(), backoff = getBackoffFactor().convertToDouble();
  if (!std::isfinite(growth) || !(growth > 1.0) || !(backoff > 0.0 && backoff < 1.0))
    return emitOpError() << "needs a finite growth_factor > 1 and a backoff_factor in (0, 1), got growth_factor "
                         << growth << " and backoff_factor " << backoff;
  // (C3)
  if (getGrowthInterval() < 1 || getHysteresis() < 1)
    return emitOpError() << "growth_interval and hysteresis must be >= 1, got growth_interval " << getGrowthInterval()
                         << " and hysteresis " << getHysteresis();
  // (C4)
  double minScale = getMinScale().convertToDouble(), initial = getInitialScale().convertToDouble();
  if (!isScale(minScale) || !isScale(initial) || initial < minScale)
    return emitOpError() << "needs finite f32 scales with 0 < min_scale <= initial_scale, got min_scale " << minScale
                         << " and initial_scale " << initial;
  return success();
}

/// Elements of a static tensor type.
static double elementCount(Type type) { return static_cast<double>(cast<RankedTensorType>(type).getNumElements()); }

double SumSquaresOp::getFlops() { return 2.0 * elementCount(getInput().getType()); }
double SGDOp::getFlops() { return (getMomentumBuf() ? 4.0 : 2.0) * elementCount(getParam().getType()); }
