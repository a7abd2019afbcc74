//===- RecognizeGelu.h - exporters' GELU expansions to ptrain.gelu -*- C++ -*-===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_RECOGNIZEGELU_H
#define PTRAIN_LIB_IMPORT_ONNX_RECOGNIZEGELU_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace mlir::ptrain::onnx_import {

/// Rewrites x * 0.5 * (1 + erf(x / sqrt(2))) and its tanh approximation, built from ptrain.binary /
/// ptrain.unary, into ptrain.gelu.
void populateRecognizeGeluPatterns(RewritePatternSet &patterns);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_RECOGNIZEGELU_H
