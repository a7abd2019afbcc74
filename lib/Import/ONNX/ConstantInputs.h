//===- ConstantInputs.h - graph inputs given constant values ------*- C++ -*-===//
//
// ptrain's IR is static: shape operands (Reshape's shape, Slice's starts and ends, Squeeze/Unsqueeze and
// ReduceSum-13 axes, Split sizes, Range bounds, Expand's shape) must be constants after folding. Exports
// usually make them initializers or Constant chains, which fold; where a graph INPUT carries one (the ONNX
// backend node tests do this), `--constant-input name=tensor.pb` gives its value: the input becomes an
// `arith.constant` read from the TensorProto file before legalization, so everything computed from it folds.
// The value is specialization data for shapes, not weights (weights stay parameter symbols, DESIGN 10).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_CONSTANTINPUTS_H
#define PTRAIN_LIB_IMPORT_ONNX_CONSTANTINPUTS_H

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>

namespace mlir::ptrain::onnx_import {

/// Parses `name=path[,name=path...]` into `inputs` (ONNX input name -> TensorProto file). Returns "" on
/// success, else a message naming the bad entry (no `=`, an empty name or path, a name given twice).
std::string parseConstantInputs(const std::string &text, std::map<std::string, std::string> &inputs);

/// Replaces each named argument of function `entry` (by `ptrain.onnx_name`) with an `arith.constant` holding
/// the tensor read from its file, and removes the argument. Fails with an error naming the input and the
/// file when the file cannot be read, its type differs from the input's (after --bind), or no graph input
/// has that name.
LogicalResult applyConstantInputs(ModuleOp module, llvm::StringRef entry,
                                  const std::map<std::string, std::string> &inputs);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_CONSTANTINPUTS_H
