//===- MixedPrecision.cpp - 16-bit casts of a built training step -------===//
//
// placeHalfGemmCasts (include/ptrain/Transforms/MixedPrecision.h): the bf16 or f16 GEMMs with fp32 accumulation
// of `--ptrain-build-training-step="precision=bf16|fp16"` (docs/MixedPrecision.md); placeHalfTensorParallelSums:
// the 16-bit tp all-reduces with an fp32 sum of `--ptrain-lower-to-runtime`.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/MixedPrecision.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

Value mlir::ptrain::castOnce(Value value, Type elementType, Operation *user) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  for (Operation *other : value.getUsers())
    if (auto existing = dyn_cast<CastOp>(other); existing && existing->getBlock() == user->getBlock() &&
                                                 existing->isBeforeInBlock(user) &&
                                                 existing.getType().getElementType() == elementType)
      return existing.getResult();
  Block *block = value.getParentBlock();
  OpBuilder b(value.getContext());
  if (Operation *def = value.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(block);
  return CastOp::create(b, value.getLoc(), type.clone(elementType), value);
}

int64_t mlir::ptrain::placeHalfGemmCasts(func::FuncOp func, FloatType half) {
  SmallVector<MatmulOp> gemms;
  func.walk([&](MatmulOp m) {
    if (!m.getAccumulate() && m.getLhs().getType().getElementType().isF32())
      gemms.push_back(m);
  });
  Type f32 = Float32Type::get(func.getContext());
  for (MatmulOp m : gemms) {
    Value lhs = castOnce(m.getLhs(), half, m), rhs = castOnce(m.getRhs(), half, m);
    OpBuilder b(m);
    auto mixed = MatmulOp::create(b, m.getLoc(), lhs, rhs, TypeAttr::get(f32));
    mixed->setDiscardableAttrs(m->getDiscardableAttrDictionary());
    m.getResult().replaceAllUsesWith(mixed.getResult());
    m.erase();
  }
  return static_cast<int64_t>(gemms.size());
}

int64_t mlir::ptrain::placeHalfTensorParallelSums(ModuleOp module, FloatType half) {
  SmallVector<TPAllReduceOp> sums;
  module.walk([&](TPAllReduceOp op) {
    if (isHalfTensorParallelSum(op))
      sums.push_back(op);
  });
  Type f32 = Float32Type::get(module.getContext());
  for (TPAllReduceOp op : sums) {
    OpBuilder b(op);
    auto type = cast<RankedTensorType>(op.getType());
    Value narrow = CastOp::create(b, op.getLoc(), type.clone(half), op.getInput());
    auto sum = TPAllReduceOp::create(b, op.getLoc(), narrow.getType(), narrow, op.getGrid(), op.getAxis(),
                                     TypeAttr::get(f32));
    sum->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    Value wide = CastOp::create(b, op.getLoc(), type, sum.getResult());
    op.getResult().replaceAllUsesWith(wide);
    op.erase();
  }
  return static_cast<int64_t>(sums.size());
}
