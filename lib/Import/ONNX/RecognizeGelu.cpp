//===- RecognizeGelu.cpp - exporters' GELU expansions to ptrain.gelu -*- C++ -*-===//
//
// PyTorch exports nn.GELU() before opset 20 as x * 0.5 * (1 + erf(x / sqrt(2))) (in any association of the
// three factors, with x / sqrt(2) possibly as x * (1 / sqrt(2))). Hugging Face GPT-2's NewGELUActivation
// exports the tanh approximation (Hendrycks & Gimpel 2016, eq. in section 2):
// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), with x^3 as Pow(x, 3) or x * x * x; Megatron-LM
// factors the argument as (sqrt(2/pi) * x) * (1 + 0.044715 * x * x). Recognizing
// either gives the training step one op with one gradient rule instead of six to ten.
//
//===----------------------------------------------------------------------===//

#include "RecognizeGelu.h"

#include "RecognizeMatchers.h"

#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

/// If `v` is erf's argument x / sqrt(2) or x * (1 / sqrt(2)), returns x.
static Value matchErfArgument(Value v) {
  if (BinaryOp div = binaryOf(v, BinaryKind::Div); div && isSplatConstant(div.getRhs(), M_SQRT2))
    return div.getLhs();
  if (BinaryOp mul = binaryOf(v, BinaryKind::Mul))
    for (auto [c, x] : bothOrders(mul))
      if (isSplatConstant(c, M_SQRT1_2))
        return x;
  return nullptr;
}

/// True when `v` is x^3: pow(x, 3), mul(mul(x, x), x) or mul(x, mul(x, x)).
static bool isCube(Value v, Value x) {
  if (BinaryOp pow = binaryOf(v, BinaryKind::Pow))
    return pow.getLhs() == x && isSplatConstant(pow.getRhs(), 3.0);
  BinaryOp mul = binaryOf(v, BinaryKind::Mul);
  if (!mul)
    return false;
  for (auto [square, single] : bothOrders(mul)) {
    BinaryOp sq = binaryOf(square, BinaryKind::Mul);
    if (single == x && sq && sq.getLhs() == x && sq.getRhs() == x)
      return true;
  }
  return false;
}

/// True when `v` is 0.044715 * x^2 as (x * k) * x, (k * x) * x, k * (x * x) or x * (x * k).
static bool isScaledSquare(Value v, Value x, double k) {
  BinaryOp mul = binaryOf(v, BinaryKind::Mul);
  if (!mul)
    return false;
  for (auto [p, q] : bothOrders(mul)) {
    if (BinaryOp sq = binaryOf(q, BinaryKind::Mul); isSplatConstant(p, k) && sq && sq.getLhs() == x && sq.getRhs() == x)
      return true;
    if (BinaryOp scaled = binaryOf(p, BinaryKind::Mul); q == x && scaled)
      for (auto [c, y] : bothOrders(scaled))
        if (y == x && isSplatConstant(c, k))
          return true;
  }
  return false;
}

/// If `v` is tanh's argument sqrt(2/pi) * (x + 0.044715 * x^3) (any operand order), or Megatron-LM's
/// factored form (sqrt(2/pi) * x) * (1 + 0.044715 * x^2), returns x.
static Value matchTanhArgument(Value v) {
  constexpr double kSqrt2OverPi = 0.7978845608028654, kCubeCoefficient = 0.044715;
  BinaryOp outer = binaryOf(v, BinaryKind::Mul);
  if (!outer)
    return nullptr;
  for (auto [scaledX, poly] : bothOrders(outer)) {
    BinaryOp scale = binaryOf(scaledX, BinaryKind::Mul), add = binaryOf(poly, BinaryKind::Add);
    if (!scale || !add)
      continue;
    for (auto [c, x] : bothOrders(scale)) {
      if (!isSplatConstant(c, kSqrt2OverPi))
        continue;
      for (auto [one, term] : bothOrders(add))
        if (isSplatConstant(one, 1.0) && isScaledSquare(term, x, kCubeCoefficient))
          return x;
    }
  }
  for (auto [c, sum] : bothOrders(outer)) {
    BinaryOp add = binaryOf(sum, BinaryKind::Add);
    if (!isSplatConstant(c, kSqrt2OverPi) || !add)
      continue;
    for (auto [x, term] : bothOrders(add)) {
      BinaryOp scaledCube = binaryOf(term, BinaryKind::Mul);
      if (!scaledCube)
        continue;
      for (auto [k, cube] : bothOrders(scaledCube))
        if (isSplatConstant(k, kCubeCoefficient) && isCube(cube, x))
          return x;
    }
  }
  return nullptr;
}

/// If `v` is 1 + erf(x / sqrt(2)) or 1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) (either operand order),
/// returns x and sets `approximate` to the form found.
static Value matchOnePlusCdf(Value v, GeluApproximation &approximate) {
  BinaryOp add = binaryOf(v, BinaryKind::Add);
  if (!add)
    return nullptr;
  for (auto [one, other] : bothOrders(add)) {
    auto unary = other.getDefiningOp<UnaryOp>();
    if (!isSplatConstant(one, 1.0) || !unary)
      continue;
    if (unary.getKind() == UnaryKind::Erf) {
      approximate = GeluApproximation::None;
      return matchErfArgument(unary.getInput());
    }
    if (unary.getKind() == UnaryKind::Tanh) {
      approximate = GeluApproximation::Tanh;
      return matchTanhArgument(unary.getInput());
    }
  }
  return nullptr;
}

namespace {

/// mul(mul(a, b), c) or mul(a, mul(b, c)) whose three factors are x, 0.5 and 1 + erf(x / sqrt(2)) or
/// 1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)).
struct GeluPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BinaryOp root, PatternRewriter &rewriter) const override {
    if (root.getKind() != BinaryKind::Mul)
      return rewriter.notifyMatchFailure(root, "not a multiplication");
    SmallVector<Value, 3> factors;
    for (Value side : {root.getLhs(), root.getRhs()}) {
      if (BinaryOp inner = binaryOf(side, BinaryKind::Mul); inner && factors.size() < 3 && inner->hasOneUse()) {
        factors.push_back(inner.getLhs());
        factors.push_back(inner.getRhs());
      } else {
        factors.push_back(side);
      }
    }
    if (factors.size() != 3)
      return rewriter.notifyMatchFailure(root, "not a product of three factors");
    // Try each factor as the 0.5, each other as 1 + erf(...) or 1 + tanh(...); the remaining one must be x.
    for (int half = 0; half < 3; ++half) {
      if (!isSplatConstant(factors[half], 0.5))
        continue;
      for (int cdf = 0; cdf < 3; ++cdf) {
        if (cdf == half)
          continue;
        GeluApproximation approximate = GeluApproximation::None;
        Value x = matchOnePlusCdf(factors[cdf], approximate);
        Value rest = factors[3 - half - cdf];
        if (x && x == rest && x.getType() == root.getType()) {
          rewriter.replaceOpWithNewOp<GeluOp>(root, x.getType(), x, approximate);
          return success();
        }
      }
    }
    return rewriter.notifyMatchFailure(root, "not x * 0.5 * (1 + erf(...)) or x * 0.5 * (1 + tanh(...))");
  }
};

} // namespace

void mlir::ptrain::onnx_import::populateRecognizeGeluPatterns(RewritePatternSet &patterns) {
  patterns.add<GeluPattern>(patterns.getContext());
}
