//===- Transformer.cpp - rms_norm and rotary_embedding kernels --------------===//
//
// Reference kernels of the LLaMA-style model ops (PTrainTransformerOps.td), computed in double and rounded
// once to the element type. They re-check the ops' constraints, so a kernel called on bad tensors reports
// an error instead of reading out of bounds.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/TransformerKernels.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

llvm::Expected<Tensor> mlir::ptrain::interp::evalRmsNorm(const Tensor &input, const Tensor &scale, int64_t axis,
                                                         double epsilon) {
  if (!input.isFloat())
    return makeError("rms_norm needs a float tensor, got " + input.getTypeString());
  int64_t rank = input.getRank();
  // (C1) -rank <= axis < rank.
  if (axis < -rank || axis >= rank)
    return makeError("rms_norm axis " + llvm::Twine(axis) + " is out of range for rank " + llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  // (C2) scale has the shape x.shape[axis:] and x's element type.
  llvm::ArrayRef<int64_t> normShape = input.getShape().drop_front(axis);
  if (scale.getShape() != normShape || scale.getDType() != input.getDType())
    return makeError("rms_norm scale " + scale.getTypeString() + " does not match the normalized shape " +
                     formatShape(normShape) + " of " + input.getTypeString());
  // (C3) epsilon >= 0.
  if (!(epsilon >= 0.0))
    return makeError("rms_norm epsilon must be >= 0, got " + std::to_string(epsilon));
  int64_t inner = numElements(normShape);
  int64_t outer = inner == 0 ? 0 : input.getNumElements() / inner;
  Tensor out(input.getDType(), input.getShape());
  llvm::ArrayRef<double> x = input.floats(), g = scale.floats();
  llvm::MutableArrayRef<double> y = out.floats();
  for (int64_t row = 0; row < outer; ++row) {
    const double *xr = x.data() + row * inner;
    double sumSquares = 0.0;
    for (int64_t i = 0; i < inner; ++i)
      sumSquares += xr[i] * xr[i];
    double rstd = 1.0 / std::sqrt(sumSquares / static_cast<double>(inner) + epsilon);
    for (int64_t i = 0; i < inner; ++i)
      y[row * inner + i] = roundToFloatDType(input.getDType(), xr[i] * rstd * g[i]);
  }
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalRotaryEmbedding(const Tensor &input, const Tensor &cos,
                                                                 const Tensor &sin, bool interleaved,
                                                                 int64_t rotaryDim) {
  if (!input.isFloat() || input.getRank() != 4)
    return makeError("rotary_embedding needs a float [batch, heads, seq, head_size] tensor, got " +
                     input.getTypeString());
  llvm::ArrayRef<int64_t> shape = input.getShape();
  int64_t batch = shape[0], heads = shape[1], seq = shape[2], d = shape[3];
  int64_t r = rotaryDim == 0 ? d : rotaryDim;
  // (C2) the rotated channels are even and in (0, head_size].
  if (r <= 0 || r > d || r % 2 != 0)
    return makeError("rotary_embedding rotates " + llvm::Twine(r) + " channels of head size " + llvm::Twine(d) +
                     "; they must be even and in (0, head_size]");
  int64_t half = r / 2;
  // (C1) cos and sin are [batch, seq, rotated/2].
  llvm::SmallVector<int64_t> tableShape = {batch, seq, half};
  for (const Tensor *t : {&cos, &sin})
    if (t->getShape() != llvm::ArrayRef<int64_t>(tableShape) || t->getDType() != input.getDType())
      return makeError("rotary_embedding cos/sin " + t->getTypeString() + " must be " + formatShape(tableShape) +
                       " of the input's element type");
  Tensor out = input;
  llvm::ArrayRef<double> x = input.floats(), c = cos.floats(), s = sin.floats();
  llvm::MutableArrayRef<double> y = out.floats();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t p = 0; p < seq; ++p) {
        int64_t base = ((b * heads + h) * seq + p) * d, table = (b * seq + p) * half;
        for (int64_t i = 0; i < half; ++i) {
          int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
          double x1 = x[base + i1], x2 = x[base + i2], ci = c[table + i], si = s[table + i];
          y[base + i1] = roundToFloatDType(input.getDType(), x1 * ci - x2 * si);
          y[base + i2] = roundToFloatDType(input.getDType(), x2 * ci + x1 * si);
        }
      }
  return out;
}
