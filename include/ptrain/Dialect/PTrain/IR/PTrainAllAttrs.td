//===- PTrainAllAttrs.td - every ptrain attribute, for the dialect -*- tablegen -*-===//
//
// The dialect with its attributes of PTrainAttrs.td and PTrainPlanAttrs.td: the source of the attribute
// definitions, the dialect's attribute parser, printer and registration (PTrainAttrs.cpp.inc) and the dialect's
// documentation. The declarations are generated per file (PTrainAttrs.h.inc, PTrainPlanAttrs.h.inc).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINALLATTRS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINALLATTRS_TD

include "ptrain/Dialect/PTrain/IR/PTrainDialect.td"
include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.td"

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINALLATTRS_TD
