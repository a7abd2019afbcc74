//===- Initializers.h - ONNX tensor data: .pb files and initializers -*- C++ -*-===//
//
// Reads tensor values out of ONNX files for the reference interpreter and, later, the runtime: a serialized
// TensorProto (`test_data_set_0/input_0.pb`) and a model's named initializers, whose data may be inline
// (raw_data, float_data, int64_data, ...) or EXTERNAL (`location`, `offset`, `length` relative to the model's
// folder, as in models/gpt/gpt.onnx + gpt.onnx.data). Weights are never copied into the IR (DESIGN decision
// 10); this is how they are found at run time, by initializer name (= a state's key).
//
// Parsing uses protobuf's bool-returning API only (the project builds with -fno-exceptions; no onnx::checker).
// Errors name the file and, for initializers, the initializer.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_IMPORT_ONNX_INITIALIZERS_H
#define PTRAIN_IMPORT_ONNX_INITIALIZERS_H

#include "ptrain/Interpreter/Tensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace mlir::ptrain::onnx_data {

/// Reads a file holding one serialized TensorProto. Element types: FLOAT, DOUBLE, INT32, INT64.
llvm::Expected<interp::Tensor> readTensorProtoFile(llvm::StringRef path);

/// The initializers of an ONNX model, read lazily by name. Opening parses the model once (the graph and the
/// initializers' metadata; external data files are read, and cached, on first use).
class ONNXInitializers {
public:
  ~ONNXInitializers();
  ONNXInitializers(ONNXInitializers &&);
  ONNXInitializers &operator=(ONNXInitializers &&);

  /// Parses `modelPath`; external data is looked up relative to its folder.
  static llvm::Expected<ONNXInitializers> open(llvm::StringRef modelPath);

  /// Whether the graph has an initializer `name`.
  bool contains(llvm::StringRef name) const;
  /// The initializer names, in the graph's order.
  std::vector<std::string> getNames() const;
  /// The value of initializer `name`; an unknown name, bad external data or an unsupported type is an error
  /// naming the model file and the initializer.
  llvm::Expected<interp::Tensor> read(llvm::StringRef name);

  llvm::StringRef getModelPath() const { return modelPath; }

  /// Checks, without decoding them, that every initializer with EXTERNAL data has its file and byte range
  /// [offset, offset + length) inside it, and that the range holds the initializer's shape x element size
  /// bytes. The first failure is an error naming the model, the initializer, the file and the byte range
  /// (ptrain-compile's check before it compiles, so that a missing or short weights file is not first seen by
  /// ptrain-run).
  llvm::Error checkExternalData();

private:
  ONNXInitializers();
  /// The bytes of `t`'s EXTERNAL data, the resolved file in `out_path` and the offset in `out_offset`.
  llvm::Expected<llvm::StringRef> externalBytes(const onnx::TensorProto &t, std::string *out_path = nullptr,
                                                uint64_t *out_offset = nullptr);

  std::string modelPath;
  std::unique_ptr<onnx::ModelProto> model;
  llvm::StringMap<const onnx::TensorProto *> byName;
  /// External data files by resolved path.
  llvm::StringMap<std::unique_ptr<llvm::MemoryBuffer>> externalFiles;
};

} // namespace mlir::ptrain::onnx_data

#endif // PTRAIN_IMPORT_ONNX_INITIALIZERS_H
