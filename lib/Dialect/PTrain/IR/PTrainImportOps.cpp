//===- PTrainImportOps.cpp - faithful ONNX import ----------------*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainImportOps.cpp.inc"

LogicalResult OnnxNodeOp::verify() {
  // (C1)
  if (getOpType().empty())
    return emitOpError("op_type must not be empty");
  // (C2)
  if (static_cast<int64_t>(getOpset()) < 1)
    return emitOpError() << "opset must be >= 1, got " << static_cast<int64_t>(getOpset());
  return success();
}
