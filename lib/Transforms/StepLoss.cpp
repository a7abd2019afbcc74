//===- StepLoss.cpp - the training step's cross-entropy options ----*- C++ -*-===//
//
// See StepLoss.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/StepLoss.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;

std::string mlir::ptrain::lossWeightFunctionName(int64_t chunk) {
  return "stage" + std::to_string(chunk) + "_loss_weight";
}

FailureOr<StepLossOptions> mlir::ptrain::parseStepLossOptions(Location loc, StringRef ignoreIndex,
                                                              ArrayRef<double> classWeights) {
  StepLossOptions options;
  if (!ignoreIndex.empty()) {
    int64_t value = 0;
    if (ignoreIndex.getAsInteger(10, value))
      return emitError(loc) << "--ptrain-build-training-step: ignore-index must be an integer (e.g. -100), got '"
                            << ignoreIndex << "'";
    options.ignoreIndex = value;
  }
  bool anyPositive = false;
  for (auto [c, w] : llvm::enumerate(classWeights)) {
    if (!std::isfinite(w) || w < 0.0)
      return emitError(loc) << "--ptrain-build-training-step: class-weights[" << c << "] must be finite and >= 0, got "
                            << w;
    anyPositive |= w > 0.0;
  }
  if (!classWeights.empty() && !anyPositive)
    return emitError(loc) << "--ptrain-build-training-step: class-weights are all 0 (the mean would be 0 / 0)";
  options.classWeights.assign(classWeights.begin(), classWeights.end());
  return options;
}

namespace {
Value floatScalar(OpBuilder &b, Location loc, FloatType type, double value) {
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(RankedTensorType::get({}, type), b.getFloatAttr(type, value)));
}

/// The [V] weight constant of `options` in `type`, or null without weights.
Value weightConstant(OpBuilder &b, Location loc, const StepLossOptions &options, FloatType type) {
  if (options.classWeights.empty())
    return Value();
  SmallVector<Attribute> values;
  for (double w : options.classWeights)
    values.push_back(b.getFloatAttr(type, w));
  auto weightType = RankedTensorType::get({static_cast<int64_t>(values.size())}, type);
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(weightType, values));
}
} // namespace

Value mlir::ptrain::buildStepCrossEntropy(OpBuilder &b, Location loc, Value logits, Value labels,
                                          const StepLossOptions &options, bool sum) {
  auto type = cast<RankedTensorType>(logits.getType());
  auto f = cast<FloatType>(type.getElementType());
  int64_t classes = type.getShape().back();
  if (!options.classWeights.empty() && static_cast<int64_t>(options.classWeights.size()) != classes) {
    emitError(loc) << "--ptrain-build-training-step: class-weights has " << options.classWeights.size()
                   << " entries; the logits have " << classes << " classes";
    return Value();
  }
  Value weight = weightConstant(b, loc, options, f);
  IntegerAttr ignore = options.ignoreIndex ? b.getI64IntegerAttr(*options.ignoreIndex) : IntegerAttr();
  StringAttr reduction = sum ? b.getStringAttr("sum") : StringAttr();
  return CrossEntropyOp::create(b, loc, logits, labels, weight, ignore, reduction);
}

Value mlir::ptrain::buildLabelWeightSum(OpBuilder &b, Location loc, Value labels, const StepLossOptions &options,
                                        FloatType floatType) {
  auto labelType = cast<RankedTensorType>(labels.getType());
  Type i = labelType.getElementType();
  Value ignored;
  if (options.ignoreIndex) {
    Value index = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(RankedTensorType::get({}, i), b.getIntegerAttr(i, *options.ignoreIndex)));
    ignored = CompareOp::create(b, loc, CompareKind::Eq, labels, index);
  }
  // w[label] per position (an ignored label reads class 0 and is then zeroed), or 1. Only constants that are
  // used are built (generated code has no dead values).
  Value weights;
  if (Value table = weightConstant(b, loc, options, floatType)) {
    Value safe = labels;
    if (ignored)
      safe = SelectOp::create(b, loc, ignored,
                              arith::ConstantOp::create(
                                  b, loc, DenseElementsAttr::get(RankedTensorType::get({}, i), b.getIntegerAttr(i, 0))),
                              labels);
    weights = GatherOp::create(b, loc, labelType.clone(floatType), table, safe, b.getI64IntegerAttr(0));
  } else {
    weights = floatScalar(b, loc, floatType, 1.0);
  }
  Value perPosition =
      ignored ? Value(SelectOp::create(b, loc, ignored, floatScalar(b, loc, floatType, 0.0), weights)) : weights;
  if (cast<RankedTensorType>(perPosition.getType()).getRank() == 0)
    perPosition = BroadcastToOp::create(b, loc, labelType.clone(floatType), perPosition);
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < labelType.getRank(); ++d)
    all.push_back(d);
  return ReduceOp::create(b, loc, ReduceKind::Sum, perPosition, ArrayRef<int64_t>(all), false);
}
