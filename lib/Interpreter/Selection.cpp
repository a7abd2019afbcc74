//===- Selection.cpp - masks, select, cast, broadcast_to and gather kernels ===//
//
// ptrain.compare (i1 masks), ptrain.select (ONNX Where), ptrain.cast, ptrain.broadcast_to (ONNX Expand) and
// ptrain.gather on host tensors, with the semantics of their op descriptions (PTrainModelOps.td).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

llvm::Expected<Tensor> mlir::ptrain::interp::evalCompare(CompareKind kind, const Tensor &lhs, const Tensor &rhs) {
  if (lhs.getDType() != rhs.getDType())
    return makeError("operand element types differ: " + lhs.getTypeString() + " vs " + rhs.getTypeString());
  bool logical = kind == CompareKind::And || kind == CompareKind::Or || kind == CompareKind::Xor;
  if (logical && lhs.getDType() != DType::I1)
    return makeError(stringifyCompareKind(kind) + " needs i1 operands, got " + lhs.getTypeString());
  llvm::Expected<llvm::SmallVector<int64_t>> shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (!shape)
    return shape.takeError();
  std::vector<int64_t> lmap = broadcastIndexMap(*shape, lhs.getShape());
  std::vector<int64_t> rmap = broadcastIndexMap(*shape, rhs.getShape());
  Tensor out(DType::I1, *shape);
  llvm::MutableArrayRef<int64_t> o = out.ints();
  for (size_t j = 0; j < o.size(); ++j) {
    // Integers up to 2^53 compare exactly as doubles; ids and shapes stay far below.
    double a = lhs.getAsDouble(lmap[j]), b = rhs.getAsDouble(rmap[j]);
    bool value = false;
    switch (kind) {
    case CompareKind::Eq:
      value = a == b;
      break;
    case CompareKind::Lt:
      value = a < b;
      break;
    case CompareKind::Le:
      value = a <= b;
      break;
    case CompareKind::Gt:
      value = a > b;
      break;
    case CompareKind::Ge:
      value = a >= b;
      break;
    case CompareKind::And:
      value = a != 0 && b != 0;
      break;
    case CompareKind::Or:
      value = a != 0 || b != 0;
      break;
    case CompareKind::Xor:
      value = (a != 0) != (b != 0);
      break;
    }
    o[j] = value;
  }
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalSelect(const Tensor &condition, const Tensor &lhs, const Tensor &rhs) {
  if (condition.getDType() != DType::I1)
    return makeError("select needs an i1 condition, got " + condition.getTypeString());
  if (lhs.getDType() != rhs.getDType())
    return makeError("select operands differ in element type: " + lhs.getTypeString() + " vs " + rhs.getTypeString());
  llvm::Expected<llvm::SmallVector<int64_t>> partial = broadcastShapes(condition.getShape(), lhs.getShape());
  if (!partial)
    return partial.takeError();
  llvm::Expected<llvm::SmallVector<int64_t>> shape = broadcastShapes(*partial, rhs.getShape());
  if (!shape)
    return shape.takeError();
  std::vector<int64_t> cmap = broadcastIndexMap(*shape, condition.getShape());
  std::vector<int64_t> lmap = broadcastIndexMap(*shape, lhs.getShape());
  std::vector<int64_t> rmap = broadcastIndexMap(*shape, rhs.getShape());
  Tensor out(lhs.getDType(), *shape);
  for (size_t j = 0; j < cmap.size(); ++j) {
    bool take = condition.ints()[cmap[j]] != 0;
    if (out.isFloat())
      out.floats()[j] = take ? lhs.floats()[lmap[j]] : rhs.floats()[rmap[j]];
    else
      out.ints()[j] = take ? lhs.ints()[lmap[j]] : rhs.ints()[rmap[j]];
  }
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalCast(const Tensor &input, DType to) {
  Tensor out(to, input.getShape());
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i) {
    double v = input.getAsDouble(i);
    if (isFloatDType(to)) {
      out.floats()[i] = v;
      continue;
    }
    if (to == DType::I1) {
      out.ints()[i] = v != 0; // NaN != 0 is true, as in numpy.
      continue;
    }
    if (input.isFloat()) {
      double truncated = std::trunc(v);
      double limit = to == DType::I32 ? 2147483648.0 : 9223372036854775808.0;
      if (std::isnan(v) || truncated >= limit || truncated < -limit)
        return makeError("cast of " + std::to_string(v) + " to " + stringifyDType(to) + " is out of range");
      out.ints()[i] = static_cast<int64_t>(truncated);
    } else {
      int64_t x = input.ints()[i];
      out.ints()[i] = to == DType::I32 ? static_cast<int64_t>(static_cast<int32_t>(x)) : x;
    }
  }
  out.roundToDType();
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalBroadcastTo(const Tensor &input, llvm::ArrayRef<int64_t> shape) {
  llvm::Expected<llvm::SmallVector<int64_t>> joint = broadcastShapes(shape, input.getShape());
  if (!joint)
    return joint.takeError();
  if (llvm::ArrayRef<int64_t>(*joint) != shape)
    return makeError(input.getTypeString() + " does not broadcast to " + formatShape(shape));
  return input.gather(shape, broadcastIndexMap(shape, input.getShape()));
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalGather(const Tensor &data, const Tensor &indices, int64_t axis) {
  if (indices.isFloat() || indices.getDType() == DType::I1)
    return makeError("gather indices must be integers, got " + indices.getTypeString());
  int64_t rank = data.getRank();
  if (axis < -rank || axis >= rank)
    return makeError("gather axis " + llvm::Twine(axis) + " is out of range for rank " + llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  llvm::ArrayRef<int64_t> shape = data.getShape();
  int64_t outer = numElements(shape.take_front(axis)), len = shape[axis];
  int64_t inner = numElements(shape.drop_front(axis + 1)), count = indices.getNumElements();
  llvm::SmallVector<int64_t> outShape(shape.take_front(axis));
  llvm::append_range(outShape, indices.getShape());
  llvm::append_range(outShape, shape.drop_front(axis + 1));
  std::vector<int64_t> source;
  source.reserve(outer * count * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      int64_t index = indices.ints()[j];
      if (index < -len || index >= len)
        return makeError("gather index " + llvm::Twine(index) + " is out of range [-" + llvm::Twine(len) + ", " +
                         llvm::Twine(len) + ") of axis " + llvm::Twine(axis));
      if (index < 0)
        index += len;
      for (int64_t i = 0; i < inner; ++i)
        source.push_back((o * len + index) * inner + i);
    }
  return data.gather(outShape, source);
}
