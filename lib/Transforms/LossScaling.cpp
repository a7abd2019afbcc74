//===- LossScaling.cpp - fp16 dynamic loss scaling in the training step ---===//
//
// See include/ptrain/Transforms/LossScaling.h and docs/MixedPrecision.md ("The loss scaler in the step").
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/LossScaling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ptrain;

RankedTensorType mlir::ptrain::getLossScalerType(MLIRContext *context) {
  return RankedTensorType::get({3}, Float32Type::get(context));
}

Value mlir::ptrain::buildLossScale(OpBuilder &b, Location loc, const LossScaleOptions &options) {
  RankedTensorType type = getLossScalerType(b.getContext());
  Value state = StateReadOp::create(b, loc, type, kLossScalerState);
  return LossScaleOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()), state,
                             b.getF64FloatAttr(options.initialScale));
}

/// A rank-0 f32 constant.
static Value scalarConstant(OpBuilder &b, Location loc, double value) {
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(scalar, b.getFloatAttr(b.getF32Type(), value)));
}

Value mlir::ptrain::buildUnscaleAndCheck(OpBuilder &b, Location loc, MutableArrayRef<Value> grads, Value scale,
                                         GridOp grid, ArrayRef<StringRef> axes) {
  // The flags are 0 or 1: their sum over the gradients and the ranks is exact in f32 and > 0 exactly when
  // Megatron's max-reduced found_inf is 1.
  Value count;
  for (Value &grad : grads) {
    auto unscale = GradUnscaleOp::create(b, loc, grad.getType(), scale.getType(), grad, scale);
    grad = unscale.getResult();
    Value found = unscale.getFoundInf();
    count = count ? Value(BinaryOp::create(b, loc, BinaryKind::Add, count, found)) : found;
  }
  if (!count)
    count = scalarConstant(b, loc, 0.0);
  if (!axes.empty()) {
    auto start =
        AllReduceStartOp::create(b, loc, count, grid.getSymName(), b.getStrArrayAttr(axes), ReductionKind::Sum);
    count = WaitOp::create(b, loc, start.getRequest()).getResult();
  }
  return CompareOp::create(b, loc, RankedTensorType::get({}, b.getI1Type()), CompareKind::Gt, count,
                           scalarConstant(b, loc, 0.0));
}

void mlir::ptrain::buildScalerUpdate(OpBuilder &b, Location loc, Value skip, const LossScaleOptions &options) {
  RankedTensorType type = getLossScalerType(b.getContext());
  Value state = StateReadOp::create(b, loc, type, kLossScalerState);
  // The flag the update reads: 1 on a skipped step, else 0.
  Value found = SelectOp::create(b, loc, skip, scalarConstant(b, loc, 1.0), scalarConstant(b, loc, 0.0));
  Value next = GradScalerUpdateOp::create(
      b, loc, type, state, found, b.getF64FloatAttr(options.initialScale), b.getF64FloatAttr(options.growthFactor),
      b.getF64FloatAttr(options.backoffFactor), b.getI64IntegerAttr(options.window),
      b.getI64IntegerAttr(options.hysteresis), b.getF64FloatAttr(options.minScale));
  StateWriteOp::create(b, loc, next, kLossScalerState);
}

Value mlir::ptrain::keepOnSkip(OpBuilder &b, Location loc, Value skip, Value old, Value updated) {
  return SelectOp::create(b, loc, skip, old, updated);
}
