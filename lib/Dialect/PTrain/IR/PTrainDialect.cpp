//===- PTrainDialect.cpp - the ptrain dialect --------------------*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;

#include "ptrain/Dialect/PTrain/IR/PTrainDialect.cpp.inc"
#include "ptrain/Dialect/PTrain/IR/PTrainEnums.cpp.inc"
#include "ptrain/Dialect/PTrain/IR/PTrainOpInterfaces.cpp.inc"

void PTrainDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainModelOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainGradientOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainOptimizerOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainImportOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainParallelOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainCodecOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainStateOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainTensorParallelOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainVocabParallelOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.cpp.inc"
      >();
}
