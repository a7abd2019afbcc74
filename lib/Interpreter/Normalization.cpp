//===- Normalization.cpp - layer_norm, softmax, cross_entropy and grads --===//
//
// Reductions over a trailing range of dimensions (layer_norm) or one dimension (softmax, cross_entropy's class
// dimension), all accumulated in double, and their backward ops (layer_norm_grad, softmax_grad,
// cross_entropy_grad), which recompute what they need from the forward's inputs or output.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"

#include <cmath>
#include <limits>

using namespace mlir;

/// log(sum(exp(row))) over `n` values, shifted by the maximum for stability (shared by cross-entropy and its
/// gradient, so both use the same softmax normalizer).
static double logSumExp(const double *row, int64_t n) {
  double maxValue = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < n; ++c)
    maxValue = std::max(maxValue, row[c]);
  double sum = 0.0;
  for (int64_t c = 0; c < n; ++c)
    sum += std::exp(row[c] - maxValue);
  return maxValue + std::log(sum);
}
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

/// `axis` in [-rank, rank) as a non-negative dimension, or an error.
static llvm::Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank, llvm::StringRef what) {
  if (axis < -rank || axis >= rank)
    return makeError(what + " axis " + llvm::Twine(axis) + " is out of range for rank " + llvm::Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalLayerNorm(const Tensor &input, const Tensor &scale,
                                                           const Tensor *bias, int64_t axis, double epsilon) {
  if (!input.isFloat())
    return makeError("layer_norm needs a float tensor, got " + input.getTypeString());
  // (C1) -rank <= axis < rank.
  llvm::Expected<int64_t> dim = normalizeAxis(axis, input.getRank(), "layer_norm");
  if (!dim)
    return dim.takeError();
  // (C2) scale and bias have the shape x.shape[axis:] and x's element type.
  llvm::ArrayRef<int64_t> normShape = input.getShape().drop_front(*dim);
  for (const Tensor *t : {&scale, bias}) {
    if (t && (t->getShape() != normShape || t->getDType() != input.getDType()))
      return makeError("layer_norm scale/bias " + t->getTypeString() + " does not match the normalized shape " +
                       formatShape(normShape) + " of " + input.getTypeString());
  }
  // (C3) epsilon > 0.
  if (!(epsilon > 0.0))
    return makeError("layer_norm epsilon must be > 0, got " + std::to_string(epsilon));

  int64_t inner = numElements(normShape);
  int64_t outer = inner == 0 ? 0 : input.getNumElements() / inner;
  Tensor out(input.getDType(), input.getShape());
  llvm::ArrayRef<double> x = input.floats(), g = scale.floats();
  llvm::MutableArrayRef<double> y = out.floats();
  for (int64_t r = 0; r < outer; ++r) {
    const double *row = x.data() + r * inner;
    double mean = 0.0;
    for (int64_t j = 0; j < inner; ++j)
      mean += row[j];
    mean /= static_cast<double>(inner);
    double var = 0.0; // Biased (population) variance, as in Ba et al. and ONNX LayerNormalization.
    for (int64_t j = 0; j < inner; ++j)
      var += (row[j] - mean) * (row[j] - mean);
    var /= static_cast<double>(inner);
    double invStd = 1.0 / std::sqrt(var + epsilon);
    for (int64_t j = 0; j < inner; ++j)
      y[r * inner + j] = (row[j] - mean) * invStd * g[j] + (bias ? bias->floats()[j] : 0.0);
  }
  out.roundToDType();
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalSoftmax(const Tensor &input, int64_t axis) {
  if (!input.isFloat())
    return makeError("softmax needs a float tensor, got " + input.getTypeString());
  llvm::Expected<int64_t> dim = normalizeAxis(axis, input.getRank(), "softmax");
  if (!dim)
    return dim.takeError();
  llvm::ArrayRef<int64_t> shape = input.getShape();
  int64_t len = shape[*dim];
  int64_t inner = numElements(shape.drop_front(*dim + 1));
  int64_t outer = numElements(shape.take_front(*dim));
  Tensor out(input.getDType(), shape);
  llvm::ArrayRef<double> x = input.floats();
  llvm::MutableArrayRef<double> y = out.floats();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * len * inner + i;
      double maxValue = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < len; ++j)
        maxValue = std::max(maxValue, x[base + j * inner]);
      // A fully masked row (every value -inf) is 0, as in onnxruntime and the runtime kernels, not NaN.
      const bool masked = maxValue == -std::numeric_limits<double>::infinity();
      double sum = 0.0;
      for (int64_t j = 0; j < len; ++j) {
        double e = masked ? 0.0 : std::exp(x[base + j * inner] - maxValue);
        y[base + j * inner] = e;
        sum += e;
      }
      for (int64_t j = 0; j < len; ++j)
        y[base + j * inner] = sum > 0.0 ? y[base + j * inner] / sum : 0.0;
    }
  }
  out.roundToDType();
  return out;
}

