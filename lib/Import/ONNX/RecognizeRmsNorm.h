//===- RecognizeRmsNorm.h - decomposed RMS norm to ptrain.rms_norm -*- C++ -*-===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_RECOGNIZERMSNORM_H
#define PTRAIN_LIB_IMPORT_ONNX_RECOGNIZERMSNORM_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace mlir::ptrain::onnx_import {

/// Rewrites the exporters' decomposed RMS normalization (Hugging Face LlamaRMSNorm before
/// RMSNormalization-23) into ptrain.rms_norm:
///   scale * cast_back(xf / sqrt(mean(xf^2) + eps)),  xf = cast_to_f32(x)
/// with the mean over trailing dimensions (kept), the square as pow(xf, 2) or xf * xf, the division in any
/// form of matchOverSqrt (RecognizeMatchers.h), the casts optional, any operand order, and scale of shape
/// x.shape[axis:].
void populateRecognizeRmsNormPatterns(RewritePatternSet &patterns);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_RECOGNIZERMSNORM_H
