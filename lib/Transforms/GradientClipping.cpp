//===- GradientClipping.cpp - global-norm gradient clipping ---------------===//
//
// See include/ptrain/Transforms/GradientClipping.h and docs/TrainingStep.md ("Global-norm clipping").
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/GradientClipping.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ptrain;

/// The f32 rank-0 sum of the squared norms of `grads` (0 when empty).
static Value sumOfSquares(OpBuilder &b, Location loc, ArrayRef<Value> grads, RankedTensorType scalar) {
  Value sum;
  for (Value g : grads) {
    Value sq = SumSquaresOp::create(b, loc, scalar, g);
    sum = sum ? Value(BinaryOp::create(b, loc, BinaryKind::Add, sum, sq)) : sq;
  }
  if (!sum)
    sum = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(scalar, b.getFloatAttr(b.getF32Type(), 0.0)));
  return sum;
}

Value mlir::ptrain::buildGlobalNormClipScale(OpBuilder &b, Location loc, const GlobalNormTerms &terms, int64_t tp,
                                             GridOp grid, ArrayRef<StringRef> axes, double maxNorm) {
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  Value total = sumOfSquares(b, loc, terms.owned, scalar);
  if (!terms.replicated.empty()) {
    Value replicated = sumOfSquares(b, loc, terms.replicated, scalar);
    if (tp > 1) {
      // 1 / tp is exact for a power of two, so a replicated parameter counts exactly once over the tp group.
      Value weight = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(scalar, b.getFloatAttr(b.getF32Type(), 1.0 / static_cast<double>(tp))));
      replicated = BinaryOp::create(b, loc, BinaryKind::Mul, replicated, weight);
    }
    total = BinaryOp::create(b, loc, BinaryKind::Add, total, replicated);
  }
  if (!axes.empty()) {
    auto start =
        AllReduceStartOp::create(b, loc, total, grid.getSymName(), b.getStrArrayAttr(axes), ReductionKind::Sum);
    start->setAttr(kGlobalNormAttr, b.getUnitAttr());
    total = WaitOp::create(b, loc, start.getRequest()).getResult();
  }
  return ClipScaleOp::create(b, loc, scalar, total, b.getF64FloatAttr(maxNorm));
}

Value mlir::ptrain::scaleGradient(OpBuilder &b, Location loc, Value grad, Value scale) {
  return BinaryOp::create(b, loc, BinaryKind::Mul, grad, scale);
}
