//===- Reduction.cpp - reduce and log_softmax kernels ---------------------===//
//
// ptrain.reduce (sum, mean, max over a set of dimensions, accumulated in double) and ptrain.log_softmax on
// host tensors, with the semantics of their op descriptions (PTrainModelOps.td).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

llvm::Expected<Tensor> mlir::ptrain::interp::evalReduce(ReduceKind kind, const Tensor &input,
                                                        llvm::ArrayRef<int64_t> axes, bool keepdims) {
  int64_t rank = input.getRank();
  llvm::SmallVector<bool> reduced(rank, false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return makeError("reduce axis " + llvm::Twine(axis) + " is out of range for rank " + llvm::Twine(rank));
    int64_t d = axis < 0 ? axis + rank : axis;
    if (reduced[d])
      return makeError("reduce axis " + llvm::Twine(axis) + " is repeated");
    reduced[d] = true;
  }
  llvm::SmallVector<int64_t> outShape, keptShape;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    keptShape.push_back(reduced[d] ? 1 : input.getShape()[d]);
    if (reduced[d])
      count *= input.getShape()[d];
    if (!reduced[d] || keepdims)
      outShape.push_back(keptShape.back());
  }
  if (kind == ReduceKind::Max && count == 0 && numElements(keptShape) > 0)
    return makeError("max over a zero-size reduction has no value");
  // Each input element adds into the output element it broadcasts from (the kept shape).
  int64_t outCount = numElements(keptShape);
  std::vector<double> acc(outCount, kind == ReduceKind::Max ? -std::numeric_limits<double>::infinity() : 0.0);
  llvm::SmallVector<int64_t> keptStrides = rowMajorStrides(keptShape);
  llvm::SmallVector<int64_t> index(rank, 0);
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i) {
    int64_t target = 0;
    for (int64_t d = 0; d < rank; ++d)
      target += (reduced[d] ? 0 : index[d]) * keptStrides[d];
    double v = input.getAsDouble(i);
    if (kind == ReduceKind::Max)
      acc[target] = std::isnan(v) || std::isnan(acc[target]) ? NAN : std::max(acc[target], v);
    else
      acc[target] += v;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < input.getShape()[d])
        break;
      index[d] = 0;
    }
  }
  if (kind == ReduceKind::Mean)
    for (double &v : acc)
      v = count ? v / static_cast<double>(count) : NAN;
  if (input.isFloat())
    return Tensor::fromFloats(input.getDType(), outShape, acc);
  if (kind == ReduceKind::Mean)
    return makeError("mean of an integer tensor is not supported, got " + input.getTypeString());
  std::vector<int64_t> ints(acc.begin(), acc.end());
  return Tensor::fromInts(input.getDType(), outShape, ints);
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalLogSoftmax(const Tensor &input, int64_t axis) {
  if (!input.isFloat())
    return makeError("log_softmax needs a float tensor, got " + input.getTypeString());
  int64_t rank = input.getRank();
  if (axis < -rank || axis >= rank)
    return makeError("log_softmax axis " + llvm::Twine(axis) + " is out of range for rank " + llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  llvm::ArrayRef<int64_t> shape = input.getShape();
  int64_t len = shape[axis], inner = numElements(shape.drop_front(axis + 1)),
          outer = numElements(shape.take_front(axis));
  Tensor out(input.getDType(), shape);
  llvm::ArrayRef<double> x = input.floats();
  llvm::MutableArrayRef<double> y = out.floats();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * len * inner + i;
      double maxValue = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < len; ++j)
        maxValue = std::max(maxValue, x[base + j * inner]);
      double sum = 0.0;
      for (int64_t j = 0; j < len; ++j)
        sum += std::exp(x[base + j * inner] - maxValue);
      double logSum = std::log(sum);
      for (int64_t j = 0; j < len; ++j)
        y[base + j * inner] = x[base + j * inner] - maxValue - logSum;
    }
  out.roundToDType();
  return out;
}
