//===- RecognizeLayerNorm.cpp - decomposed layer norm to ptrain.layer_norm -*- C++ -*-===//
//
// Before LayerNormalization-17, PyTorch exports nn.LayerNorm as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
// Div, Mul, Add (Ba et al., 2016: y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta, with the biased
// variance); other exporters square as Mul(d, d) and divide as Reciprocal + Mul, and a LayerNorm without
// bias ends at the Mul. Epsilon added after the Sqrt, (x - E[x]) / (sqrt(Var[x]) + eps), is another
// function: it stays decomposed (and trains through the elementwise gradient rules). Recognizing it gives the training step one op with one gradient rule instead of nine ops, one
// of them a `pow` that has no gradient rule.
//
//===----------------------------------------------------------------------===//

#include "RecognizeLayerNorm.h"

#include "RecognizeMatchers.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

/// True when `v` is x - mean.
static bool isCentered(Value v, Value x, Value mean) {
  BinaryOp sub = binaryOf(v, BinaryKind::Sub);
  return sub && sub.getLhs() == x && sub.getRhs() == mean;
}

/// True when `v` is (x - mean)^2 as pow(d, 2) or d * d (d the same value, or two equal subtractions).
static bool isSquaredDeviation(Value v, Value x, Value mean) {
  if (BinaryOp pow = binaryOf(v, BinaryKind::Pow))
    return isCentered(pow.getLhs(), x, mean) && isSplatConstant(pow.getRhs(), 2.0);
  BinaryOp mul = binaryOf(v, BinaryKind::Mul);
  return mul && isCentered(mul.getLhs(), x, mean) && isCentered(mul.getRhs(), x, mean);
}

namespace {

/// mul(scale, (x - mean) / sqrt(var + eps)), commutative operands in either order and the division in any
/// form of matchOverSqrt, into a layer_norm without bias (LayerNormBiasPattern then takes a bias added).
struct LayerNormPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BinaryOp root, PatternRewriter &rewriter) const override {
    if (root.getKind() != BinaryKind::Mul)
      return rewriter.notifyMatchFailure(root, "not a multiplication");
    for (auto [scale, normalized] : bothOrders(root)) {
      Value centeredValue;
      double eps = 0;
      Value variance = matchPlusEpsilon(matchOverSqrt(normalized, centeredValue), eps);
      BinaryOp centered = binaryOf(centeredValue, BinaryKind::Sub);
      if (!variance || !centered)
        continue;
      Value x = centered.getLhs(), mean = centered.getRhs();
      int64_t axis = 0, varAxis = 0;
      ReduceOp meanOp = trailingMean(mean, axis);
      if (!meanOp || meanOp.getInput() != x)
        continue;
      ReduceOp varOp = trailingMean(variance, varAxis);
      if (!varOp || varAxis != axis || !isSquaredDeviation(varOp.getInput(), x, mean))
        continue;
      auto xType = cast<RankedTensorType>(x.getType());
      auto paramType = RankedTensorType::get(xType.getShape().drop_front(axis), xType.getElementType());
      if (scale.getType() != paramType || root.getType() != xType)
        return rewriter.notifyMatchFailure(root, "the scale is not x.shape[axis:]");
      rewriter.replaceOpWithNewOp<LayerNormOp>(root, xType, x, scale, Value(), rewriter.getI64IntegerAttr(axis),
                                               rewriter.getF64FloatAttr(eps));
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not scale * (x - mean) / sqrt(var + eps)");
  }
};

/// add(layer_norm(x, scale) without bias and with no other use, bias) in either order, with bias of the
/// scale's type: the layer_norm with that bias.
struct LayerNormBiasPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BinaryOp root, PatternRewriter &rewriter) const override {
    if (root.getKind() != BinaryKind::Add)
      return rewriter.notifyMatchFailure(root, "not an addition");
    for (auto [normalized, bias] : bothOrders(root)) {
      auto norm = normalized.getDefiningOp<LayerNormOp>();
      if (!norm || norm.getBias() || !norm->hasOneUse() || bias.getType() != norm.getScale().getType() ||
          root.getType() != norm.getType())
        continue;
      rewriter.replaceOpWithNewOp<LayerNormOp>(root, norm.getType(), norm.getInput(), norm.getScale(), bias,
                                               norm.getAxisAttr(), norm.getEpsilonAttr());
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not a bias added to a layer_norm");
  }
};

} // namespace

void mlir::ptrain::onnx_import::populateRecognizeLayerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<LayerNormPattern, LayerNormBiasPattern>(patterns.getContext());
}
