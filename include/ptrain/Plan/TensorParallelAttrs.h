//===- TensorParallelAttrs.h - the names of the tensor-parallel plan attributes -*- C++ -*-===//
//
// The discardable attributes through which --ptrain-raise hands the structure of the forward graph to
// --ptrain-shard-tp (the slicing record it leaves on a sliced parameter, #ptrain.tp_slice, is the dialect's:
// PTrainPlanAttrs.h; docs/Plan.md, "Tensor parallelism"). Only names: a header with no
// library, so that the plan library (lib/Plan) reads them without depending on the passes.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_PLAN_TENSORPARALLELATTRS_H
#define PTRAIN_PLAN_TENSORPARALLELATTRS_H

#include "llvm/ADT/StringRef.h"

namespace mlir::ptrain {

/// On a `ptrain.matmul`: `{layer, role}`, role one of qkv, attn_out, mlp_up, mlp_down, lm_head.
inline constexpr llvm::StringLiteral kLinearAttr = "ptrain.linear";
/// On an attention's `ptrain.softmax`: `{layer, heads, head_dim}`.
inline constexpr llvm::StringLiteral kAttentionAttr = "ptrain.attention";
/// On the raised function: the number of transformer layers.
inline constexpr llvm::StringLiteral kLayersAttr = "ptrain.layers";
// The slicing record on a sliced `ptrain.state`, `ptrain.tp_slice`, is a typed dialect attribute:
// #ptrain.tp_slice with getTPSlice/setTPSlice in ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h.

} // namespace mlir::ptrain

#endif // PTRAIN_PLAN_TENSORPARALLELATTRS_H
