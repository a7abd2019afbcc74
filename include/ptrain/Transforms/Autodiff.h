//===- Autodiff.h - reverse-mode automatic differentiation ---------*- C++ -*-===//
//
// Builds the backward pass of a block from each op's gradient rule (GradientOpInterface). Used by
// --ptrain-build-training-step; the stage split reuses it per stage.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_AUTODIFF_H
#define PTRAIN_TRANSFORMS_AUTODIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::ptrain {

/// Differentiates the scalar `loss` with respect to each value of `wrt`, with `seed` as the gradient of the
/// loss (a rank-0 tensor, usually 1). Visits the ops of `loss`'s block that lie on a path from a `wrt` value
/// to the loss, in reverse order, and calls their gradient rules at the builder's insertion point; several
/// gradients reaching one value are summed. Returns, for every `wrt` value, its gradient (a zero tensor when
/// the loss does not depend on it). Fails, with the rule's diagnostic, when an op on a path has no rule.
/// `numBuiltOps`, when given, counts the ops the rules built.
FailureOr<SmallVector<Value>> buildGradients(OpBuilder &builder, Value loss, Value seed, ArrayRef<Value> wrt,
                                             int64_t *numBuiltOps = nullptr);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_AUTODIFF_H
