//===- RecognizeLayerNorm.cpp - decomposed layer norm to ptrain.layer_norm -*- C++ -*-===//
//
// Before LayerNormalization-17, PyTorch exports nn.LayerNorm as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
// Div, Mul, Add (Ba et al., 2016: y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta, with the biased
// variance); other exporters square as Mul(d, d) and divide as Reciprocal + Mul, and a LayerNorm without
// bias ends at the Mul. Epsilon added after the Sqrt, (x - E[x]) / (sqrt(Var[x]) + eps), is another
// function: it stays decomposed (and trains through the elementwise gradient rules). Recognizing it gives the training step one op with one gradient rule instead of nine ops, one
// of them a `pow` that has no gradient rule.
//
// tf2onnx writes a Keras LayerNormalization as TensorFlow's batch-norm algebra, x * s + (beta - mean * s) with
// s = gamma / sqrt(var + eps): the same function, recognized too (BatchNormAlgebraPattern).
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

/// True when `mean` and `variance` are x's moments over the same trailing dimensions [axis, rank): kept means of x
/// and of (x - mean)^2; sets `axis`.
static bool areMoments(Value x, Value mean, Value variance, int64_t &axis) {
  int64_t varAxis = 0;
  ReduceOp meanOp = trailingMean(mean, axis), varOp = trailingMean(variance, varAxis);
  return meanOp && meanOp.getInput() == x && varOp && varAxis == axis &&
         isSquaredDeviation(varOp.getInput(), x, mean);
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
      int64_t axis = 0;
      if (!areMoments(x, mean, variance, axis))
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

/// Whether `v` can be a layer_norm scale or bias of `paramType` (x.shape[axis:]): of that type, or per-feature
/// [1, ..., 1, x.shape[axis:]] (TensorFlow broadcasts gamma and beta so).
static bool isNormParameter(Value v, RankedTensorType paramType) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getElementType() != paramType.getElementType())
    return false;
  ArrayRef<int64_t> shape = type.getShape();
  int64_t lead = type.getRank() - paramType.getRank();
  return lead >= 0 && shape.drop_front(lead) == paramType.getShape() &&
         llvm::all_of(shape.take_front(lead), [](int64_t d) { return d == 1; });
}

/// `v` (isNormParameter) with the type `paramType`: itself, or reshaped.
static Value asNormParameter(Value v, RankedTensorType paramType, PatternRewriter &rewriter, Location loc) {
  return v.getType() == paramType ? v : ReshapeOp::create(rewriter, loc, paramType, v).getResult();
}

/// TensorFlow's batch-norm algebra, as tf2onnx writes a Keras LayerNormalization (tf.nn.batch_normalization):
/// x * s + (beta - mean * s) with s = gamma / sqrt(var + eps), var the mean of (x - mean)^2; beta - mean * s as
/// Add(Mul(Neg(mean), s), beta) or Sub(beta, Mul(mean, s)), products and sums in either order, the division in
/// any form of matchOverSqrt; gamma and beta per-feature ([1, ..., 1, D]). The same function as
/// LayerNormPattern's, in another association: into one layer_norm with that scale and bias.
struct BatchNormAlgebraPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  /// mean when `shift` is beta - mean * s in one of the two forms (setting `beta`), else null.
  static Value shiftMean(Value shift, Value s, Value &beta) {
    if (BinaryOp sub = binaryOf(shift, BinaryKind::Sub)) {
      BinaryOp product = binaryOf(sub.getRhs(), BinaryKind::Mul);
      for (auto [mean, factor] : product ? bothOrders(product) : std::array<std::pair<Value, Value>, 2>{})
        if (factor == s) {
          beta = sub.getLhs();
          return mean;
        }
      return nullptr;
    }
    BinaryOp add = binaryOf(shift, BinaryKind::Add);
    for (auto [term, b] : add ? bothOrders(add) : std::array<std::pair<Value, Value>, 2>{}) {
      BinaryOp product = binaryOf(term, BinaryKind::Mul);
      for (auto [negMean, factor] : product ? bothOrders(product) : std::array<std::pair<Value, Value>, 2>{})
        if (UnaryOp neg = unaryOf(negMean, UnaryKind::Neg); neg && factor == s) {
          beta = b;
          return neg.getInput();
        }
    }
    return nullptr;
  }

  LogicalResult matchAndRewrite(BinaryOp root, PatternRewriter &rewriter) const override {
    if (root.getKind() != BinaryKind::Add)
      return rewriter.notifyMatchFailure(root, "not an addition");
    for (auto [scaled, shift] : bothOrders(root)) {
      BinaryOp xs = binaryOf(scaled, BinaryKind::Mul);
      for (auto [x, s] : xs ? bothOrders(xs) : std::array<std::pair<Value, Value>, 2>{}) {
        Value gamma, beta;
        double eps = 0;
        Value variance = matchPlusEpsilon(matchOverSqrt(s, gamma), eps);
        Value mean = variance ? shiftMean(shift, s, beta) : Value();
        int64_t axis = 0;
        if (!mean || !areMoments(x, mean, variance, axis))
          continue;
        auto xType = cast<RankedTensorType>(x.getType());
        auto paramType = RankedTensorType::get(xType.getShape().drop_front(axis), xType.getElementType());
        if (root.getType() != xType)
          continue;
        if (!isNormParameter(gamma, paramType) || !isNormParameter(beta, paramType))
          return rewriter.notifyMatchFailure(root, "gamma or beta is not per-feature over x.shape[axis:]");
        Value scale = asNormParameter(gamma, paramType, rewriter, root.getLoc());
        Value bias = asNormParameter(beta, paramType, rewriter, root.getLoc());
        rewriter.replaceOpWithNewOp<LayerNormOp>(root, xType, x, scale, bias, rewriter.getI64IntegerAttr(axis),
                                                 rewriter.getF64FloatAttr(eps));
        return success();
      }
    }
    return rewriter.notifyMatchFailure(root, "not x * s + (beta - mean * s), s = gamma / sqrt(var + eps)");
  }
};

} // namespace

void mlir::ptrain::onnx_import::populateRecognizeLayerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<LayerNormPattern, LayerNormBiasPattern, BatchNormAlgebraPattern>(patterns.getContext());
}
