//===- ImportONNX.h - ONNX model to ptrain model graph -----------*- C++ -*-===//
//
// `ptrain-translate --import-onnx model.onnx` turns an exported model into the L0 model graph (DESIGN "IR
// levels"): `func.func @forward` of ptrain model ops whose weights are `ptrain.state` parameter symbols keyed
// by initializer name. Two layers (STYLE habit 11): a faithful import into `ptrain.onnx_node` ops, then one
// legalization pattern per (op type, opset). Weights are never read: the runtime and the interpreter load
// them by key from the file named in the module attribute `ptrain.onnx_file`.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_IMPORT_ONNX_IMPORTONNX_H
#define PTRAIN_IMPORT_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mlir::ptrain {

struct ImportONNXOptions {
  /// Legalize `ptrain.onnx_node` ops into model ops (off: the faithful layer only, for tests).
  bool legalize = true;
  /// Name of the function that holds the graph.
  std::string entry = "forward";
  /// Sizes of the graph inputs' symbolic dimensions, by name (`--bind batch=8,seq=64`). Every symbolic
  /// dimension must be bound and every binding must name one.
  std::map<std::string, int64_t> bindings;
  /// Graph inputs given constant values (`--constant-input shape=shape.pb`), as ONNX name -> TensorProto
  /// file: each becomes an `arith.constant` before legalization (lib/Import/ONNX/ConstantInputs.h).
  std::map<std::string, std::string> constantInputs;
  /// The training signature given on the command line (`--signature input_ids=tokens,logits=logits`), as
  /// ONNX name -> role; roles not given are inferred (lib/Import/ONNX/TrainingSignature.h).
  std::map<std::string, std::string> signature;
  /// `--trainable REGEX` and `--frozen REGEX`: POSIX extended regular expressions matched against whole
  /// initializer names, overriding which initializers are parameters (docs/ImportONNX.md, "Parameters and
  /// constants"; lib/Import/ONNX/ClassifyInitializers.h). Empty when not given.
  std::string trainable, frozen;
  /// `--ort-training-model FILE`: onnxruntime's training artifact (onnxruntime.training.artifacts'
  /// training_model.onnx) of this model; the parameters it computes gradients for (its graph inputs
  /// `<name>_grad.accumulation.buffer`, the `requires_grad` list) are the trainable initializers, every other
  /// one is held constant (after --frozen and --trainable). Empty when not given.
  std::string ortTrainingModel;
  /// Apply the training signature: generated inputs become constants, empty ones zero-size constants, and
  /// the function keeps only the token input and the logits output (see TrainingSignature.h).
  bool applySignature = false;
  /// Check every initializer's external data (its file and byte range, onnx_data::ONNXInitializers::
  /// checkExternalData) before importing; off by default so that a module can be imported apart from its
  /// weights (ptrain-interpret --weights). ptrain-compile turns it on (`--check-external-data`).
  bool checkExternalData = false;
};

/// Imports the serialized ONNX model `bytes`, read from `path` (used for locations and recorded as the
/// weights' source). Emits diagnostics naming the file, node name, op type and opset, and returns null on
/// any error (malformed protobuf, unsupported op or opset, shapes ONNX shape inference cannot make static).
OwningOpRef<ModuleOp> importONNX(llvm::StringRef bytes, llvm::StringRef path, MLIRContext *context,
                                 const ImportONNXOptions &options = {});

/// Legalizes every `ptrain.onnx_node` in `module` into model ops, then recognizes exporter expansions (GELU
/// as Erf or as its tanh approximation). Fails, with a diagnostic at the node, on the first node it cannot
/// legalize.
LogicalResult legalizeONNX(ModuleOp module);

/// The per-node step of legalizeONNX: one pattern per (op type, opset), in graph order.
LogicalResult legalizeONNXNodes(ModuleOp module);

/// Registers `--import-onnx` (faithful + legalized) and `--import-onnx-faithful` with mlir-translate.
void registerImportONNXTranslations();

/// ptrain-translate's path for `--import-onnx` and `--import-onnx-faithful` (nullopt for any other
/// translation): the same options and output as mlirTranslateMain, but the model file is memory-mapped,
/// where mlirTranslateMain would first copy the whole input (for a GPT-2 124M export with embedded weights,
/// 500 MB) into memory. Returns the exit status.
std::optional<int> importONNXMain(int argc, char **argv);

} // namespace mlir::ptrain

#endif // PTRAIN_IMPORT_ONNX_IMPORTONNX_H
