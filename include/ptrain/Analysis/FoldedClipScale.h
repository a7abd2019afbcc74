//===- FoldedClipScale.h - The clip scale an AdamW kernel folds in -*- C++ -*-===//
//
// Global-norm clipping multiplies every gradient by one rank-0 scale before
// the optimizer (include/ptrain/Transforms/GradientClipping.h). The AdamW
// kernels --ptrain-outline-adamw generates (include/ptrain/Transforms/
// AdamWArith.h) take the unscaled gradient and the scale and multiply them
// themselves, so the mul is no pass of its own: the outlining pass, the CPU
// code generator and the timing model (ModuleCosts.cpp) find that mul alike
// here.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_FOLDEDCLIPSCALE_H
#define PTRAIN_ANALYSIS_FOLDEDCLIPSCALE_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/StringRef.h"

namespace mlir::ptrain {

/// The attribute --ptrain-outline-adamw sets on a `ptrain.adamw` whose update it generated: the kernel,
/// `@ptrain_kernels::@ptrain_adamw_kernel_N`. The CPU code generator calls it instead of ptrain_adamw_step_f32.
inline constexpr llvm::StringLiteral kAdamWKernelAttr = "ptrain.adamw_kernel";

/// The clipping's `ptrain.binary mul` of `op`'s gradient by a rank-0 f32 scale that a generated kernel can fold
/// in: the gradient operand's producer when it is a mul of a tensor of the gradient's type by a rank-0 f32
/// tensor (either order) and `op` is its only user; null otherwise.
BinaryOp foldedClipScaleOf(AdamWOp op);

/// The mul `op` is, when a marked AdamW update's kernel computes it: its only user is a `ptrain.adamw` with
/// kAdamWKernelAttr naming a kernel of 8 arguments (the scale's included), and foldedClipScaleOf of that update
/// is `op`. Such a mul costs nothing of its own (its update's kernel reads the unscaled gradient instead).
bool isFoldedIntoAdamWKernel(BinaryOp op);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_FOLDEDCLIPSCALE_H
