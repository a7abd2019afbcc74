//===- RecognizeRmsNorm.cpp - decomposed RMS norm to ptrain.rms_norm -*- C++ -*-===//
//
// Hugging Face's LlamaRMSNorm (Zhang & Sennrich, NeurIPS 2019, eq. 4) computes, in PyTorch,
//   xf = x.to(float32); var = xf.pow(2).mean(-1, keepdim=True); n = xf * torch.rsqrt(var + eps)
//   y = weight * n.to(x.dtype)
// which the exporters write as Cast, Pow (or Mul), ReduceMean, Add, Sqrt, Reciprocal (or Div), Mul, Cast,
// Mul, the casts absent for a float32 model. Recognizing it gives the training step one op with one
// gradient rule, and the tensor-parallel raise and the stage split the op they know.
//
//===----------------------------------------------------------------------===//

#include "RecognizeRmsNorm.h"

#include "RecognizeMatchers.h"

#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

/// `v` without a float-to-float ptrain.cast in front of it.
static Value stripFloatCast(Value v) {
  auto cast = v ? v.getDefiningOp<CastOp>() : CastOp();
  if (cast && isa<FloatType>(cast.getInput().getType().getElementType()) &&
      isa<FloatType>(cast.getResult().getType().getElementType()))
    return cast.getInput();
  return v;
}

namespace {

/// mul(scale, [cast](xf / sqrt(mean(xf^2) + eps))), commutative operands in either order.
struct RmsNormPattern : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BinaryOp root, PatternRewriter &rewriter) const override {
    if (root.getKind() != BinaryKind::Mul)
      return rewriter.notifyMatchFailure(root, "not a multiplication");
    for (auto [scale, normalizedOut] : bothOrders(root)) {
      Value normalized = stripFloatCast(normalizedOut);
      Value xf;
      double eps = 0;
      Value meanSquare = matchPlusEpsilon(matchOverSqrt(normalized, xf), eps);
      int64_t axis = 0;
      ReduceOp meanOp = trailingMean(meanSquare, axis);
      if (!meanOp || !isSquareOf(meanOp.getInput(), xf))
        continue;
      // A centered input is a layer norm (RecognizeLayerNorm.cpp), not an RMS norm.
      int64_t centerAxis = 0;
      if (BinaryOp sub = binaryOf(xf, BinaryKind::Sub); sub && trailingMean(sub.getRhs(), centerAxis))
        continue;
      auto xfType = cast<RankedTensorType>(xf.getType());
      auto rootType = cast<RankedTensorType>(root.getType());
      auto scaleType = dyn_cast<RankedTensorType>(scale.getType());
      if (!scaleType || scaleType.getShape() != xfType.getShape().drop_front(axis) ||
          rootType.getShape() != xfType.getShape())
        return rewriter.notifyMatchFailure(root, "the scale is not x.shape[axis:]");
      Location loc = root.getLoc();
      Value scaleF = scale;
      if (scaleType.getElementType() != xfType.getElementType())
        scaleF = CastOp::create(rewriter, loc, scaleType.clone(xfType.getElementType()), scale);
      // The axis counted from the end, as RMSNormalization-23 and --ptrain-raise write it.
      Value y = RmsNormOp::create(rewriter, loc, xf, scaleF, rewriter.getI64IntegerAttr(axis - xfType.getRank()),
                                  rewriter.getF64FloatAttr(eps));
      if (rootType.getElementType() != xfType.getElementType())
        y = CastOp::create(rewriter, loc, rootType, y);
      rewriter.replaceOp(root, y);
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not scale * x / sqrt(mean(x^2) + eps)");
  }
};

} // namespace

void mlir::ptrain::onnx_import::populateRecognizeRmsNormPatterns(RewritePatternSet &patterns) {
  patterns.add<RmsNormPattern>(patterns.getContext());
}
