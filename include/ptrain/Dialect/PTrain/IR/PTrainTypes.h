//===- PTrainTypes.h - ptrain types -------------------------------*- C++ -*-===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINTYPES_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainTypes.h.inc"

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINTYPES_H
