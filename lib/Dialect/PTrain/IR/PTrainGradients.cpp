//===- PTrainGradients.cpp - gradient rules of the model ops -----*- C++ -*-===//
//
// GradientOpInterface for every model op: the vector-Jacobian product written with model ops and the
// gradient ops of PTrainGradientOps.td. Broadcast operands get their gradient summed back to their shape
// (`ptrain.sum_to`). Formulas: standard calculus; GELU, layer norm, softmax and cross-entropy as in their
// op descriptions.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;

/// `grad` summed down to `type` when broadcasting made it larger.
static Value sumTo(OpBuilder &b, Location loc, Value grad, Type type) {
  if (grad.getType() == type)
    return grad;
  return SumToOp::create(b, loc, type, grad);
}

/// A rank-0 constant of `elt` that broadcasts against any tensor.
static Value scalar(OpBuilder &b, Location loc, Type elt, double value) {
  auto type = RankedTensorType::get({}, elt);
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elt, value)));
}

static Value binary(OpBuilder &b, Location loc, BinaryKind kind, Value lhs, Value rhs) {
  return BinaryOp::create(b, loc, kind, lhs, rhs);
}

/// `x` with its last two dimensions swapped.
static Value transposeLast2(OpBuilder &b, Location loc, Value x) {
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr(perm));
}

static Value zeros(OpBuilder &b, Location loc, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(tensor, b.getFloatAttr(tensor.getElementType(), 0.0)));
}

LogicalResult EmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(EmbeddingGradOp::create(b, getLoc(), getTable().getType(), resultGrads[0], getIds()));
  operandGrads.push_back(nullptr);
  return success();
}

LogicalResult BinaryOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0], lhs = getLhs(), rhs = getRhs();
  if (!isa<FloatType>(getResult().getType().getElementType())) {
    operandGrads.append({nullptr, nullptr});
    return success();
  }
  Value dl, dr;
  switch (getKind()) {
  case BinaryKind::Add:
    dl = dy;
    dr = dy;
    break;
  case BinaryKind::Sub:
    dl = dy;
    dr = UnaryOp::create(b, loc, UnaryKind::Neg, dy);
    break;
  case BinaryKind::Mul:
    dl = binary(b, loc, BinaryKind::Mul, dy, rhs);
    dr = binary(b, loc, BinaryKind::Mul, dy, lhs);
    break;
  case BinaryKind::Div: {
    // d(a/b)/da = 1/b; d(a/b)/db = -a/b^2 = -(a/b)/b.
    dl = binary(b, loc, BinaryKind::Div, dy, rhs);
    Value quotient = binary(b, loc, BinaryKind::Div, getResult(), rhs);
    dr = UnaryOp::create(b, loc, UnaryKind::Neg, binary(b, loc, BinaryKind::Mul, dy, quotient));
    break;
  }
  default:
    return emitOpError() << "has no gradient rule for '" << stringifyBinaryKind(getKind()) << "'";
  }
  operandGrads.push_back(sumTo(b, loc, dl, lhs.getType()));
  operandGrads.push_back(sumTo(b, loc, dr, rhs.getType()));
  return success();
}

LogicalResult UnaryOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0], x = getInput(), y = getResult();
  Type elt = getResult().getType().getElementType();
  Value dx;
  switch (getKind()) {
  case UnaryKind::Neg:
    dx = UnaryOp::create(b, loc, UnaryKind::Neg, dy);
    break;
  case UnaryKind::Exp:
    dx = binary(b, loc, BinaryKind::Mul, dy, y);
    break;
  case UnaryKind::Log:
    dx = binary(b, loc, BinaryKind::Div, dy, x);
    break;
  case UnaryKind::Sqrt:
    // 1 / (2 sqrt(x)) = 0.5 / y.
    dx = binary(b, loc, BinaryKind::Mul, binary(b, loc, BinaryKind::Div, dy, y), scalar(b, loc, elt, 0.5));
    break;
  case UnaryKind::Rsqrt:
    // d x^-1/2 = -1/2 x^-3/2 = -1/2 y^3.
    dx = binary(b, loc, BinaryKind::Mul, dy,
                binary(b, loc, BinaryKind::Mul, binary(b, loc, BinaryKind::Mul, y, binary(b, loc, BinaryKind::Mul, y, y)),
                       scalar(b, loc, elt, -0.5)));
    break;
  case UnaryKind::Reciprocal:
    dx = UnaryOp::create(b, loc, UnaryKind::Neg,
                         binary(b, loc, BinaryKind::Mul, dy, binary(b, loc, BinaryKind::Mul, y, y)));
    break;
  case UnaryKind::Erf: {
    // erf'(x) = 2 / sqrt(pi) exp(-x^2).
    Value negSquare = UnaryOp::create(b, loc, UnaryKind::Neg, binary(b, loc, BinaryKind::Mul, x, x));
    dx = binary(b, loc, BinaryKind::Mul, dy,
                binary(b, loc, BinaryKind::Mul, UnaryOp::create(b, loc, UnaryKind::Exp, negSquare),
                       scalar(b, loc, elt, 2.0 / std::sqrt(M_PI))));
    break;
  }
  case UnaryKind::Tanh:
    // 1 - tanh^2.
    dx = binary(b, loc, BinaryKind::Mul, dy,
                binary(b, loc, BinaryKind::Sub, scalar(b, loc, elt, 1.0), binary(b, loc, BinaryKind::Mul, y, y)));
    break;
  default:
    return emitOpError() << "has no gradient rule for '" << stringifyUnaryKind(getKind()) << "'";
  }
  operandGrads.push_back(dx);
  return success();
}

