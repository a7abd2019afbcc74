//===- StepKernels.h - kernels of the clipping and SGD ops ---------*- C++ -*-===//
//
// Reference kernels of sum_squares, clip_scale and sgd (PTrainStepOps.td; lib/Interpreter/StepKernels.cpp),
// in double, each result rounded once to f32; they follow the runtime's ptrain_sum_squares_f32 and
// ptrain_sgd_step_f32 (lib/Runtime/cpu) formula by formula. fp16's loss scaler (loss_scale, grad_unscale,
// grad_scaler_update) calls the runtime's own functions (ptrain_grad_unscale_check_f32,
// ptrain_grad_scaler_init, ptrain_grad_scaler_update), so the oracle and a compiled step agree bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_STEPKERNELS_H
#define PTRAIN_INTERPRETER_STEPKERNELS_H

#include "ptrain/Interpreter/Kernels.h"

namespace mlir::ptrain::interp {

/// `ptrain.sum_squares`: the sum of x[i]^2 over every element, accumulated in double, rounded once to the
/// rank-0 result of the input's element type.
llvm::Expected<Tensor> evalSumSquares(const Tensor &input);

/// `ptrain.clip_scale`: min(1, maxNorm / (sqrt(sumSquares) + 1e-6)) in double, rounded once (Megatron-LM
/// clip_grad_norm_fp32); a NaN norm gives NaN. `sumSquares` is a rank-0 float tensor, maxNorm finite > 0.
llvm::Expected<Tensor> evalClipScale(const Tensor &sumSquares, double maxNorm);

/// `ptrain.sgd` at the 1-based step `step` (learningRate of `schedule`'s peak, warmup, total, minRatio):
/// g = grad + weightDecay p; with momentum > 0, buf = momentum buf + g and g = buf; p = p - lr g. Returns
/// {new_param} or, with momentum > 0, {new_param, new_buf} (`buf` must then be given).
llvm::Expected<std::vector<Tensor>> evalSGD(const Tensor &param, const Tensor &grad, const Tensor &step,
                                            const Tensor *buf, const AdamWHyperparameters &schedule, double momentum,
                                            double weightDecay);

/// The loss scaler's options of `ptrain.grad_scaler_update` (the op's attributes).
struct GradScalerOptions {
  double initialScale, growthFactor, backoffFactor, minScale;
  int64_t growthInterval, hysteresis;
};

/// `ptrain.loss_scale`: scaler[0], or `initialScale` when it is 0 (the zero state before the first step).
llvm::Expected<Tensor> evalLossScale(const Tensor &scaler, double initialScale);

/// `ptrain.grad_unscale`: {grad * inv_scale, found_inf} with inv_scale = f32(1 / f64(scale)), the product in f32
/// (ptrain_grad_unscale_check_f32), found_inf 1 when any result is inf or NaN, else 0.
llvm::Expected<std::vector<Tensor>> evalGradUnscale(const Tensor &grad, const Tensor &scale);

/// `ptrain.grad_scaler_update`: Megatron-LM's DynamicGradScaler.update of `scaler` (a zero state first becomes
/// ptrain_grad_scaler_init's {initialScale, 0, hysteresis}) with `foundInf` != 0 as the overflow.
llvm::Expected<Tensor> evalGradScalerUpdate(const Tensor &scaler, const Tensor &foundInf,
                                            const GradScalerOptions &options);

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_STEPKERNELS_H
