//===- RaiseTransformerOps.h - decomposed RMSNorm and rotary embeddings to model ops -*- C++ -*-===//
//
// The first part of --ptrain-raise (lib/Transforms/RaiseTransformerOps.cpp): the elementwise forms that
// exporters below opset 23 write for LLaMA's RMSNorm and rotary embeddings, folded into `ptrain.rms_norm` and
// `ptrain.rotary_embedding` (docs/ImportONNX.md, "Unfused RMSNorm and rotary embeddings").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_RAISETRANSFORMEROPS_H
#define PTRAIN_TRANSFORMS_RAISETRANSFORMEROPS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::ptrain {

/// Folds w * (x * rsqrt(mean(x^2) + eps)) into ptrain.rms_norm and x * cat(c, c) + rotate_half(x) * cat(s, s)
/// into ptrain.rotary_embedding in `fn`; `rmsNorms` and `rotaries` count the ops made.
LogicalResult raiseTransformerOps(func::FuncOp fn, int64_t &rmsNorms, int64_t &rotaries);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_RAISETRANSFORMEROPS_H
