//===- LossScaling.h - fp16 dynamic loss scaling in the training step -*- C++ -*-===//
//
// The IR of `--ptrain-build-training-step="precision=fp16"` (docs/MixedPrecision.md, "The design", item 4, and
// "The loss scaler in the step"): Megatron-LM's Float16OptimizerWithFloat16Params with its DynamicGradScaler
// (megatron/core/optimizer/optimizer.py, grad_scaler.py; Micikevicius et al., "Mixed Precision Training", ICLR
// 2018, sec. 3.2). The loss gradient's seed is multiplied by the scale (ptrain.loss_scale of the scaler state);
// after the gradient accumulation and the dp reduction every gradient is unscaled and checked
// (ptrain.grad_unscale), the flags are added and summed over every rank of the grid (dp, pp and tp, so that
// all ranks decide alike), and a count > 0 skips the step: every optimizer write (parameters, moments) keeps its
// old value through ptrain.select. Then ptrain.grad_scaler_update advances the scaler. The step counter `step` is
// the iteration's (the checkpoint's step) and advances either way; the optimizer reads `optimizer_step`, which a
// skipped step holds back, as Megatron-LM holds back its learning-rate schedule and Adam's step.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_LOSSSCALING_H
#define PTRAIN_TRANSFORMS_LOSSSCALING_H

#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::ptrain {

/// The symbol and key of the scaler's state, tensor<3xf32> {scale, growth_tracker, hysteresis_tracker}.
inline constexpr llvm::StringLiteral kLossScalerState = "loss_scaler";

/// The symbol and key of the optimizer-only step counter, tensor<i64>: the steps the optimizer took (not skipped),
/// which the learning-rate schedule and AdamW's bias correction read under fp16 (Megatron-LM).
inline constexpr llvm::StringLiteral kOptimizerStepState = "optimizer_step";

/// The scaler's options (Megatron-LM's --initial-loss-scale, --min-loss-scale, --loss-scale-window,
/// --hysteresis; DynamicGradScaler's growth 2 and backoff 0.5).
struct LossScaleOptions {
  double initialScale = 4294967296.0;
  double minScale = 1.0;
  int64_t window = 1000;
  int64_t hysteresis = 2;
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
};

/// The scaler's state type, tensor<3xf32>.
RankedTensorType getLossScalerType(MLIRContext *context);

/// Reads the scaler state `kLossScalerState` and returns its current scale (ptrain.loss_scale), rank-0 f32.
Value buildLossScale(OpBuilder &b, Location loc, const LossScaleOptions &options);

/// Unscales every gradient of `grads` in place by `scale` (ptrain.grad_unscale) and returns the step's skip
/// condition, a rank-0 i1 that is true when any gradient of any rank held an inf or NaN: the flags' sum,
/// all-reduced (sum) over `axes` of `grid` when `axes` is not empty, compared > 0.
Value buildUnscaleAndCheck(OpBuilder &b, Location loc, MutableArrayRef<Value> grads, Value scale, GridOp grid,
                           ArrayRef<StringRef> axes);

/// Advances the scaler state by one step with the rank-0 i1 skip condition `skip` (ptrain.grad_scaler_update)
/// and writes it back.
void buildScalerUpdate(OpBuilder &b, Location loc, Value skip, const LossScaleOptions &options);

/// The rank-0 f32 flag of the rank-0 i1 skip condition `skip`: 1 on a skipped step, else 0 (what
/// ptrain.grad_scaler_update reads and what `@stage<s>_optimizer_step` returns under fp16).
Value buildSkipFlag(OpBuilder &b, Location loc, Value skip);

/// `old` when the rank-0 i1 `skip` holds, else `updated` (ptrain.select): an optimizer write of a skipped step.
Value keepOnSkip(OpBuilder &b, Location loc, Value skip, Value old, Value updated);

/// Error feedback under fp16 (docs/MixedPrecision.md, "Error feedback under fp16"): makes the training step
/// `trainStep` leave every codec residual and PowerSGD warm-start Q bit-unchanged on a step that the loss scaler
/// skips. `optimizerCall` is the step's call of `@stage<s>_optimizer_step`, whose one result is the rank-0 f32 skip
/// flag (buildSkipFlag). Every state of kind codec_residual or codec_warm_start that `trainStep` or a function it calls
/// (transitively) writes is read at the start of `trainStep` and, after `optimizerCall`, written back as
/// `ptrain.select %flag > 0, %at_start, %now`: a skipped step's codec updates (which saw its loss-scaled and possibly
/// non-finite gradients) are discarded, as its optimizer writes are. Rand-k's counters advance either way (both
/// ends alike). A residual of gradient traffic (kLossScaledResidualAttr, CompressionPlan.h) is then multiplied by
/// new scale / old scale (`ptrain.loss_scale` of the scaler state after `optimizerCall` over the one read at the
/// start), so that it is in the next step's units when the scaler backs off or grows (docs/MixedPrecision.md,
/// "Residuals across a scale change"). Returns the number of states kept.
unsigned keepCodecStatesOnSkip(func::FuncOp trainStep, func::CallOp optimizerCall);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_LOSSSCALING_H
