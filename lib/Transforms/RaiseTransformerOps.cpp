//===- RaiseTransformerOps.cpp - decomposed RMSNorm and rotary embeddings to model ops -===//
//
// Below opset 23 exporters write LLaMA's RMSNorm and rotary position embeddings as elementwise ops. The
// first part of --ptrain-raise folds them into `ptrain.rms_norm` and `ptrain.rotary_embedding`, the ops the
// importer makes of RMSNormalization-23 and RotaryEmbedding-23, so that an unfused export and a fused one
// give the same graph to the later passes (one op with one gradient rule; `pow` has none).
//
//   RMSNorm (Zhang & Sennrich 2019): w * (x * rsqrt(mean(x^2) + eps)), either operand order; x^2 as
//     pow(x, 2) or x * x; rsqrt as unary rsqrt, reciprocal(sqrt), 1 / sqrt, or x / sqrt(...).
//   Rotary, rotate-half form (Hugging Face's apply_rotary_pos_emb): x * C + rotate_half(x) * S with
//     rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2]) and C = concat(c, c) on the last axis (and S
//     alike), given a unit heads axis: exactly rotary_embedding(x, c, s) with non-interleaved pairs.
//     Only the two equal halves of C make the form a rotation, so C must be built as concat(c, c), or be a
//     constant whose two halves are equal bit for bit (concat(c, c) folded by the importer).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/RaiseTransformerOps.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"
#include "ptrain/Transforms/TensorParallel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

BinaryOp binaryOf(Value v, BinaryKind kind) {
  auto op = v ? v.getDefiningOp<BinaryOp>() : BinaryOp();
  return op && op.getKind() == kind ? op : BinaryOp();
}

UnaryOp unaryOf(Value v, UnaryKind kind) {
  auto op = v ? v.getDefiningOp<UnaryOp>() : UnaryOp();
  return op && op.getKind() == kind ? op : UnaryOp();
}

/// Both operand orders of a commutative binary op.
SmallVector<std::pair<Value, Value>, 2> operandOrders(BinaryOp op) {
  return {{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}};
}

