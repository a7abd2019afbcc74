//===- FaithfulImport.h - ONNX protobuf to ptrain.onnx_node ops ---*- C++ -*-===//
//
// The first importer layer: a module with one `ptrain.state` parameter per trainable initializer
// (ClassifyInitializers.h; the others become `arith.constant`s, each with a remark) and a function
// whose body has one `ptrain.onnx_node` per ONNX node, typed by ONNX shape inference. No op semantics here.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_FAITHFULIMPORT_H
#define PTRAIN_LIB_IMPORT_ONNX_FAITHFULIMPORT_H

#include "ClassifyInitializers.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "onnx/onnx_pb.h"

namespace mlir::ptrain::onnx_import {

/// The newest opset of the default ONNX domain ("" / "ai.onnx") whose semantics ptrain's importer knows (the
/// newest patterns: RMSNormalization, RotaryEmbedding, Attention of opset 23, LegalizeOpset23.cpp). A model
/// importing a newer one gets a warning and its ops are imported with their newest known semantics.
inline constexpr int64_t kNewestKnownOpset = 23;

/// Builds the faithful module for `model` (already shape-inferred), read from `path`. Emits a diagnostic and
/// returns null on what the faithful layer cannot express: symbolic input dimensions, values without a static
/// type, non-tensor types, graph attributes, unsupported element types, an override matching no
/// initializer, a constant whose value cannot be read or is above 2^22 elements.
OwningOpRef<ModuleOp> importFaithful(const onnx::ModelProto &model, llvm::StringRef path,
                                     MLIRContext *context, llvm::StringRef entry,
                                     const ParameterOverrides &overrides = {});

/// Converts an ONNX tensor (Constant values, small integer initializers) into a dense attribute. Fails with
/// `error` set on external data, unsupported element types or a size mismatch.
FailureOr<DenseElementsAttr> convertTensor(const onnx::TensorProto &tensor, MLIRContext *context,
                                           std::string &error);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_FAITHFULIMPORT_H
