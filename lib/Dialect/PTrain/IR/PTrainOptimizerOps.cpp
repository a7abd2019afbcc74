//===- PTrainOptimizerOps.cpp - optimizer updates ----------------*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainOptimizerOps.cpp.inc"

LogicalResult LRScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError, FloatAttr peak, int64_t warmup,
                                     int64_t total, FloatAttr minRatio) {
  if (!peak || !minRatio)
    return emitError() << "learning-rate schedule needs peak and min_ratio";
  // A NaN or infinite rate would make every update NaN.
  double peakValue = peak.getValueAsDouble();
  if (!(peakValue > 0.0) || !std::isfinite(peakValue))
    return emitError() << "learning-rate peak must be > 0 and finite, got " << peakValue;
  if (warmup < 0 || total < 1 || warmup > total)
    return emitError() << "learning-rate schedule needs 0 <= warmup <= total and total >= 1, got warmup " << warmup
                       << " and total " << total;
  double ratio = minRatio.getValueAsDouble();
  if (!(ratio >= 0.0 && ratio <= 1.0))
    return emitError() << "learning-rate min_ratio must be in [0, 1], got " << ratio;
  return success();
}

LogicalResult AdamWOp::verify() {
  // (C1)
  double beta1 = getBeta1().convertToDouble(), beta2 = getBeta2().convertToDouble();
  if (!(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0))
    return emitOpError() << "(C1) beta1 and beta2 must be in [0, 1), got beta1 " << beta1 << " and beta2 " << beta2;
  // (C2)
  double epsilon = getEpsilon().convertToDouble(), decay = getWeightDecay().convertToDouble();
  if (!(epsilon > 0.0) || !std::isfinite(epsilon) || !(decay >= 0.0) || !std::isfinite(decay))
    return emitOpError() << "(C2) needs a finite epsilon > 0 and a finite weight_decay >= 0, got epsilon " << epsilon
                         << " and weight_decay " << decay;
  return success();
}
