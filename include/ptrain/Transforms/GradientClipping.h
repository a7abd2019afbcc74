//===- GradientClipping.h - global-norm gradient clipping ---------*- C++ -*-===//
//
// The IR of `--ptrain-build-training-step="clip-norm=C"` (docs/TrainingStep.md, "Global-norm clipping"):
// Megatron-LM's clip_grad_norm_fp32 over a 3D-parallel grid. Each rank sums the squared norms of the
// gradients it counts (ptrain.sum_squares), the partial sums are all-reduced (sum) over the grid axes that
// partition the model (pp, and tp for sliced parameters), and ptrain.clip_scale turns the global squared
// norm into the factor min(1, C / (norm + 1e-6)) that multiplies every gradient before the optimizer.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_GRADIENTCLIPPING_H
#define PTRAIN_TRANSFORMS_GRADIENTCLIPPING_H

#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::ptrain {

/// The discardable unit attribute on the global-norm all-reduce: it is not a tied-parameter sync (an
/// all-reduce over [pp] in an optimizer step), so the fused embedding sync and the timing model leave it be.
inline constexpr llvm::StringLiteral kGlobalNormAttr = "ptrain.global_norm";

/// The gradients one rank contributes to the global norm.
struct GlobalNormTerms {
  /// Counted in full: each element is held by this rank only (a tp slice, or a whole parameter when tp = 1;
  /// a tied parameter on the first stage that holds it).
  SmallVector<Value> owned;
  /// Held whole by every rank of the tp group (a replicated parameter such as a LayerNorm scale, tp > 1):
  /// weighted 1 / tp so that the sum over tp counts it once.
  SmallVector<Value> replicated;
};

/// Builds, at `b`'s insertion point, the clip scale of `terms`: the f32 rank-0 sum of their squared norms
/// (replicated ones times 1 / tp), all-reduced (sum) over `axes` of `grid` when `axes` is not empty (the
/// all-reduce carries kGlobalNormAttr), then ptrain.clip_scale with `maxNorm`. Returns the scale.
Value buildGlobalNormClipScale(OpBuilder &b, Location loc, const GlobalNormTerms &terms, int64_t tp, GridOp grid,
                               ArrayRef<StringRef> axes, double maxNorm);

/// `grad` times the rank-0 `scale` (ptrain.binary mul, broadcast).
Value scaleGradient(OpBuilder &b, Location loc, Value grad, Value scale);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_GRADIENTCLIPPING_H
