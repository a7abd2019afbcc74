//===- PTrainPlanAttrs.h - typed accessors of the plan attributes -*- C++ -*-===//
//
// The discardable attributes through which the passes hand the parallel plan to the code generators, the
// executor and plan.json, with one typed accessor each (issue 28, item 2). Typed so far:
//   ptrain.tp_slice = #ptrain.tp_slice<...>  on a sliced ptrain.state (--ptrain-shard-tp; PTrainAttrs.td,
//                                            constraints C1-C9, verified by PTrainDialect::
//                                            verifyOperationAttribute, test/Dialect/PTrain/plan-attrs-invalid.mlir)
// Still dictionaries read by string key: ptrain.pipeline, ptrain.stage, ptrain.schedule, ptrain.compression.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

namespace mlir::ptrain {

/// On a sliced `ptrain.state`: a #ptrain.tp_slice (--ptrain-shard-tp's description of the slice).
inline constexpr llvm::StringLiteral kTPSliceAttr = "ptrain.tp_slice";

/// The slice of `state`, or null when the state is not sliced (verified: C1-C9).
inline TPSliceAttr getTPSlice(StateOp state) { return state->getAttrOfType<TPSliceAttr>(kTPSliceAttr); }

/// Records that `state` is the local part of `slice`.
inline void setTPSlice(StateOp state, TPSliceAttr slice) { state->setAttr(kTPSliceAttr, slice); }

} // namespace mlir::ptrain

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_H
