//===- PTrainDialect.td - dialect with its types and attributes -*- tablegen -*-===//
//
// Entry point for the dialect, enum and attribute/type generators; ops are generated per family.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINDIALECT_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINDIALECT_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "ptrain/Dialect/PTrain/IR/PTrainTypes.td"
include "ptrain/Dialect/PTrain/IR/PTrainAttrs.td"
include "ptrain/Dialect/PTrain/IR/PTrainOptimizerOps.td"

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINDIALECT_TD
