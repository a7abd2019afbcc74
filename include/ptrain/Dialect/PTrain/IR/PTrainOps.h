//===- PTrainOps.h - every ptrain op family -----------------------*- C++ -*-===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINOPS_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainCost.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTypes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOpInterfaces.h.inc"

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainModelOps.h.inc"
#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainGradientOps.h.inc"
#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainOptimizerOps.h.inc"
#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainImportOps.h.inc"
#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainParallelOps.h.inc"
#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainCodecOps.h.inc"
#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainStateOps.h.inc"
#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainTensorParallelOps.h.inc"
#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainVocabParallelOps.h.inc"

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINOPS_H
