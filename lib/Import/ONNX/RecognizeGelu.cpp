//===- RecognizeGelu.cpp - exporters' GELU expansions to ptrain.gelu -*- C++ -*-===//
//
// PyTorch exports nn.GELU() before opset 20 as x * 0.5 * (1 + erf(x / sqrt(2))) (in any association of the
// three factors, with x / sqrt(2) possibly as x * (1 / sqrt(2))). Recognizing it gives the training step one
// op with one gradient rule instead of six.
//
//===----------------------------------------------------------------------===//

#include "RecognizeGelu.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;

/// True when `v` is a constant splat (any shape) equal to `expected` within a relative 1e-6.
static bool isSplatConstant(Value v, double expected) {
  DenseFPElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return false;
  double value = attr.getSplatValue<APFloat>().convertToDouble();
  return std::abs(value - expected) <= 1e-6 * std::abs(expected);
}

static BinaryOp binaryOf(Value v, BinaryKind kind) {
  auto op = v.getDefiningOp<BinaryOp>();
  return op && op.getKind() == kind ? op : BinaryOp();
}

/// If `v` is 1 + erf(x / sqrt(2)) (either operand order, division or multiplication by 1/sqrt(2)), returns x.
static Value matchOnePlusErf(Value v) {
  BinaryOp add = binaryOf(v, BinaryKind::Add);
  if (!add)
    return nullptr;
  for (auto [one, other] : {std::pair{add.getLhs(), add.getRhs()}, std::pair{add.getRhs(), add.getLhs()}}) {
    auto erf = other.getDefiningOp<UnaryOp>();
    if (!isSplatConstant(one, 1.0) || !erf || erf.getKind() != UnaryKind::Erf)
      continue;
    if (BinaryOp div = binaryOf(erf.getInput(), BinaryKind::Div); div && isSplatConstant(div.getRhs(), M_SQRT2))
      return div.getLhs();
    if (BinaryOp mul = binaryOf(erf.getInput(), BinaryKind::Mul); mul && isSplatConstant(mul.getRhs(), M_SQRT1_2))
      return mul.getLhs();
  }
  return nullptr;
}

namespace {

/// mul(mul(a, b), c) or mul(a, mul(b, c)) whose three factors are x, 0.5 and 1 + erf(x / sqrt(2)).
struct ErfGeluPattern : OpRewritePattern<BinaryOp> {
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
    // Try each factor as the 0.5, each other as 1 + erf(x / sqrt(2)); the remaining one must be x.
    for (int half = 0; half < 3; ++half) {
      if (!isSplatConstant(factors[half], 0.5))
        continue;
      for (int cdf = 0; cdf < 3; ++cdf) {
        if (cdf == half)
          continue;
        Value x = matchOnePlusErf(factors[cdf]);
        Value rest = factors[3 - half - cdf];
        if (x && x == rest && x.getType() == root.getType()) {
          rewriter.replaceOpWithNewOp<GeluOp>(root, x.getType(), x, GeluApproximation::None);
          return success();
        }
      }
    }
    return rewriter.notifyMatchFailure(root, "not x * 0.5 * (1 + erf(x / sqrt(2)))");
  }
};

} // namespace

void mlir::ptrain::onnx_import::populateRecognizeGeluPatterns(RewritePatternSet &patterns) {
  patterns.add<ErfGeluPattern>(patterns.getContext());
}
