//===- EmbeddedWeights.h - leave embedded weights in the model file -*- C++ -*-===//
//
// A model whose weights are embedded in the .onnx (TensorProto.raw_data) is, for protobuf, one message that
// parsing copies whole: a GPT-2 124M export is ~500 MB of weights that the importer never looks at. Instead
// the serialized model is scanned in protobuf's wire format (ModelProto.graph -> GraphProto.initializer ->
// TensorProto.raw_data) and rewritten without the raw_data of the float initializers: each such initializer
// becomes EXTERNAL data whose location is the model file itself, with the offset and length of its raw_data
// bytes. Only the small rest (graph, nodes, shapes, small constants) is copied and parsed; the weights stay in
// the (memory-mapped) file until the interpreter reads one by name (Initializers.h).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_IMPORT_ONNX_EMBEDDEDWEIGHTS_H
#define PTRAIN_IMPORT_ONNX_EMBEDDEDWEIGHTS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mlir::ptrain::onnx_data {

/// What externalizeEmbeddedWeights moved out of the message.
struct ExternalizedWeights {
  /// The serialized ModelProto without the moved raw_data.
  std::string model;
  /// How many initializers now point into the model file, and their bytes.
  int64_t tensors = 0;
  uint64_t bytes = 0;
};

/// Float initializers (FLOAT, DOUBLE, FLOAT16, BFLOAT16) whose raw_data has at least this many bytes are
/// left in the file; smaller ones stay inline (ONNX shape inference may read a small constant's value).
constexpr uint64_t kMinExternalizedBytes = 1024;

/// Rewrites the serialized ModelProto `bytes` (the whole content of the model file) as described above:
/// a moved initializer gets `data_location: EXTERNAL` and external_data {location: `selfLocation` (the model
/// file's name, relative to its folder), offset, length}. Every other field is copied unchanged. A malformed
/// wire format is an error naming the byte offset and the message being scanned.
llvm::Expected<ExternalizedWeights> externalizeEmbeddedWeights(llvm::StringRef bytes, llvm::StringRef selfLocation);

/// The same for the model file at `path` (selfLocation: its file name), read with pread through a small
/// window instead of a mapping: the scan then adds none of the file's pages to the resident set (a mapped
/// page cache can map a whole large folio per touched field header; bench/README.md, "import").
llvm::Expected<ExternalizedWeights> externalizeEmbeddedWeightsFromFile(llvm::StringRef path);

} // namespace mlir::ptrain::onnx_data

#endif // PTRAIN_IMPORT_ONNX_EMBEDDEDWEIGHTS_H
