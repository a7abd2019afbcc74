//===- PTrainAttrs.h - codec attributes and matrix views ---------*- C++ -*-===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINATTRS_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"

#include "ptrain/Dialect/PTrain/IR/PTrainAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h.inc"

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINATTRS_H
