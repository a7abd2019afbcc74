//===- PTrainTypes.cpp - ptrain types ----------------------------*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_TYPEDEF_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainTypes.cpp.inc"

void PTrainDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainTypes.cpp.inc"
      >();
}
