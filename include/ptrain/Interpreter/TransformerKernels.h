//===- TransformerKernels.h - kernels of the LLaMA-style model ops -*- C++ -*-===//
//
// Reference kernels of rms_norm and rotary_embedding (lib/Interpreter/Transformer.cpp), in double, rounded
// once to the element type; errors name the op and the shapes.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_TRANSFORMERKERNELS_H
#define PTRAIN_INTERPRETER_TRANSFORMERKERNELS_H

#include "ptrain/Interpreter/Tensor.h"

namespace mlir::ptrain::interp {

/// `ptrain.rms_norm`: x / sqrt(mean(x^2) + epsilon) * scale, the mean over [axis, rank) in double.
llvm::Expected<Tensor> evalRmsNorm(const Tensor &input, const Tensor &scale, int64_t axis, double epsilon);
/// `ptrain.rotary_embedding` of a [B, N, S, D] input by cos/sin tables [B, S, R/2] (R = rotaryDim, D when 0):
/// each pair (x[i], x[i + R/2]) (interleaved: (x[2i], x[2i + 1])) rotated by the position's angle.
llvm::Expected<Tensor> evalRotaryEmbedding(const Tensor &input, const Tensor &cos, const Tensor &sin, bool interleaved,
                                           int64_t rotaryDim);

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_TRANSFORMERKERNELS_H
