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
#include "mlir/IR/Matchers.h"

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

/// True when `v` is a float constant whose every element is `expected`.
static bool isSplatConstant(Value v, double expected) {
  DenseFPElementsAttr attr;
  return matchPattern(v, m_Constant(&attr)) && attr.isSplat() &&
         attr.getSplatValue<APFloat>().convertToDouble() == expected;
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
  return arith::ConstantOp::create(b, loc,
                                   DenseElementsAttr::get(tensor, b.getFloatAttr(tensor.getElementType(), 0.0)));
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
  case BinaryKind::Pow: {
    // d(a^p)/da = p a^(p-1): for p = 2 that is 2a (no pow built), for p = 1 it is 1. d(a^p)/dp = a^p ln(a)
    // (real for a > 0), built only when p is not a constant: the exporters' exponents are constants.
    Type elt = getResult().getType().getElementType();
    if (isSplatConstant(rhs, 2.0)) {
      dl = binary(b, loc, BinaryKind::Mul, dy, binary(b, loc, BinaryKind::Mul, lhs, scalar(b, loc, elt, 2.0)));
    } else if (isSplatConstant(rhs, 1.0)) {
      dl = dy;
    } else {
      Value lower = binary(b, loc, BinaryKind::Pow, lhs, binary(b, loc, BinaryKind::Sub, rhs, scalar(b, loc, elt, 1.0)));
      dl = binary(b, loc, BinaryKind::Mul, dy, binary(b, loc, BinaryKind::Mul, rhs, lower));
    }
    if (!matchPattern(rhs, m_Constant())) {
      Value logBase = UnaryOp::create(b, loc, UnaryKind::Log, lhs);
      dr = binary(b, loc, BinaryKind::Mul, dy, binary(b, loc, BinaryKind::Mul, getResult(), logBase));
    }
    break;
  }
  default:
    return emitOpError() << "has no gradient rule for '" << stringifyBinaryKind(getKind()) << "'";
  }
  operandGrads.push_back(sumTo(b, loc, dl, lhs.getType()));
  if (!dr) {
    operandGrads.push_back(nullptr);
    return success();
  }
  operandGrads.push_back(sumTo(b, loc, dr, rhs.getType()));
  return success();
}

LogicalResult UnaryOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads, SmallVectorImpl<Value> &operandGrads) {
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
                binary(b, loc, BinaryKind::Mul,
                       binary(b, loc, BinaryKind::Mul, y, binary(b, loc, BinaryKind::Mul, y, y)),
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
  if (getAccumulate())
    return emitOpError() << "has no gradient rule with accumulate = " << *getAccumulate()
                         << ": differentiate the fp32 step, then place the casts (--ptrain-build-training-step "
                            "precision=bf16)";
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
  auto grad = LayerNormGradOp::create(b, getLoc(), getInput().getType(), getScale().getType(), biasType, resultGrads[0],
                                      getInput(), getScale(), getAxisAttr(), getEpsilonAttr());
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

LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GeluGradOp::create(b, getLoc(), resultGrads[0], getInput(), getApproximateAttr()));
  return success();
}

LogicalResult DropoutOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  // The mask is a function of (seed, counter, global index): the same op (with its ptrain.dropout_layout) on
  // dy applies the same mask and scale.
  Operation *same = b.clone(*getOperation());
  same->setOperand(0, resultGrads[0]);
  operandGrads.push_back(same->getResult(0));
  operandGrads.push_back(nullptr);
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

LogicalResult SplitOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads, SmallVectorImpl<Value> &operandGrads) {
  SmallVector<Value> pieces;
  for (auto [grad, result] : llvm::zip(resultGrads, getResults()))
    pieces.push_back(grad ? grad : zeros(b, getLoc(), result.getType()));
  operandGrads.push_back(ConcatOp::create(b, getLoc(), pieces, getAxisAttr()));
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads, SmallVectorImpl<Value> &operandGrads) {
  auto type = getInput().getType();
  SmallVector<int64_t> high;
  for (int64_t d = 0; d < type.getRank(); ++d)
    high.push_back(type.getDimSize(d) - getOffsets()[d] - getSizes()[d]);
  operandGrads.push_back(
      PadOp::create(b, getLoc(), type, resultGrads[0], getOffsetsAttr(), b.getDenseI64ArrayAttr(high)));
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
  operandGrads.push_back(CrossEntropyGradOp::create(b, getLoc(), getLogits().getType(), resultGrads[0], getLogits(),
                                                    getLabels(), getWeight(), getIgnoreIndexAttr(),
                                                    getReductionAttr()));
  operandGrads.push_back(nullptr); // labels
  if (getWeight())
    operandGrads.push_back(nullptr); // the class weights are data, not trained
  return success();
}