/// The value of a float splat constant `v`.
std::optional<double> splatOf(Value v) {
  DenseFPElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// If `v` is mean(x^2) over x's trailing dimensions [axis, rank) with kept dimensions, returns x.
Value meanSquareOf(Value v, int64_t &axis) {
  auto mean = v.getDefiningOp<ReduceOp>();
  if (!mean || mean.getKind() != ReduceKind::Mean || !mean.getKeepdims())
    return nullptr;
  SmallVector<int64_t> axes = mean.getNormalizedAxes();
  llvm::sort(axes);
  const int64_t rank = mean.getInput().getType().getRank();
  for (auto [i, a] : llvm::enumerate(axes))
    if (a != rank - static_cast<int64_t>(axes.size() - i))
      return nullptr;
  if (axes.empty())
    return nullptr;
  axis = axes.front();
  Value square = mean.getInput();
  if (BinaryOp pow = binaryOf(square, BinaryKind::Pow))
    return splatOf(pow.getRhs()) == 2.0 ? pow.getLhs() : Value();
  if (BinaryOp mul = binaryOf(square, BinaryKind::Mul))
    return mul.getLhs() == mul.getRhs() ? mul.getLhs() : Value();
  return nullptr;
}

/// If `v` is mean(x^2) + eps, returns x and sets `axis` and `eps`.
Value varianceOf(Value v, int64_t &axis, double &eps) {
  BinaryOp add = binaryOf(v, BinaryKind::Add);
  if (!add)
    return nullptr;
  for (auto [variance, epsilon] : operandOrders(add)) {
    std::optional<double> e = splatOf(epsilon);
    if (!e || *e < 0)
      continue;
    if (Value x = meanSquareOf(variance, axis)) {
      eps = *e;
      return x;
    }
  }
  return nullptr;
}

/// If `v` is rsqrt(mean(x^2) + eps) in one of its spellings, returns x.
Value rsqrtOfVariance(Value v, int64_t &axis, double &eps) {
  if (UnaryOp rsqrt = unaryOf(v, UnaryKind::Rsqrt))
    return varianceOf(rsqrt.getInput(), axis, eps);
  UnaryOp sqrt;
  if (UnaryOp reciprocal = unaryOf(v, UnaryKind::Reciprocal))
    sqrt = unaryOf(reciprocal.getInput(), UnaryKind::Sqrt);
  else if (BinaryOp div = binaryOf(v, BinaryKind::Div); div && splatOf(div.getLhs()) == 1.0)
    sqrt = unaryOf(div.getRhs(), UnaryKind::Sqrt);
  return sqrt ? varianceOf(sqrt.getInput(), axis, eps) : Value();
}

/// If `v` is x * rsqrt(mean(x^2) + eps) or x / sqrt(mean(x^2) + eps), returns x.
Value rmsNormalized(Value v, int64_t &axis, double &eps) {
  if (BinaryOp mul = binaryOf(v, BinaryKind::Mul)) {
    for (auto [x, r] : operandOrders(mul))
      if (rsqrtOfVariance(r, axis, eps) == x)
        return x;
    return nullptr;
  }
  BinaryOp div = binaryOf(v, BinaryKind::Div);
  UnaryOp sqrt = div ? unaryOf(div.getRhs(), UnaryKind::Sqrt) : UnaryOp();
  return sqrt && varianceOf(sqrt.getInput(), axis, eps) == div.getLhs() ? div.getLhs() : Value();
}

/// w * normalized(x), either order, into `ptrain.rms_norm x, w`.
struct RmsNormPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BinaryOp root, PatternRewriter &rewriter) const override {
    if (root.getKind() != BinaryKind::Mul)
      return failure();
    for (auto [scale, normalized] : operandOrders(root)) {
      int64_t axis = 0;
      double eps = 0;
      Value x = rmsNormalized(normalized, axis, eps);
      if (!x)
        continue;
      auto xType = cast<RankedTensorType>(x.getType());
      auto scaleType = RankedTensorType::get(xType.getShape().drop_front(axis), xType.getElementType());
      if (scale.getType() != scaleType || root.getType() != xType)
        return rewriter.notifyMatchFailure(root, "the scale is not x.shape[axis:]");
      // Counted from the end, as RMSNormalization-23's default axis = -1 imports.
      rewriter.replaceOpWithNewOp<RmsNormOp>(root, x, scale, rewriter.getI64IntegerAttr(axis - xType.getRank()),
                                             rewriter.getF64FloatAttr(eps));
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not w * x * rsqrt(mean(x^2) + eps)");
  }
};

/// Whether `concat` joins its inputs (of rank `rank`) along their last axis.
bool isLastAxis(ConcatOp concat, int64_t rank) {
  auto axis = static_cast<int64_t>(concat.getAxis());
  return axis == rank - 1 || axis == -1;
}

/// Whether `v` is the slice of x's last dimension [offset, offset + size) (all of every other dimension).
bool isLastDimSlice(Value v, Value x, int64_t offset, int64_t size) {
  auto slice = v.getDefiningOp<SliceOp>();
  if (!slice || slice.getInput() != x)
    return false;
  ArrayRef<int64_t> offsets = slice.getOffsets(), sizes = slice.getSizes();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    if (offsets[d] != 0 || sizes[d] != shape[d])
      return false;
  return offsets.back() == offset && sizes.back() == size;
}