LogicalResult MatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0];
  // C = A B: dA = dC B^T, dB = A^T dC, each summed over broadcast batch dimensions.
  Value da = MatmulOp::create(b, loc, dy, transposeLast2(b, loc, getRhs()));
  Value db = MatmulOp::create(b, loc, transposeLast2(b, loc, getLhs()), dy);
  operandGrads.push_back(sumTo(b, loc, da, getLhs().getType()));
  operandGrads.push_back(sumTo(b, loc, db, getRhs().getType()));
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  Type biasType = getBias() ? getBias().getType() : Type();
  auto grad = LayerNormGradOp::create(b, getLoc(), getInput().getType(), getScale().getType(), biasType,
                                      resultGrads[0], getInput(), getScale(), getAxisAttr(), getEpsilonAttr());
  operandGrads.push_back(grad.getInputGrad());
  operandGrads.push_back(grad.getScaleGrad());
  if (getBias())
    operandGrads.push_back(grad.getBiasGrad());
  return success();
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SoftmaxGradOp::create(b, getLoc(), resultGrads[0], getResult(), getAxisAttr()));
  return success();
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GeluGradOp::create(b, getLoc(), resultGrads[0], getInput(), getApproximateAttr()));
  return success();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ReshapeOp::create(b, getLoc(), getInput().getType(), resultGrads[0]));
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  SmallVector<int64_t> inverse(getPerm().size());
  for (auto [i, p] : llvm::enumerate(getPerm()))
    inverse[p] = i;
  operandGrads.push_back(TransposeOp::create(b, getLoc(), resultGrads[0], b.getDenseI64ArrayAttr(inverse)));
  return success();
}

LogicalResult SplitOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  SmallVector<Value> pieces;
  for (auto [grad, result] : llvm::zip(resultGrads, getResults()))
    pieces.push_back(grad ? grad : zeros(b, getLoc(), result.getType()));
  operandGrads.push_back(ConcatOp::create(b, getLoc(), pieces, getAxisAttr()));
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  auto type = getInput().getType();
  SmallVector<int64_t> high;
  for (int64_t d = 0; d < type.getRank(); ++d)
    high.push_back(type.getDimSize(d) - getOffsets()[d] - getSizes()[d]);
  operandGrads.push_back(PadOp::create(b, getLoc(), type, resultGrads[0], getOffsetsAttr(),
                                       b.getDenseI64ArrayAttr(high)));
  return success();
}

LogicalResult ConcatOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  auto resultType = getResult().getType();
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0)
    axis += resultType.getRank();
  int64_t offset = 0;
  for (Value input : getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> offsets(type.getRank(), 0);
    offsets[axis] = offset;
    operandGrads.push_back(SliceOp::create(b, getLoc(), resultGrads[0], b.getDenseI64ArrayAttr(offsets),
                                           b.getDenseI64ArrayAttr(type.getShape())));
    offset += type.getDimSize(axis);
  }
  return success();
}

LogicalResult CrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                             SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(CrossEntropyGradOp::create(b, getLoc(), resultGrads[0], getLogits(), getLabels()));
  operandGrads.push_back(nullptr);
  return success();
}