namespace {
/// The class weight of each position under `options` (0 where the label is ignoreIndex), after checking the
/// labels; `positions` entries. An error names a label outside [0, C) that is not ignored.
llvm::Expected<std::vector<double>> positionWeights(const Tensor &labels, int64_t classes,
                                                    const interp::CrossEntropyOptions &options) {
  if (options.weight && (!options.weight->isFloat() || options.weight->getShape() != llvm::ArrayRef<int64_t>{classes}))
    return makeError("cross_entropy weight must be a float tensor [" + llvm::Twine(classes) + "], got " +
                     options.weight->getTypeString());
  int64_t positions = labels.getNumElements();
  std::vector<double> w(positions, 1.0);
  for (int64_t p = 0; p < positions; ++p) {
    int64_t label = labels.ints()[p];
    if (options.ignoreIndex && label == *options.ignoreIndex) {
      w[p] = 0.0;
      continue;
    }
    if (label < 0 || label >= classes)
      return makeError(
          "label " + llvm::Twine(label) + " at flat position " + llvm::Twine(p) + " is out of range [0, " +
          llvm::Twine(classes) + ")" +
          (options.ignoreIndex ? " and is not ignore_index " + llvm::Twine(*options.ignoreIndex) : llvm::Twine()));
    if (options.weight)
      w[p] = options.weight->floats()[label];
  }
  return w;
}

/// The divisor of the summed loss: 1 for `sum`, the weight sum for a weighted mean (0 when nothing counts),
/// the number of positions for the plain mean.
double lossDivisor(const std::vector<double> &w, const interp::CrossEntropyOptions &options) {
  if (options.sum)
    return 1.0;
  if (!options.weight && !options.ignoreIndex)
    return static_cast<double>(w.size());
  double total = 0.0;
  for (double x : w)
    total += x;
  return total;
}
} // namespace

llvm::Expected<Tensor> mlir::ptrain::interp::evalCrossEntropy(const Tensor &logits, const Tensor &labels,
                                                              const CrossEntropyOptions &options) {
  // (C1) logits [..., C], labels [...]; (C2) integer labels.
  if (!logits.isFloat() || logits.getRank() < 1)
    return makeError("cross_entropy logits must be a float tensor of rank >= 1, got " + logits.getTypeString());
  if (labels.isFloat())
    return makeError("cross_entropy labels must be integers, got " + labels.getTypeString());
  if (logits.getShape().drop_back() != labels.getShape())
    return makeError("cross_entropy labels " + labels.getTypeString() + " do not match the leading shape of " +
                     logits.getTypeString());
  int64_t classes = logits.getShape().back();
  int64_t positions = labels.getNumElements();
  llvm::Expected<std::vector<double>> w = positionWeights(labels, classes, options);
  if (!w)
    return w.takeError();
  llvm::ArrayRef<double> x = logits.floats();
  double total = 0.0;
  for (int64_t p = 0; p < positions; ++p) {
    if ((*w)[p] == 0.0)
      continue;
    const double *row = x.data() + p * classes;
    total += (*w)[p] * (logSumExp(row, classes) - row[labels.ints()[p]]);
  }
  // The mean over no positions (or no weight) is NaN, as in PyTorch.
  double divisor = lossDivisor(*w, options);
  double loss = divisor == 0.0 ? std::numeric_limits<double>::quiet_NaN() : total / divisor;
  return Tensor::fromFloats(logits.getDType(), {}, {loss});
}

