//===- TiedWeights.h - report parameters shared by embedding and head -*- C++ -*-===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_TIEDWEIGHTS_H
#define PTRAIN_LIB_IMPORT_ONNX_TIEDWEIGHTS_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::ptrain::onnx_import {

/// Finds parameters used both as an embedding table (`ptrain.embedding`) and as a matmul operand, directly
/// or through `ptrain.transpose` (the tied input embedding and LM head of GPT-2 and BERT, Press & Wolf,
/// 2017). Ties are by symbol: one ONNX initializer is one `ptrain.state`, so two different initializers
/// with equal values are never tied. Records their keys in the module attribute `ptrain.tied_parameters`
/// (absent when there is none) and reports each as a remark at the parameter.
void reportTiedWeights(ModuleOp module);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_TIEDWEIGHTS_H
