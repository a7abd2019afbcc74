//===- ClassifyInitializers.h - which initializers are parameters -*- C++ -*-===//
//
// DESIGN decision 12: parameters are what is trained, not every initializer. Exporters store a model's
// weights and its constants alike as initializers (GELU's 0.5 and 0.044715, an exponent 2.0, RMSNorm's
// epsilon, attention masks, rotary tables, shape tensors). The faithful import makes a `ptrain.state`
// parameter only of an initializer this classification calls trainable; every other one becomes an
// `arith.constant` and gets a remark saying why. The rule, in order (docs/ImportONNX.md, "Parameters and
// constants"):
//   1. `--frozen REGEX` (whole name) holds it constant, else `--trainable REGEX` makes it trainable;
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
#include "onnx/onnx_pb.h"

#include <string>

namespace mlir::ptrain::onnx_import {

/// The overrides of `--trainable` and `--frozen`: POSIX extended regular expressions matched against the
/// whole initializer name; empty when not given.
struct ParameterOverrides {
  std::string trainable;
  std::string frozen;
};

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
