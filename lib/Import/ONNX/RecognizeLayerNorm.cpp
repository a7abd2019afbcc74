//===- RecognizeLayerNorm.cpp - decomposed layer norm to ptrain.layer_norm -*- C++ -*-===//
//
// Before LayerNormalization-17, PyTorch exports nn.LayerNorm as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
// Div, Mul, Add (Ba et al., 2016: y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta, with the biased
// variance). Recognizing it gives the training step one op with one gradient rule instead of nine ops, one
// of them a `pow` that has no gradient rule.
//
//===----------------------------------------------------------------------===//

#include "RecognizeLayerNorm.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <array>

using namespace mlir;
using namespace mlir::ptrain;

static BinaryOp binaryOf(Value v, BinaryKind kind) {
  auto op = v ? v.getDefiningOp<BinaryOp>() : BinaryOp();
  return op && op.getKind() == kind ? op : BinaryOp();
}

static std::array<std::pair<Value, Value>, 2> bothOrders(BinaryOp op) {
  return {std::pair{op.getLhs(), op.getRhs()}, std::pair{op.getRhs(), op.getLhs()}};
}

/// The splat value of a float constant, if `v` is one.
static std::optional<double> splatValue(Value v) {
  DenseFPElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// If `v` is a kept mean over trailing dimensions [axis, rank), returns the reduce op and sets `axis`.
static ReduceOp trailingMean(Value v, int64_t &axis) {
  auto reduce = v.getDefiningOp<ReduceOp>();
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

/// True when `v` is x - mean.
static bool isCentered(Value v, Value x, Value mean) {
  BinaryOp sub = binaryOf(v, BinaryKind::Sub);
  return sub && sub.getLhs() == x && sub.getRhs() == mean;
}

/// True when `v` is (x - mean)^2 as pow(d, 2) or d * d.
static bool isSquaredDeviation(Value v, Value x, Value mean) {
  if (BinaryOp pow = binaryOf(v, BinaryKind::Pow))
    return isCentered(pow.getLhs(), x, mean) && splatValue(pow.getRhs()) == 2.0;
  BinaryOp mul = binaryOf(v, BinaryKind::Mul);
  return mul && isCentered(mul.getLhs(), x, mean) && isCentered(mul.getRhs(), x, mean);
}

namespace {

/// add(mul(scale, (x - mean) / sqrt(var + eps)), bias), commutative operands in either order.
struct LayerNormPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BinaryOp root, PatternRewriter &rewriter) const override {
    if (root.getKind() != BinaryKind::Add)
      return rewriter.notifyMatchFailure(root, "not an addition");
    for (auto [scaled, bias] : bothOrders(root)) {
      BinaryOp mul = binaryOf(scaled, BinaryKind::Mul);
      if (!mul)
        continue;
      for (auto [scale, normalized] : bothOrders(mul)) {
        BinaryOp div = binaryOf(normalized, BinaryKind::Div);
        if (!div)
          continue;
        auto centered = div.getLhs().getDefiningOp<BinaryOp>();
        if (!centered || centered.getKind() != BinaryKind::Sub)
          continue;
        Value x = centered.getLhs(), mean = centered.getRhs();
        int64_t axis;
        ReduceOp meanOp = trailingMean(mean, axis);
        if (!meanOp || meanOp.getInput() != x)
          continue;
        auto sqrt = div.getRhs().getDefiningOp<UnaryOp>();
        if (!sqrt || sqrt.getKind() != UnaryKind::Sqrt)
          continue;
        BinaryOp addEps = binaryOf(sqrt.getInput(), BinaryKind::Add);
        if (!addEps)
          continue;
        for (auto [variance, epsValue] : bothOrders(addEps)) {
          std::optional<double> eps = splatValue(epsValue);
          int64_t varAxis;
          ReduceOp varOp = trailingMean(variance, varAxis);
          if (!eps || !(*eps > 0) || !varOp || varAxis != axis || !isSquaredDeviation(varOp.getInput(), x, mean))
            continue;
          auto xType = cast<RankedTensorType>(x.getType());
          auto paramType = RankedTensorType::get(xType.getShape().drop_front(axis), xType.getElementType());
          if (scale.getType() != paramType || bias.getType() != paramType || root.getType() != xType)
            return rewriter.notifyMatchFailure(root, "scale or bias is not x.shape[axis:]");
          rewriter.replaceOpWithNewOp<LayerNormOp>(root, xType, x, scale, bias, rewriter.getI64IntegerAttr(axis),
                                                   rewriter.getF64FloatAttr(*eps));
          return success();
        }
      }
    }
    return rewriter.notifyMatchFailure(root, "not scale * (x - mean) / sqrt(var + eps) + bias");
  }
};

} // namespace

void mlir::ptrain::onnx_import::populateRecognizeLayerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<LayerNormPattern>(patterns.getContext());
}