LogicalResult CompareOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  // Piecewise constant: no gradient reaches either operand.
  operandGrads.append({nullptr, nullptr});
  return success();
}

LogicalResult SelectOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0];
  operandGrads.push_back(nullptr);
  if (!isa<FloatType>(getResult().getType().getElementType())) {
    operandGrads.append({nullptr, nullptr});
    return success();
  }
  Value zero = scalar(b, loc, getResult().getType().getElementType(), 0.0);
  // dy flows to lhs where the condition holds and to rhs elsewhere.
  Value dl = SelectOp::create(b, loc, getCondition(), dy, zero);
  Value dr = SelectOp::create(b, loc, getCondition(), zero, dy);
  operandGrads.push_back(sumTo(b, loc, dl, getLhs().getType()));
  operandGrads.push_back(sumTo(b, loc, dr, getRhs().getType()));
  return success();
}

LogicalResult ReduceOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  RankedTensorType inType = getInput().getType();
  if (!isa<FloatType>(inType.getElementType())) {
    operandGrads.push_back(nullptr);
    return success();
  }
  // dy with the reduced dimensions kept as 1, broadcast back to the input.
  SmallVector<int64_t> axes = getNormalizedAxes(), kept;
  int64_t count = 1;
  for (int64_t d = 0; d < inType.getRank(); ++d) {
    bool reduced = llvm::is_contained(axes, d);
    kept.push_back(reduced ? 1 : inType.getDimSize(d));
    if (reduced)
      count *= inType.getDimSize(d);
  }
  Value dy = resultGrads[0];
  if (cast<RankedTensorType>(dy.getType()).getShape() != ArrayRef<int64_t>(kept))
    dy = ReshapeOp::create(b, loc, inType.clone(kept), dy);
  if (getKind() == ReduceKind::Max) {
    // dy split evenly among the elements equal to the maximum (PyTorch's amax; ONNX ReduceMin is imported
    // as -max(-x) and so gets amin's rule).
    Value y = getResult();
    if (cast<RankedTensorType>(y.getType()).getShape() != ArrayRef<int64_t>(kept))
      y = ReshapeOp::create(b, loc, inType.clone(kept), y);
    Value hits = CastOp::create(b, loc, inType, CompareOp::create(b, loc, CompareKind::Eq, getInput(), y));
    Value ties = ReduceOp::create(b, loc, ReduceKind::Sum, hits, ArrayRef<int64_t>(axes), true);
    operandGrads.push_back(binary(b, loc, BinaryKind::Mul, hits, binary(b, loc, BinaryKind::Div, dy, ties)));
    return success();
  }
  if (getKind() == ReduceKind::Mean)
    dy =
        binary(b, loc, BinaryKind::Mul, dy, scalar(b, loc, inType.getElementType(), 1.0 / std::max<int64_t>(count, 1)));
  operandGrads.push_back(BroadcastToOp::create(b, loc, inType, dy));
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads, SmallVectorImpl<Value> &operandGrads) {
  bool floatIn = isa<FloatType>(getInput().getType().getElementType());
  bool floatOut = isa<FloatType>(getResult().getType().getElementType());
  // Through an integer or i1 side no gradient flows.
  operandGrads.push_back(floatIn && floatOut ? CastOp::create(b, getLoc(), getInput().getType(), resultGrads[0])
                                             : Value());
  return success();
}

LogicalResult BroadcastToOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                            SmallVectorImpl<Value> &operandGrads) {
  if (!isa<FloatType>(getInput().getType().getElementType())) {
    operandGrads.push_back(nullptr);
    return success();
  }
  operandGrads.push_back(sumTo(b, getLoc(), resultGrads[0], getInput().getType()));
  return success();
}

LogicalResult GatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  if (!isa<FloatType>(getData().getType().getElementType())) {
    operandGrads.append({nullptr, nullptr});
    return success();
  }
  return emitOpError() << "has no gradient rule (only the embedding form, ptrain.embedding, has one)";
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0];
  // y = x - logsumexp(x): dx = dy - softmax(x) * sum(dy, axis) with softmax(x) = exp(y).
  Value sum = ReduceOp::create(b, loc, ReduceKind::Sum, dy, ArrayRef<int64_t>{getAxisAttr().getInt()},
                               /*keepdims=*/true);
  Value probs = UnaryOp::create(b, loc, UnaryKind::Exp, getResult());
  operandGrads.push_back(binary(b, loc, BinaryKind::Sub, dy, binary(b, loc, BinaryKind::Mul, probs, sum)));
  return success();
}
