//===- EmitOptimizer.h - Clipping and SGD in the CPU code generator -*- C++ -*-===//
//
// --emit-cpp of the optimizer ops (docs/CodegenCpu.md, "Optimizer"): ptrain.adamw outside an AdamW table
// (AdamWTable.h) with the runtime's ptrain_adamw_step_f32 or the kernel --ptrain-outline-adamw generated
// (docs/GeneratedKernels.md, "AdamW over a bucket"), ptrain.sum_squares (the
// runtime's f64-accumulating ptrain_sum_squares_f32, rounded to the f32 result), ptrain.clip_scale (inline
// f64 arithmetic through compiler builtins, as the interpreter computes it) and ptrain.sgd
// (ptrain_lr_warmup_cosine and ptrain_sgd_step_f32 on copies of the parameter and momentum buffer).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITOPTIMIZER_H
#define PTRAIN_TARGET_CPP_EMITOPTIMIZER_H

#include "EmitCodecs.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"

#include <string>

namespace mlir::ptrain::cpp {

/// ptrain.sum_squares into its rank-0 f32 result.
LogicalResult emitSumSquares(SumSquaresOp op, CallWriter &w);

/// ptrain.clip_scale: min(1, max_norm / (sqrt(s) + 1e-6)) in double, NaN propagated, rounded to f32.
LogicalResult emitClipScale(ClipScaleOp op, CallWriter &w);

/// `const int64_t t` (the op's 1-based step from `step`) and `float lr`, the learning rate of `schedule` at t
/// (ptrain_lr_warmup_cosine), in the current op's block: shared by ptrain.adamw and ptrain.sgd.
LogicalResult emitLearningRate(LRScheduleAttr schedule, Value step, CallWriter &w);

/// An AdamW update the step computes with its generated kernel (AdamWArith.h) instead of ptrain_adamw_step_f32.
struct GeneratedAdamW {
  std::string kernel; ///< the kernel's symbol in @ptrain_kernels
  BinaryOp clipMul;   ///< the clipping's mul the kernel computes (its scale an argument), or null
};

/// The generated kernel's call in the current op's block, after emitLearningRate (`t`, `lr`): the coefficients
/// from ptrain_adamw_coefficients_f32 with the op's betas and `weightDecay` (a C++ float expression), then
/// `callee(pointers..., decay, step size, 1 / sqrt(bc2))`; `pointers` are p, grad, m, v[, scale].
LogicalResult emitAdamWKernelCall(AdamWOp op, const std::string &weightDecay, const std::string &callee,
                                  ArrayRef<std::string> pointers, CallWriter &w);

/// ptrain.adamw outside a table: p, m and v copied into the results, then ptrain_adamw_step_f32 in place, or
/// the generated kernel `generated` (when not null) on the unscaled gradient and the clip scale it folds in.
LogicalResult emitAdamW(AdamWOp op, const GeneratedAdamW *generated, CallWriter &w);

/// ptrain.sgd: the parameter (and momentum buffer) copied into the results, then ptrain_sgd_step_f32 in place.
LogicalResult emitSGD(SGDOp op, CallWriter &w);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_EMITOPTIMIZER_H