/// Whether `v` is rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2]) on the last axis.
bool isRotateHalf(Value v, Value x) {
  auto concat = v.getDefiningOp<ConcatOp>();
  auto type = cast<RankedTensorType>(x.getType());
  const int64_t d = type.getShape().back(), rank = type.getRank();
  if (!concat || concat.getInputs().size() != 2 || d % 2 != 0 || !isLastAxis(concat, rank))
    return false;
  UnaryOp neg = unaryOf(concat.getInputs()[0], UnaryKind::Neg);
  return neg && isLastDimSlice(neg.getInput(), x, d / 2, d / 2) && isLastDimSlice(concat.getInputs()[1], x, 0, d / 2);
}

/// Whether `table` broadcasts against x [B, N, S, D] as a per-position table: [B or 1, 1, S, D].
bool isPositionTable(Value table, RankedTensorType x) {
  auto type = cast<RankedTensorType>(table.getType());
  ArrayRef<int64_t> shape = type.getShape(), xs = x.getShape();
  return type.getRank() == 4 && shape[1] == 1 && shape[2] == xs[2] && shape[3] == xs[3] &&
         (shape[0] == 1 || shape[0] == xs[0]);
}

/// If `table` (broadcasting against x [B, N, S, D]) is concat(c, c) on the last axis given a unit heads axis
/// by reshapes (its batch dimension B or 1), returns c; null otherwise.
Value halfTable(Value table, RankedTensorType x) {
  auto type = cast<RankedTensorType>(table.getType());
  if (!isPositionTable(table, x))
    return nullptr;
  while (auto reshape = table.getDefiningOp<ReshapeOp>())
    table = reshape.getInput();
  auto concat = table.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() != 2 || concat.getInputs()[0] != concat.getInputs()[1])
    return nullptr;
  Value half = concat.getInputs()[0];
  auto halfType = cast<RankedTensorType>(half.getType());
  const int64_t rank = halfType.getRank();
  if (!isLastAxis(concat, rank) || halfType.getNumElements() * 2 != type.getNumElements())
    return nullptr;
  return half;
}

/// If `table` (a per-position table for x, through reshapes) is a float constant whose two halves along the
/// last axis are equal bit for bit -- concat(c, c) folded by the importer, as the unfolded dynamo exports'
/// cos/sin computed from the inv_freq buffer are (docs/ImportONNX.md, "Cos and Sin") -- returns c's values
/// (the constant's shape with the last axis halved); null otherwise.
DenseElementsAttr constantHalfTable(Value table, RankedTensorType x) {
  if (!isPositionTable(table, x))
    return {};
  while (auto reshape = table.getDefiningOp<ReshapeOp>())
    table = reshape.getInput();
  DenseFPElementsAttr values;
  if (!matchPattern(table, m_Constant(&values)))
    return {};
  auto type = cast<RankedTensorType>(values.getType());
  const int64_t d = type.getShape().back();
  if (type.getRank() == 0 || d % 2 != 0)
    return {};
  SmallVector<APFloat> all = llvm::to_vector(values.getValues<APFloat>()), half;
  half.reserve(all.size() / 2);
  for (size_t row = 0; row < all.size(); row += d)
    for (int64_t j = 0; j < d / 2; ++j) {
      if (!all[row + j].bitwiseIsEqual(all[row + j + d / 2]))
        return {};
      half.push_back(all[row + j]);
    }
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = d / 2;
  return DenseElementsAttr::get(RankedTensorType::get(shape, type.getElementType()), half);
}

/// `half` (c of halfTable, of `table`'s batch size) as [B, S, D/2], the layout rotary_embedding takes:
/// reshaped, and broadcast over the batch when it has none. New ops go before `root`.
Value perPositionTable(Value half, Value table, RankedTensorType x, Operation *root, PatternRewriter &rewriter) {
  ArrayRef<int64_t> xs = x.getShape();
  Type element = cast<RankedTensorType>(half.getType()).getElementType();
  auto want = RankedTensorType::get({xs[0], xs[2], xs[3] / 2}, element);
  auto perBatch =
      RankedTensorType::get({cast<RankedTensorType>(table.getType()).getShape()[0], xs[2], xs[3] / 2}, element);
  rewriter.setInsertionPoint(root);
  if (half.getType() != perBatch)
    half = ReshapeOp::create(rewriter, root->getLoc(), perBatch, half);
  if (perBatch != want)
    half = BroadcastToOp::create(rewriter, root->getLoc(), want, half);
  return half;
}

