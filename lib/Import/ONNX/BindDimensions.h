//===- BindDimensions.h - bind symbolic ONNX dimensions -----------*- C++ -*-===//
//
// ptrain's IR has static shapes only (PTrainModelOps.td): an export with `dynamic_axes` names its dimensions
// (`batch_size`, `seq_len`, `past_seq_len`), and the user binds each to a size on the command line
// (`ptrain-translate --import-onnx --bind batch_size=8,seq_len=64,past_seq_len=0`). Binding rewrites the
// graph inputs' `dim_param`s into `dim_value`s before ONNX shape inference, which then propagates the static
// shapes (and, with data propagation, the values of Shape -> Gather -> Concat chains) through the graph.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_BINDDIMENSIONS_H
#define PTRAIN_LIB_IMPORT_ONNX_BINDDIMENSIONS_H

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <map>
#include <string>

namespace mlir::ptrain::onnx_import {

/// Parses `name=size[,name=size...]` (sizes >= 0; 0 makes zero-size tensors, e.g. an empty KV cache) into
/// `bindings`. Returns "" on success, else a message naming the bad entry (missing `=`, a size that is not a
/// non-negative integer, a name given twice).
std::string parseBindings(const std::string &text, std::map<std::string, int64_t> &bindings);

/// Replaces every symbolic dimension of the graph's inputs (initializers excluded) by its bound size, and
/// drops symbolic dimensions of outputs and value_info so that shape inference recomputes them. Returns ""
/// on success; an error names the first unbound dimension and its input, or a binding that matches no
/// dimension of any input.
std::string bindSymbolicDimensions(onnx::ModelProto &model, const std::map<std::string, int64_t> &bindings);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_BINDDIMENSIONS_H
