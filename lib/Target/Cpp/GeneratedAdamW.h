//===- GeneratedAdamW.h - Calls of the generated AdamW kernels -*- C++ -*-===//
//
// --emit-cpp's calls of the AdamW kernels --ptrain-outline-adamw generated (AdamWArith.h; docs/GeneratedKernels.md,
// "AdamW over a bucket"), in place of the runtime's ptrain_adamw_step_f32: one update at a time
// (StepFunction::generatedAdamWUpdate, after OptimizerOps.cpp's learning rate and copies) and each row of an
// AdamW table (AdamWTable.h). The step-dependent coefficients come from the runtime's
// ptrain_adamw_coefficients_f32, which ptrain_adamw_step_f32 itself calls, so both paths are bit-equal.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_GENERATEDADAMW_H
#define PTRAIN_TARGET_CPP_GENERATEDADAMW_H

#include "EmitCodecs.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include <string>

namespace mlir::ptrain::cpp {

/// An AdamW update the step computes with its generated kernel (AdamWArith.h) instead of ptrain_adamw_step_f32.
struct GeneratedAdamW {
  std::string kernel; ///< the kernel's symbol in @ptrain_kernels
  BinaryOp clipMul;   ///< the clipping's mul the kernel computes (its scale an argument), or null
};

/// The generated kernel's call in the current op's block, after the learning rate (`t`, `lr`): the coefficients
/// from ptrain_adamw_coefficients_f32 with the op's betas and `weightDecay` (a C++ float expression), then
/// `callee(pointers..., decay, step size, 1 / sqrt(bc2))`; `pointers` are p, grad, m, v[, scale].
LogicalResult emitAdamWKernelCall(AdamWOp op, const std::string &weightDecay, const std::string &callee,
                                  ArrayRef<std::string> pointers, CallWriter &w);

/// One ptrain.adamw through `generated`, in place on its results (the copies of p, m and v, written already),
/// on the unscaled gradient and the clip scale when the kernel folds the clipping's mul in.
LogicalResult emitGeneratedAdamW(AdamWOp op, const GeneratedAdamW &generated, CallWriter &w);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_GENERATEDADAMW_H
