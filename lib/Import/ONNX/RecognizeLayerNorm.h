//===- RecognizeLayerNorm.h - decomposed layer norm to ptrain.layer_norm -*- C++ -*-===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_RECOGNIZELAYERNORM_H
#define PTRAIN_LIB_IMPORT_ONNX_RECOGNIZELAYERNORM_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace mlir::ptrain::onnx_import {

/// Rewrites the exporters' decomposed layer normalization (before opset 17), built from ptrain.reduce,
/// ptrain.binary and ptrain.unary, into ptrain.layer_norm:
///   scale * ((x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)) [+ bias]
/// with both means over the same trailing dimensions (kept), the square as pow(d, 2) or d * d, the division
/// as div, reciprocal + mul or rsqrt + mul, any operand order of the commutative ops, and scale and bias of
/// shape x.shape[axis:]; the bias is optional.
void populateRecognizeLayerNormPatterns(RewritePatternSet &patterns);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_RECOGNIZELAYERNORM_H
