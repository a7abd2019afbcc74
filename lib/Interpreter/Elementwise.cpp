//===- Elementwise.cpp - binary, unary and gelu kernels and their adjoints ===//
//
// ptrain.binary (numpy broadcasting), ptrain.unary, ptrain.gelu and ptrain.dropout on host tensors, with the backward
// ops that belong to them: ptrain.sum_to (the adjoint of broadcasting) and ptrain.gelu_grad.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"

#include "ptrain/Interpreter/DropoutLayout.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

llvm::Expected<llvm::SmallVector<int64_t>> mlir::ptrain::interp::broadcastShapes(llvm::ArrayRef<int64_t> lhs,
                                                                                 llvm::ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  llvm::SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t r = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    if (l != r && l != 1 && r != 1)
      return makeError("shapes " + formatShape(lhs) + " and " + formatShape(rhs) + " do not broadcast");
    out[rank - 1 - i] = l == 1 ? r : l;
  }
  return out;
}

std::vector<int64_t> mlir::ptrain::interp::broadcastIndexMap(llvm::ArrayRef<int64_t> outShape,
                                                             llvm::ArrayRef<int64_t> inShape) {
  // Stride of each output dimension into the input: 0 where the input dimension is absent or 1.
  size_t rank = outShape.size(), offset = rank - inShape.size();
  llvm::SmallVector<int64_t> inStrides = rowMajorStrides(inShape);
  llvm::SmallVector<int64_t> strides(rank, 0);
  for (size_t d = offset; d < rank; ++d)
    strides[d] = inShape[d - offset] == 1 ? 0 : inStrides[d - offset];

  int64_t n = numElements(outShape);
  std::vector<int64_t> map(n);
  llvm::SmallVector<int64_t> index(rank, 0);
  int64_t source = 0;
  for (int64_t j = 0; j < n; ++j) {
    map[j] = source;
    // Row-major increment of the multi-index, keeping `source` in step.
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      source += strides[d];
      if (++index[d] < outShape[d])
        break;
      source -= strides[d] * outShape[d];
      index[d] = 0;
    }
  }
  return map;
}

static double applyFloat(BinaryKind kind, double a, double b) {
  switch (kind) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    return a / b;
  case BinaryKind::Pow:
    return std::pow(a, b);
  case BinaryKind::Max:
    // NaN propagates (torch.maximum, ONNX Max).
    return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case BinaryKind::Min:
    return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  }
  return NAN;
}

static llvm::Expected<int64_t> applyInt(BinaryKind kind, int64_t a, int64_t b) {
  switch (kind) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    if (b == 0)
      return makeError("integer division by zero");
    return a / b;
  case BinaryKind::Pow: {
    if (b < 0)
      return makeError("integer pow with negative exponent " + llvm::Twine(b));
    int64_t result = 1, base = a;
    for (uint64_t e = static_cast<uint64_t>(b); e; e >>= 1, base *= base)
      if (e & 1)
        result *= base;
    return result;
  }
  case BinaryKind::Max:
    return std::max(a, b);
  case BinaryKind::Min:
    return std::min(a, b);
  }
  return makeError("unknown binary kind");
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalBinary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs) {
  if (lhs.getDType() != rhs.getDType())
    return makeError("operand element types differ: " + lhs.getTypeString() + " vs " + rhs.getTypeString());
  llvm::Expected<llvm::SmallVector<int64_t>> shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (!shape)
    return shape.takeError();
  std::vector<int64_t> lmap = broadcastIndexMap(*shape, lhs.getShape());
  std::vector<int64_t> rmap = broadcastIndexMap(*shape, rhs.getShape());
  Tensor out(lhs.getDType(), *shape);
  if (lhs.isFloat()) {
    llvm::MutableArrayRef<double> o = out.floats();
    for (size_t j = 0; j < o.size(); ++j)
      o[j] = applyFloat(kind, lhs.floats()[lmap[j]], rhs.floats()[rmap[j]]);
    out.roundToDType();
    return out;
  }
  llvm::MutableArrayRef<int64_t> o = out.ints();
  for (size_t j = 0; j < o.size(); ++j) {
    llvm::Expected<int64_t> v = applyInt(kind, lhs.ints()[lmap[j]], rhs.ints()[rmap[j]]);
    if (!v)
      return v.takeError();
    o[j] = *v;
  }
  return Tensor::fromInts(out.getDType(), out.getShape(), out.ints());
}

