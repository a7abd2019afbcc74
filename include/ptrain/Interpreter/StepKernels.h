//===- StepKernels.h - kernels of the clipping and SGD ops ---------*- C++ -*-===//
//
// Reference kernels of sum_squares, clip_scale and sgd (PTrainStepOps.td; lib/Interpreter/StepKernels.cpp),
// in double, each result rounded once to f32; they follow the runtime's ptrain_sum_squares_f32 and
// ptrain_sgd_step_f32 (lib/Runtime/cpu) formula by formula.
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

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_STEPKERNELS_H
