//===- ModelProtoLoader.h - parse an ONNX model and infer shapes --*- C++ -*-===//
//
// The only part of the importer that calls into libraries that throw (ONNX shape inference). It lives in
// one translation unit built with -fexceptions and turns every exception into an error string (ENV.md,
// "Exceptions").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_MODELPROTOLOADER_H
#define PTRAIN_LIB_IMPORT_ONNX_MODELPROTOLOADER_H

#include "onnx/onnx_pb.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>

namespace mlir::ptrain::onnx_import {

/// The opset `model` imports for `domain` ("" and "ai.onnx" are the default domain); 0 when none.
int64_t opsetOf(const onnx::ModelProto &model, const std::string &domain);

/// Parses `bytes` (the content of the model file `path`) into `model` with protobuf's bool-returning API,
/// leaving embedded float weights in the file (EmbeddedWeights.h: they become external data of `path`),
/// binds the graph inputs' symbolic dimensions (BindDimensions.h) and runs ONNX shape inference on it, so
/// that every value with a static shape gets a value_info. Before inference it checks the graph's references
/// (GraphOrder.h: an input nothing defines, or a cycle, is an error naming the node) and refuses control flow
/// (If, Loop, Scan, SequenceMap: libonnx 1.12's inference functions for them crash on malformed bodies, and a
/// training step is one static dataflow graph), and it infers in
/// topological order; the nodes stay in the file's order in `model`. Returns an empty message on success,
/// else what went wrong and, when a node is at fault, its index in the graph.
struct LoadError {
  std::string message;
  int node = -1; ///< the graph's node at fault, -1 when the error is the file's
};
LoadError loadModelProto(llvm::StringRef bytes, llvm::StringRef path, onnx::ModelProto &model,
                         const std::map<std::string, int64_t> &bindings);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_MODELPROTOLOADER_H
