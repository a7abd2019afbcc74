//===- MixedPrecision.cpp - 16-bit casts of a built training step -------===//
//
// placeHalfGemmCasts (include/ptrain/Transforms/MixedPrecision.h): the bf16 or f16 GEMMs with fp32 accumulation
// of `--ptrain-build-training-step="precision=bf16|fp16"` (docs/MixedPrecision.md); placeHalfActivationCasts:
// its 16-bit activations between the non-GEMM ops (slice 2 of "16-bit activations"); placeHalfTensorParallelSums:
// the 16-bit tp all-reduces with an fp32 sum of `--ptrain-lower-to-runtime`.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/MixedPrecision.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::ptrain;

/// Whether `value` is a constant or a parameter read seen through views (reshape, transpose, broadcast, cast):
/// a bias, a mask, a scale, not an activation.
static bool isParameterOrConstant(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<arith::ConstantOp, StateReadOp>(def))
      return true;
    if (!isa<ReshapeOp, TransposeOp, BroadcastToOp, CastOp>(def))
      return false;
    value = def->getOperand(0);
  }
  return false; // a block argument: the stage input (an activation) or a token batch
}

bool mlir::ptrain::isHalfActivation(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.getElementType().isF32())
    return false;
  if (isa<LayerNormOp, RmsNormOp, SoftmaxOp, GeluOp>(op))
    return true;
  auto add = dyn_cast<BinaryOp>(op);
  if (!add || add.getKind() != BinaryKind::Add)
    return false;
  // The bias add a GELU reads (bias-GELU), or a residual-stream add of two activations.
  if (llvm::any_of(add->getUsers(), [](Operation *user) { return isa<GeluOp>(user); }))
    return true;
  return !isParameterOrConstant(add.getLhs()) && !isParameterOrConstant(add.getRhs());
}

int64_t mlir::ptrain::placeHalfActivationCasts(func::FuncOp func, FloatType half,
                                               llvm::function_ref<bool(Operation *)> inForward) {
  SmallVector<Operation *> ops;
  // A value nothing reads (the recomputed stage output in a backward: only differentiated) is not stored.
  func.walk([&](Operation *op) {
    if (inForward(op) && isHalfActivation(op) && !op->use_empty())
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    Value wide = op->getResult(0);
    auto type = cast<RankedTensorType>(wide.getType());
    SmallVector<OpOperand *> uses = llvm::to_vector(llvm::map_range(wide.getUses(), [](OpOperand &u) { return &u; }));
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    Value narrow = CastOp::create(b, op->getLoc(), type.clone(half), wide);
    // One widening per reader, right before it: the 16-bit value is what stays live in between.
    llvm::DenseMap<Operation *, Value> widened;
    for (OpOperand *use : uses) {
      Operation *user = use->getOwner();
      Value &w = widened[user];
      if (!w) {
        b.setInsertionPoint(user);
        w = CastOp::create(b, user->getLoc(), type, narrow);
      }
      use->set(w);
    }
  }
  return static_cast<int64_t>(ops.size());
}

Value mlir::ptrain::castOnce(Value value, Type elementType, Operation *user) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  // A widened 16-bit activation (placeHalfActivationCasts): the round trip half -> f32 -> half is the identity.
  if (auto widen = value.getDefiningOp<CastOp>()) {
    Type from = cast<RankedTensorType>(widen.getInput().getType()).getElementType();
    if (from == elementType && isa<FloatType>(from) && type.getElementType().isF32() &&
        cast<FloatType>(from).getWidth() < 32)
      return widen.getInput();
  }
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
    // A widening (placeHalfActivationCasts) that only this GEMM read is dead now that it reads the 16-bit value.
    for (Value operand : {lhs, rhs})
      for (Operation *user : llvm::make_early_inc_range(operand.getUsers()))
        if (auto widen = dyn_cast<CastOp>(user); widen && widen->use_empty())
          widen.erase();
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