static double applyUnary(UnaryKind kind, double x) {
  switch (kind) {
  case UnaryKind::Neg:
    return -x;
  case UnaryKind::Exp:
    return std::exp(x);
  case UnaryKind::Log:
    return std::log(x);
  case UnaryKind::Sqrt:
    return std::sqrt(x);
  case UnaryKind::Rsqrt:
    return 1.0 / std::sqrt(x);
  case UnaryKind::Reciprocal:
    return 1.0 / x;
  case UnaryKind::Erf:
    return std::erf(x);
  case UnaryKind::Tanh:
    return std::tanh(x);
  case UnaryKind::Relu:
    return x > 0.0 ? x : (std::isnan(x) ? x : 0.0);
  }
  return NAN;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalUnary(UnaryKind kind, const Tensor &input) {
  if (!input.isFloat())
    return makeError("unary " + stringifyUnaryKind(kind) + " needs a float tensor, got " + input.getTypeString());
  Tensor out = input;
  for (double &v : out.floats())
    v = applyUnary(kind, v);
  out.roundToDType();
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalGelu(GeluApproximation approximation, const Tensor &input) {
  if (!input.isFloat())
    return makeError("gelu needs a float tensor, got " + input.getTypeString());
  Tensor out = input;
  const double invSqrt2 = 1.0 / std::sqrt(2.0);
  const double sqrt2OverPi = std::sqrt(2.0 / M_PI);
  for (double &x : out.floats()) {
    if (approximation == GeluApproximation::Tanh)
      x = 0.5 * x * (1.0 + std::tanh(sqrt2OverPi * (x + 0.044715 * x * x * x)));
    else
      x = x * 0.5 * (1.0 + std::erf(x * invSqrt2));
  }
  out.roundToDType();
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalGeluGrad(GeluApproximation approximation, const Tensor &grad,
                                                          const Tensor &input) {
  if (!input.isFloat() || grad.getDType() != input.getDType() || grad.getShape() != input.getShape())
    return makeError("gelu_grad needs a gradient and an input of one float type, got " + grad.getTypeString() +
                     " and " + input.getTypeString());
  Tensor out(input.getDType(), input.getShape());
  const double invSqrt2 = 1.0 / std::sqrt(2.0);
  const double invSqrt2Pi = 1.0 / std::sqrt(2.0 * M_PI);
  const double sqrt2OverPi = std::sqrt(2.0 / M_PI);
  const double cubic = 0.044715;
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i) {
    double x = input.floats()[i];
    double derivative;
    if (approximation == GeluApproximation::Tanh) {
      // d/dx 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
      double t = std::tanh(sqrt2OverPi * (x + cubic * x * x * x));
      derivative = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * sqrt2OverPi * (1.0 + 3.0 * cubic * x * x);
    } else {
      // d/dx x Phi(x) = Phi(x) + x phi(x).
      derivative = 0.5 * (1.0 + std::erf(x * invSqrt2)) + x * invSqrt2Pi * std::exp(-0.5 * x * x);
    }
    out.floats()[i] = grad.floats()[i] * derivative;
  }
  out.roundToDType();
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalSumTo(const Tensor &input, llvm::ArrayRef<int64_t> shape) {
  if (!input.isFloat())
    return makeError("sum_to needs a float tensor, got " + input.getTypeString());
  // (C1) the result shape broadcasts to the input shape.
  for (int64_t d : shape)
    if (d < 0)
      return makeError("sum_to target shape " + formatShape(shape) + " is not static");
  llvm::Expected<llvm::SmallVector<int64_t>> broadcast = broadcastShapes(shape, input.getShape());
  if (!broadcast)
    return broadcast.takeError();
  if (llvm::ArrayRef<int64_t>(*broadcast) != input.getShape())
    return makeError("sum_to target shape " + formatShape(shape) + " does not broadcast to " + input.getTypeString());
  Tensor out(input.getDType(), shape);
  std::vector<int64_t> map = broadcastIndexMap(input.getShape(), shape);
  for (size_t j = 0; j < map.size(); ++j)
    out.floats()[map[j]] += input.floats()[j];
  out.roundToDType();
  return out;
}

/// SplitMix64's output function (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014).
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

bool mlir::ptrain::interp::dropoutKeeps(int64_t seed, int64_t counter, int64_t index, double ratio) {
  constexpr uint64_t golden = 0x9E3779B97F4A7C15ULL;
  uint64_t key = mix64(static_cast<uint64_t>(seed) ^ mix64(static_cast<uint64_t>(counter) + golden));
  uint64_t bits = mix64(key + (static_cast<uint64_t>(index) + 1) * golden);
  double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
  return u >= ratio;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalDropout(const Tensor &input, const Tensor &counter, double ratio,
                                                         int64_t seed) {
  if (counter.getDType() != DType::I64 || counter.getNumElements() != 1 || !counter.getShape().empty())
    return makeError("dropout's counter must be a rank-0 i64 tensor, got " + counter.getTypeString());
  DropoutLayout layout;
  layout.step = counter.ints()[0];
  return evalDropout(input, ratio, seed, layout);
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalDropout(const Tensor &input, double ratio, int64_t seed,
                                                         const DropoutLayout &layout) {
  if (!input.isFloat())
    return makeError("dropout needs a float tensor, got " + input.getTypeString());
  if (!(ratio >= 0.0 && ratio < 1.0))
    return makeError("dropout ratio " + std::to_string(ratio) + " is not in [0, 1)");
  double scale = 1.0 / (1.0 - ratio);
  Tensor out = input;
  for (int64_t i = 0, e = out.getNumElements(); i < e; ++i)
    out.floats()[i] = dropoutKeeps(seed, layout.step, layout.globalIndex(i), ratio) ? out.floats()[i] * scale : 0.0;
  out.roundToDType();
  return out;
}

llvm::Expected<mlir::ptrain::interp::DropoutLayout> mlir::ptrain::interp::dropoutLayout(DropoutOp op, int64_t counter,
                                                                                        AxisCoordinate coordinate) {
  DropoutLayout layout;
  layout.step = counter;
  DropoutLayoutAttr spec = getDropoutLayout(op);
  if (!spec)
    return layout;
  auto type = cast<RankedTensorType>(op.getInput().getType());
  auto at = [&](StringRef axis) -> llvm::Expected<std::pair<int64_t, int64_t>> {
    if (auto c = coordinate(axis))
      return *c;
    return makeError("dropout's layout names the grid axis '" + axis.str() +
                     "', which this run has no coordinate on (run the plan on the multi-rank executor)");
  };
  // Global elements per batch row: the local ones, the sharded dimension P times larger.
  int64_t rowElements = 0;
  if (std::optional<int64_t> shardDim = spec.getShardDim()) { // with shard_axis (C2)
    auto c = at(spec.getShardAxis());
    if (!c)
      return c.takeError();
    int64_t k = *shardDim;
    layout.mid = type.getDimSize(k);
    for (int64_t d = k + 1; d < type.getRank(); ++d)
      layout.inner *= type.getDimSize(d);
    std::tie(layout.part, layout.parts) = *c;
  }
  if (std::optional<int64_t> batchRows = spec.getBatchRows()) {
    // The counter packs step + 2^32 row (DropoutRows.h).
    layout.step = counter & 0xFFFFFFFFLL;
    int64_t row = counter >> 32;
    if (std::optional<int64_t> replicaRows = spec.getReplicaRows()) { // with replica_axis (C3)
      auto c = at(spec.getReplicaAxis());
      if (!c)
        return c.takeError();
      row += c->first * *replicaRows;
    }
    rowElements = type.getNumElements() / *batchRows * layout.parts;
    layout.base = row * rowElements;
  }
  return layout;
}

llvm::Expected<std::vector<Tensor>> mlir::ptrain::interp::evaluateDropout(DropoutOp op,
                                                                          llvm::function_ref<const Tensor &(Value)> get,
                                                                          AxisCoordinate coordinate) {
  const Tensor &counter = get(op.getCounter());
  if (counter.getDType() != DType::I64 || counter.getNumElements() != 1 || !counter.getShape().empty())
    return makeError("dropout's counter must be a rank-0 i64 tensor, got " + counter.getTypeString());
  llvm::Expected<DropoutLayout> layout = dropoutLayout(op, counter.ints()[0], coordinate);
  if (!layout)
    return layout.takeError();
  llvm::Expected<Tensor> y =
      evalDropout(get(op.getInput()), op.getRatio().convertToDouble(), op.getSeedAttr().getInt(), *layout);
  if (!y)
    return y.takeError();
  std::vector<Tensor> results;
  results.push_back(std::move(*y));
  return results;
}
