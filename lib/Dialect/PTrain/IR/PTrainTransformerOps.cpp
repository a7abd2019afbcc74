//===- PTrainTransformerOps.cpp - rms_norm and rotary_embedding ---*- C++ -*-===//
//
// Shape inference, verifiers, gradient rules and costs of the LLaMA-style model ops
// (PTrainTransformerOps.td). The gradient rules are written with model ops (binary, unary, reduce, sum_to
// and the op itself), so the interpreter, the autodiff and every later lowering see only ops they know.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.cpp.inc"

/// Elements of a static tensor type.
static double elementCount(Type type) { return static_cast<double>(cast<RankedTensorType>(type).getNumElements()); }

//===----------------------------------------------------------------------===//
// RmsNormOp
//===----------------------------------------------------------------------===//

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  // (C4)
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult RmsNormOp::verify() {
  RankedTensorType type = getInput().getType();
  int64_t rank = type.getRank(), axis = getAxisAttr().getInt();
  // (C1)
  if (axis < -rank || axis >= rank)
    return emitOpError() << "(C1) axis " << axis << " is out of range for rank " << rank;
  // (C2)
  auto expected = RankedTensorType::get(type.getShape().drop_front(getNormalizedAxis()), type.getElementType());
  if (getScale().getType() != expected)
    return emitOpError() << "(C2) scale must be " << expected << " (x.shape[axis:]), got " << getScale().getType();
  // (C3)
  if (!(getEpsilon().convertToDouble() >= 0.0))
    return emitOpError() << "(C3) epsilon must be >= 0, got " << getEpsilon().convertToDouble();
  return success();
}

LogicalResult RmsNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0], x = getInput(), scale = getScale();
  Type elt = getInput().getType().getElementType();
  auto mul = [&](Value l, Value r) { return BinaryOp::create(b, loc, BinaryKind::Mul, l, r).getResult(); };
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(getNormalizedAxis(), getInput().getType().getRank()));
  auto mean = [&](Value v) { return ReduceOp::create(b, loc, ReduceKind::Mean, v, ArrayRef<int64_t>(axes), true); };
  auto epsType = RankedTensorType::get({}, elt);
  Value eps = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(epsType, b.getFloatAttr(elt, getEpsilon().convertToDouble())));
  // r = 1 / sqrt(mean(x^2) + eps), n = x r (the forward's statistics, recomputed).
  Value r = UnaryOp::create(b, loc, UnaryKind::Rsqrt, BinaryOp::create(b, loc, BinaryKind::Add, mean(mul(x, x)), eps));
  Value n = mul(x, r);
  // g = dy scale; dx = r (g - n mean(g n)); dscale = sum over the leading dimensions of dy n.
  Value g = mul(dy, scale);
  Value dx = mul(r, BinaryOp::create(b, loc, BinaryKind::Sub, g, mul(n, mean(mul(g, n)))));
  Value dscale = SumToOp::create(b, loc, scale.getType(), mul(dy, n));
  operandGrads.append({dx, dscale});
  return success();
}

double RmsNormOp::getFlops() { return 5.0 * elementCount(getResult().getType()); }

//===----------------------------------------------------------------------===//
// RotaryEmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult RotaryEmbeddingOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                                  SmallVectorImpl<Type> &inferred) {
  // (C3)
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult RotaryEmbeddingOp::verify() {
  RankedTensorType x = getInput().getType();
  // (C1)
  if (x.getRank() != 4)
    return emitOpError() << "(C1) input must be [batch, heads, seq, head_size], got " << x;
  int64_t d = x.getDimSize(3), r = getRotatedChannels();
  // (C2)
  if (r <= 0 || r > d || r % 2 != 0)
    return emitOpError() << "(C2) rotary_dim " << getRotaryDim() << " gives " << r
                         << " rotated channels; they must be even and in (0, " << d << "]";
  // (C1)
  auto expected = RankedTensorType::get({x.getDimSize(0), x.getDimSize(2), r / 2}, x.getElementType());
  for (Value table : {getCos(), getSin()})
    if (table.getType() != expected)
      return emitOpError() << "(C1) cos and sin must be " << expected << " ([batch, seq, rotated/2]), got "
                           << table.getType();
  return success();
}

LogicalResult RotaryEmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                                SmallVectorImpl<Value> &operandGrads) {
  // The rotation by angle t is orthogonal; its transpose is the rotation by -t: cos(-t) = cos t,
  // sin(-t) = -sin t.
  Value negSin = UnaryOp::create(b, getLoc(), UnaryKind::Neg, getSin());
  Value dx = RotaryEmbeddingOp::create(b, getLoc(), resultGrads[0], getCos(), negSin, getInterleavedAttr(),
                                       getRotaryDimAttr());
  operandGrads.append({dx, nullptr, nullptr});
  return success();
}

double RotaryEmbeddingOp::getFlops() { return 3.0 * elementCount(getResult().getType()); }
