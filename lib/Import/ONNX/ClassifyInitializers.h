//===- ClassifyInitializers.h - which initializers are parameters -*- C++ -*-===//
//
// DESIGN decision 12: parameters are what is trained, not every initializer. Exporters store a model's
// weights and its constants alike as initializers (GELU's 0.5 and 0.044715, an exponent 2.0, RMSNorm's
// epsilon, attention masks, rotary tables, shape tensors). The faithful import makes a `ptrain.state`
// parameter only of an initializer this classification calls trainable; every other one becomes an
// `arith.constant` and gets a remark saying why. The rule, in order (docs/ImportONNX.md, "Parameters and
// constants"):
//   1. `--frozen REGEX` (whole name) holds it constant, else `--trainable REGEX` makes it trainable; else,
//      with `--ort-training-model FILE` (onnxruntime's training artifact), it is trainable exactly when the
//      artifact's requires_grad list names it;
//   2. an integer or boolean tensor is a constant;
//   3. a one-element float is a constant;
//   4. an initializer that is also a graph input (a default the caller may override) is trainable, and so is
//      one named like a module parameter (dotted, last component `weight` or `bias`);
//   5. a use as a weight is trainable: a MatMul/Gemm/Conv operand or Gemm bias beside an activation, the
//      table of a Gather by data-dependent indices (unless its rows are only multiplied into the activations:
//      rotary cos/sin gathered by position ids), a normalization scale or bias, a per-feature vector
//      (every dimension but the last 1) added to or multiplied with an activation, or a table added to an
//      activation that is not an additive mask (a folded learned position embedding);
//   6. everything else is a constant: values feeding only shape or constant arithmetic, masks, tables
//      multiplied into the activations (rotary cos/sin).
// Uses are followed through ops that only move or convert the initializer's values (Transpose, Reshape,
// Cast, Gather by constant indices, ...). A value is data-dependent when it is computed from a graph input
// that is not an initializer, not counting Shape and Size (whose outputs are static here).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_CLASSIFYINITIALIZERS_H
#define PTRAIN_LIB_IMPORT_ONNX_CLASSIFYINITIALIZERS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "onnx/onnx_pb.h"

#include <optional>
#include <string>

namespace mlir::ptrain::onnx_import {

/// The overrides of `--trainable` and `--frozen`: POSIX extended regular expressions matched against the
/// whole initializer name; empty when not given.
struct ParameterOverrides {
  std::string trainable;
  std::string frozen;
  /// The parameters onnxruntime's training artifact `ortTrainingModel` computes gradients for (its
  /// `requires_grad` list; readOrtRequiresGrad); set only with `--ort-training-model`.
  std::optional<llvm::StringSet<>> ortRequiresGrad;
  std::string ortTrainingModel;
};

/// The suffix onnxruntime.training's artifact generator gives the gradient buffer input of each parameter in
/// its `requires_grad` list (onnxblock/_training_graph_utils.py, build_gradient_accumulation_graph).
inline constexpr llvm::StringLiteral kOrtGradBufferSuffix = "_grad.accumulation.buffer";

/// The `requires_grad` list of onnxruntime's training artifact at `path` (training_model.onnx): the names
/// X of its graph inputs `X_grad.accumulation.buffer`. Fails with `error` naming the file when it cannot be
/// read or parsed, or has no such input (not a training artifact).
FailureOr<llvm::StringSet<>> readOrtRequiresGrad(llvm::StringRef path, std::string &error);

/// Checks that the overrides are valid regular expressions; returns "" or an error naming the flag.
std::string checkParameterOverrides(const ParameterOverrides &overrides);

/// What one initializer is: trained (a parameter) or held constant, and the reason (a phrase such as "a
/// one-element float (a scalar such as an epsilon, a scale or an exponent)").
struct InitializerClass {
  bool trainable = false;
  std::string why;
};

/// Classifies every initializer of `graph` by the rule above. `valueOf` gives an initializer's values (it
/// fails on data it cannot read; the classification then does not look at the values). Fails with `error`
/// set when an override matches no initializer.
FailureOr<llvm::StringMap<InitializerClass>>
classifyInitializers(const onnx::GraphProto &graph, const ParameterOverrides &overrides,
                     llvm::function_ref<FailureOr<DenseElementsAttr>(const onnx::TensorProto &)> valueOf,
                     std::string &error);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_CLASSIFYINITIALIZERS_H
