//===- LossScaling.cpp - fp16 dynamic loss scaling in the training step ---===//
//
// See include/ptrain/Transforms/LossScaling.h and docs/MixedPrecision.md ("The loss scaler in the step").
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/LossScaling.h"

#include "ptrain/Plan/CompressionPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

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

Value mlir::ptrain::buildSkipFlag(OpBuilder &b, Location loc, Value skip) {
  return SelectOp::create(b, loc, skip, scalarConstant(b, loc, 1.0), scalarConstant(b, loc, 0.0));
}

void mlir::ptrain::buildScalerUpdate(OpBuilder &b, Location loc, Value skip, const LossScaleOptions &options) {
  RankedTensorType type = getLossScalerType(b.getContext());
  Value state = StateReadOp::create(b, loc, type, kLossScalerState);
  Value found = buildSkipFlag(b, loc, skip);
  Value next = GradScalerUpdateOp::create(
      b, loc, type, state, found, b.getF64FloatAttr(options.initialScale), b.getF64FloatAttr(options.growthFactor),
      b.getF64FloatAttr(options.backoffFactor), b.getI64IntegerAttr(options.window),
      b.getI64IntegerAttr(options.hysteresis), b.getF64FloatAttr(options.minScale));
  StateWriteOp::create(b, loc, next, kLossScalerState);
}

Value mlir::ptrain::keepOnSkip(OpBuilder &b, Location loc, Value skip, Value old, Value updated) {
  return SelectOp::create(b, loc, skip, old, updated);
}

unsigned mlir::ptrain::keepCodecStatesOnSkip(func::FuncOp trainStep, func::CallOp optimizerCall) {
  auto module = trainStep->getParentOfType<ModuleOp>();
  SymbolTable symbols(module);
  // The codec states the step writes, in order of first write, through its calls too.
  llvm::SetVector<StateOp> written;
  llvm::SetVector<func::FuncOp> functions;
  functions.insert(trainStep);
  for (size_t i = 0; i < functions.size(); ++i)
    func::FuncOp(functions[i]).walk([&](Operation *op) {
      if (auto call = dyn_cast<func::CallOp>(op)) {
        if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
          functions.insert(callee);
      } else if (auto write = dyn_cast<StateWriteOp>(op)) {
        auto state = symbols.lookup<StateOp>(write.getState());
        if (state && (state.getKind() == StateKind::CodecResidual || state.getKind() == StateKind::CodecWarmStart))
          written.insert(state);
      }
    });
  Location loc = optimizerCall.getLoc();
  OpBuilder start = OpBuilder::atBlockBegin(&trainStep.front());
  OpBuilder after(optimizerCall->getContext());
  after.setInsertionPointAfter(optimizerCall);
  if (written.empty())
    return 0;
  Value skip = CompareOp::create(after, loc, RankedTensorType::get({}, after.getI1Type()), CompareKind::Gt,
                                 optimizerCall.getResult(0), scalarConstant(after, loc, 0.0));
  // Gradient residuals are in the units of the scale they were computed at: after the scaler's update (inside
  // the optimizer step) they are multiplied by new scale / old scale, so that the next step adds them to its
  // gradients in its own units (exact for Megatron's factors 2 and 1/2: a power-of-two ratio).
  Value ratio;
  GradScalerUpdateOp update;
  module.walk([&](GradScalerUpdateOp op) {
    update = op;
    return WalkResult::interrupt();
  });
  if (update && llvm::any_of(written, [](StateOp s) { return s->hasAttr(kLossScaledResidualAttr); })) {
    auto scalar = RankedTensorType::get({}, after.getF32Type());
    RankedTensorType scalerType = getLossScalerType(after.getContext());
    Value old = LossScaleOp::create(start, loc, scalar, StateReadOp::create(start, loc, scalerType, kLossScalerState),
                                    update.getInitialScaleAttr());
    Value next = LossScaleOp::create(after, loc, scalar, StateReadOp::create(after, loc, scalerType, kLossScalerState),
                                     update.getInitialScaleAttr());
    ratio = BinaryOp::create(after, loc, BinaryKind::Div, next, old);
  }
  for (StateOp state : written) {
    RankedTensorType type = state.getTensorType();
    Value atStart = StateReadOp::create(start, loc, type, state.getSymName());
    Value now = StateReadOp::create(after, loc, type, state.getSymName());
    Value kept = keepOnSkip(after, loc, skip, atStart, now);
    if (ratio && state->hasAttr(kLossScaledResidualAttr))
      kept = BinaryOp::create(after, loc, BinaryKind::Mul, kept, ratio);
    StateWriteOp::create(after, loc, kept, state.getSymName());
  }
  return written.size();
}
