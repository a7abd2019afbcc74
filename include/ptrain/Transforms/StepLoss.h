//===- StepLoss.h - the training step's cross-entropy options ------*- C++ -*-===//
//
// `--ptrain-build-training-step="ignore-index=N class-weights=w0,..."`: the step's own loss becomes
// `ptrain.cross_entropy` with `ignore_index` and a `weight` constant (PyTorch's weighted mean,
// sum(w[y] nll) / sum(w[y]) over the positions whose label is not N). Under micro-batches and data parallelism
// the mean must be over the whole step's counted positions, not a mean of per-micro-batch means: the pipeline
// form scores `cross_entropy {reduction = "sum"} / %n` with %n the step's global weight sum, which
// --ptrain-lower-to-runtime computes from the label-weight function before the first forward-backward
// (docs/TrainingStep.md, "Padding and class weights").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_STEPLOSS_H
#define PTRAIN_TRANSFORMS_STEPLOSS_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::ptrain {

/// The loss options of the training step.
struct StepLossOptions {
  std::optional<int64_t> ignoreIndex;
  llvm::SmallVector<double> classWeights; ///< empty: all 1
  /// Anything beyond the plain mean over every position.
  bool weighted() const { return ignoreIndex.has_value() || !classWeights.empty(); }
};

/// The name of the last stage's label-weight function (virtual stage `chunk`): `@stage<chunk>_loss_weight`.
std::string lossWeightFunctionName(int64_t chunk);

/// Parses the pass options `ignore-index` (empty: none; else a decimal integer) and `class-weights` (finite,
/// >= 0, not all 0); an error at `loc` names the option.
FailureOr<StepLossOptions> parseStepLossOptions(Location loc, StringRef ignoreIndex, ArrayRef<double> classWeights);

/// `ptrain.cross_entropy` of `logits` [..., V] against `labels` with `options` (a [V] weight constant; an
/// error at `loc` when the weights are not V) and, with `sum`, reduction "sum". Null after an error.
Value buildStepCrossEntropy(OpBuilder &b, Location loc, Value logits, Value labels, const StepLossOptions &options,
                            bool sum);

/// sum over the positions of `labels` of w[label] (1 without weights), 0 where the label is the ignore index:
/// the divisor of the weighted mean (a rank-0 tensor of `floatType`). An ignored label never indexes the
/// weights.
Value buildLabelWeightSum(OpBuilder &b, Location loc, Value labels, const StepLossOptions &options,
                          FloatType floatType);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_STEPLOSS_H