llvm::Expected<std::vector<Tensor>> mlir::ptrain::interp::evalLayerNormGrad(const Tensor &grad, const Tensor &input,
                                                                            const Tensor &scale, int64_t axis,
                                                                            double epsilon, bool withBias) {
  if (!input.isFloat())
    return makeError("layer_norm_grad needs a float tensor, got " + input.getTypeString());
  llvm::Expected<int64_t> dim = normalizeAxis(axis, input.getRank(), "layer_norm_grad");
  if (!dim)
    return dim.takeError();
  // (C1) grad has the input's type; scale has the shape input.shape[axis:] (and the input's element type).
  llvm::ArrayRef<int64_t> normShape = input.getShape().drop_front(*dim);
  if (grad.getShape() != input.getShape() || grad.getDType() != input.getDType())
    return makeError("layer_norm_grad gradient " + grad.getTypeString() + " does not match the input " +
                     input.getTypeString());
  if (scale.getShape() != normShape || scale.getDType() != input.getDType())
    return makeError("layer_norm_grad scale " + scale.getTypeString() + " does not match the normalized shape " +
                     formatShape(normShape) + " of " + input.getTypeString());
  if (!(epsilon > 0.0))
    return makeError("layer_norm_grad epsilon must be > 0, got " + std::to_string(epsilon));

  int64_t inner = numElements(normShape);
  int64_t outer = inner == 0 ? 0 : input.getNumElements() / inner;
  Tensor dx(input.getDType(), input.getShape());
  Tensor dscale(input.getDType(), normShape);
  Tensor dbias(input.getDType(), normShape);
  llvm::ArrayRef<double> x = input.floats(), dy = grad.floats(), g = scale.floats();
  std::vector<double> xhat(inner);
  for (int64_t r = 0; r < outer; ++r) {
    const double *row = x.data() + r * inner;
    const double *dyRow = dy.data() + r * inner;
    // The forward's statistics, recomputed exactly as evalLayerNorm does.
    double mean = 0.0;
    for (int64_t j = 0; j < inner; ++j)
      mean += row[j];
    mean /= static_cast<double>(inner);
    double var = 0.0;
    for (int64_t j = 0; j < inner; ++j)
      var += (row[j] - mean) * (row[j] - mean);
    var /= static_cast<double>(inner);
    double rstd = 1.0 / std::sqrt(var + epsilon);
    double meanGy = 0.0, meanGyXhat = 0.0;
    for (int64_t j = 0; j < inner; ++j) {
      xhat[j] = (row[j] - mean) * rstd;
      double gy = dyRow[j] * g[j];
      meanGy += gy;
      meanGyXhat += gy * xhat[j];
      dscale.floats()[j] += dyRow[j] * xhat[j];
      dbias.floats()[j] += dyRow[j];
    }
    meanGy /= static_cast<double>(inner);
    meanGyXhat /= static_cast<double>(inner);
    for (int64_t j = 0; j < inner; ++j)
      dx.floats()[r * inner + j] = rstd * (dyRow[j] * g[j] - meanGy - xhat[j] * meanGyXhat);
  }
  std::vector<Tensor> results;
  results.push_back(std::move(dx));
  results.push_back(std::move(dscale));
  if (withBias)
    results.push_back(std::move(dbias));
  for (Tensor &t : results)
    t.roundToDType();
  return results;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalSoftmaxGrad(const Tensor &grad, const Tensor &output,
                                                             int64_t axis) {
  if (!output.isFloat() || grad.getDType() != output.getDType() || grad.getShape() != output.getShape())
    return makeError("softmax_grad needs a gradient and an output of one float type, got " +
                     grad.getTypeString() + " and " + output.getTypeString());
  llvm::Expected<int64_t> dim = normalizeAxis(axis, output.getRank(), "softmax_grad");
  if (!dim)
    return dim.takeError();
  llvm::ArrayRef<int64_t> shape = output.getShape();
  int64_t len = shape[*dim];
  int64_t inner = numElements(shape.drop_front(*dim + 1));
  int64_t outer = numElements(shape.take_front(*dim));
  Tensor out(output.getDType(), shape);
  llvm::ArrayRef<double> y = output.floats(), dy = grad.floats();
  llvm::MutableArrayRef<double> dx = out.floats();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * len * inner + i;
      double dot = 0.0;
      for (int64_t j = 0; j < len; ++j)
        dot += dy[base + j * inner] * y[base + j * inner];
      for (int64_t j = 0; j < len; ++j)
        dx[base + j * inner] = y[base + j * inner] * (dy[base + j * inner] - dot);
    }
  }
  out.roundToDType();
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalCrossEntropyGrad(const Tensor &grad, const Tensor &logits,
                                                                  const Tensor &labels,
                                                                  const CrossEntropyOptions &options) {
  // (C1) grad is a scalar; logits [..., C] and labels [...] as for cross_entropy.
  if (!grad.isFloat() || grad.getRank() != 0)
    return makeError("cross_entropy_grad gradient must be a float scalar, got " + grad.getTypeString());
  if (!logits.isFloat() || logits.getRank() < 1)
    return makeError("cross_entropy_grad logits must be a float tensor of rank >= 1, got " +
                     logits.getTypeString());
  if (labels.isFloat())
    return makeError("cross_entropy_grad labels must be integers, got " + labels.getTypeString());
  if (logits.getShape().drop_back() != labels.getShape())
    return makeError("cross_entropy_grad labels " + labels.getTypeString() +
                     " do not match the leading shape of " + logits.getTypeString());
  int64_t classes = logits.getShape().back();
  int64_t positions = labels.getNumElements();
  llvm::Expected<std::vector<double>> w = positionWeights(labels, classes, options);
  if (!w)
    return w.takeError();
  // The forward loss is sum(w nll) / divisor, so each position's gradient carries w / divisor.
  double divisor = lossDivisor(*w, options);
  double factor = divisor == 0.0 ? 0.0 : grad.floats()[0] / divisor;
  Tensor out(logits.getDType(), logits.getShape());
  llvm::ArrayRef<double> x = logits.floats();
  llvm::MutableArrayRef<double> dx = out.floats();
  for (int64_t p = 0; p < positions; ++p) {
    if ((*w)[p] == 0.0)
      continue; // zeros (Tensor's storage starts zeroed)
    int64_t label = labels.ints()[p];
    const double *row = x.data() + p * classes;
    double lse = logSumExp(row, classes);
    double f = (*w)[p] == 1.0 ? factor : factor * (*w)[p];
    for (int64_t c = 0; c < classes; ++c)
      dx[p * classes + c] = f * (std::exp(row[c] - lse) - (c == label ? 1.0 : 0.0));
  }
  out.roundToDType();
  return out;
}
