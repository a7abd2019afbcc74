//===- RecognizeMatchers.h - matchers shared by the exporter recognizers -*- C++ -*-===//
//
// Small matchers over legalized model ops for the recognizers of exporters' expansions (RecognizeGelu.cpp,
// RecognizeLayerNorm.cpp, RecognizeRmsNorm.cpp). Constants are `arith.constant`s: initializers held
// constant (ClassifyInitializers.h), Constant nodes, and ConstantOfShape / Expand of a constant, which the
// legalization folds.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_RECOGNIZEMATCHERS_H
#define PTRAIN_LIB_IMPORT_ONNX_RECOGNIZEMATCHERS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Matchers.h"

#include <array>
#include <cmath>
#include <optional>

namespace mlir::ptrain::onnx_import {

/// The `ptrain.binary` of `kind` defining `v`, or null.
inline BinaryOp binaryOf(Value v, BinaryKind kind) {
  auto op = v ? v.getDefiningOp<BinaryOp>() : BinaryOp();
  return op && op.getKind() == kind ? op : BinaryOp();
}

/// The `ptrain.unary` of `kind` defining `v`, or null.
inline UnaryOp unaryOf(Value v, UnaryKind kind) {
  auto op = v ? v.getDefiningOp<UnaryOp>() : UnaryOp();
  return op && op.getKind() == kind ? op : UnaryOp();
}

/// The operands of `op` in both orders, for matching commutative binaries.
inline std::array<std::pair<Value, Value>, 2> bothOrders(BinaryOp op) {
  return {std::pair{op.getLhs(), op.getRhs()}, std::pair{op.getRhs(), op.getLhs()}};
}

/// The splat value of a float constant (any shape), if `v` is one.
inline std::optional<double> splatValue(Value v) {
  DenseFPElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// True when `v` is a constant splat equal to `expected` within a relative 1e-6.
inline bool isSplatConstant(Value v, double expected) {
  std::optional<double> value = splatValue(v);
  return value && std::abs(*value - expected) <= 1e-6 * std::abs(expected);
}

/// If `v` is a kept mean over trailing dimensions [axis, rank), returns the reduce op and sets `axis`.
inline ReduceOp trailingMean(Value v, int64_t &axis) {
  auto reduce = v ? v.getDefiningOp<ReduceOp>() : ReduceOp();
  if (!reduce || reduce.getKind() != ReduceKind::Mean || !reduce.getKeepdims())
    return ReduceOp();
  SmallVector<int64_t> axes = reduce.getNormalizedAxes();
  int64_t rank = reduce.getInput().getType().getRank();
  if (axes.empty())
    return ReduceOp();
  llvm::sort(axes);
  for (auto [i, a] : llvm::enumerate(axes))
    if (a != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i))
      return ReduceOp();
  axis = axes.front();
  return reduce;
}

/// True when `v` is x^2 as pow(x, 2) or x * x.
inline bool isSquareOf(Value v, Value x) {
  if (BinaryOp pow = binaryOf(v, BinaryKind::Pow))
    return pow.getLhs() == x && isSplatConstant(pow.getRhs(), 2.0);
  BinaryOp mul = binaryOf(v, BinaryKind::Mul);
  return mul && mul.getLhs() == x && mul.getRhs() == x;
}

/// The exporters' forms of num / sqrt(d): div(num, sqrt(d)), num * reciprocal(sqrt(d)), num * rsqrt(d),
/// num * (1 / sqrt(d)) (the products in either order). Returns d and sets `num`, or null.
inline Value matchOverSqrt(Value v, Value &num) {
  if (BinaryOp div = binaryOf(v, BinaryKind::Div))
    if (UnaryOp sqrt = unaryOf(div.getRhs(), UnaryKind::Sqrt)) {
      num = div.getLhs();
      return sqrt.getInput();
    }
  BinaryOp mul = binaryOf(v, BinaryKind::Mul);
  if (!mul)
    return nullptr;
  for (auto [n, inv] : bothOrders(mul)) {
    if (UnaryOp rsqrt = unaryOf(inv, UnaryKind::Rsqrt)) {
      num = n;
      return rsqrt.getInput();
    }
    Value root;
    if (UnaryOp recip = unaryOf(inv, UnaryKind::Reciprocal))
      root = recip.getInput();
    else if (BinaryOp div = binaryOf(inv, BinaryKind::Div); div && isSplatConstant(div.getLhs(), 1.0))
      root = div.getRhs();
    if (UnaryOp sqrt = unaryOf(root, UnaryKind::Sqrt)) {
      num = n;
      return sqrt.getInput();
    }
  }
  return nullptr;
}

/// If `v` is variance + eps (either order) with a positive constant eps, returns the variance and sets
/// `eps`, or null.
inline Value matchPlusEpsilon(Value v, double &eps) {
  BinaryOp add = binaryOf(v, BinaryKind::Add);
  if (!add)
    return nullptr;
  for (auto [variance, epsValue] : bothOrders(add))
    if (std::optional<double> e = splatValue(epsValue); e && *e > 0) {
      eps = *e;
      return variance;
    }
  return nullptr;
}

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_RECOGNIZEMATCHERS_H
