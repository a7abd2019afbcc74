//===- TensorParallelAttrs.h - the names of the tensor-parallel plan attributes -*- C++ -*-===//
//
// The discardable attributes through which --ptrain-raise hands the structure of the forward graph to
// --ptrain-shard-tp, and the slicing record that --ptrain-shard-tp leaves on a sliced parameter for the
// executor, the runtime and plan.json (docs/Plan.md, "Tensor parallelism"). Only names: a header with no
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
/// On a sliced `ptrain.state`: `{axis, dim, groups, shape}` (--ptrain-shard-tp's description); the executor
/// reads it through mlir::ptrain::interp's loadState.
inline constexpr llvm::StringLiteral kTPSliceAttr = "ptrain.tp_slice";

} // namespace mlir::ptrain

#endif // PTRAIN_PLAN_TENSORPARALLELATTRS_H
