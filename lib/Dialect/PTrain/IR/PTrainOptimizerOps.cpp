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