/// x * C + rotate_half(x) * S (any operand orders) into `ptrain.rotary_embedding x, c, s`.
struct RotaryPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BinaryOp root, PatternRewriter &rewriter) const override {
    if (root.getKind() != BinaryKind::Add)
      return failure();
    for (auto [direct, rotated] : operandOrders(root)) {
      BinaryOp byCos = binaryOf(direct, BinaryKind::Mul), bySin = binaryOf(rotated, BinaryKind::Mul);
      if (!byCos || !bySin)
        continue;
      for (auto [x, cos] : operandOrders(byCos))
        for (auto [half, sin] : operandOrders(bySin)) {
          auto xType = dyn_cast<RankedTensorType>(x.getType());
          if (!xType || xType.getRank() != 4 || root.getType() != xType || !isRotateHalf(half, x))
            continue;
          Value c = halfTable(cos, xType), s = halfTable(sin, xType);
          DenseElementsAttr cValues = c ? DenseElementsAttr() : constantHalfTable(cos, xType);
          DenseElementsAttr sValues = s ? DenseElementsAttr() : constantHalfTable(sin, xType);
          if ((!c && !cValues) || (!s && !sValues))
            return rewriter.notifyMatchFailure(root, "cos or sin is not concat(c, c) with a unit heads axis");
          rewriter.setInsertionPoint(root);
          if (!c)
            c = arith::ConstantOp::create(rewriter, root->getLoc(), cast<TypedAttr>(cValues));
          if (!s)
            s = arith::ConstantOp::create(rewriter, root->getLoc(), cast<TypedAttr>(sValues));
          c = perPositionTable(c, cos, xType, root, rewriter);
          s = perPositionTable(s, sin, xType, root, rewriter);
          rewriter.replaceOpWithNewOp<RotaryEmbeddingOp>(root, x, c, s);
          return success();
        }
    }
    return rewriter.notifyMatchFailure(root, "not x * cos + rotate_half(x) * sin");
  }
};

} // namespace

LogicalResult mlir::ptrain::raiseTransformerOps(func::FuncOp fn, int64_t &rmsNorms, int64_t &rotaries) {
  RewritePatternSet patterns(fn.getContext());
  patterns.add<RmsNormPattern, RotaryPattern>(fn.getContext());
  auto count = [&](int64_t sign) {
    fn.walk([&](Operation *op) {
      rmsNorms += sign * isa<RmsNormOp>(op);
      rotaries += sign * isa<RotaryEmbeddingOp>(op);
    });
  };
  rmsNorms = rotaries = 0;
  count(-1);
  if (failed(applyPatternsGreedily(fn, std::move(patterns))))
    return mlir::emitError(fn.getLoc(),
                           "--ptrain-raise: folding decomposed RMSNorm and rotary embeddings did not converge");
  count(1);
  // A rotate-half form left over had tables the rotation cannot be read from: an error, not a silent fallback.
  WalkResult left = fn.walk([&](ConcatOp concat) {
    auto slice = concat.getInputs().size() == 2 ? concat.getInputs()[1].getDefiningOp<SliceOp>() : SliceOp();
    if (!slice || !isRotateHalf(concat.getResult(), slice.getInput()))
      return WalkResult::advance();
    emitNodeError(concat, "--ptrain-raise")
        << ("a rotate-half rotary embedding x * cos + rotate_half(x) * sin whose cos or sin is not concat(c, c) "
            "on the last axis with a unit heads axis (or whose x is not [batch, heads, sequence, head_dim])");
    return WalkResult::interrupt();
  });
  return failure(left.wasInterrupted());
}
