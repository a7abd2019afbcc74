//===- PTrainModelOps.cpp - tensor-level model ops ---------------*- C++ -*-===//
//
// Shape inference and verifiers of the model ops. Inference failures are reported at the op's location, so
// they read as verifier errors naming the op and the shapes.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainCrossEntropy.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainModelOps.cpp.inc"

/// Formats a shape as 4x64x128 for messages.
static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

/// Normalizes `axis` in [-rank, rank) to [0, rank); std::nullopt when out of range.
static std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto table = cast<RankedTensorType>(adaptor.getTable().getType());
  auto ids = cast<RankedTensorType>(adaptor.getIds().getType());
  // (C1)
  if (table.getRank() != 2)
    return emitOptionalError(loc, "'ptrain.embedding' op table must be 2-D (V x H), got ", table);
  // (C3)
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// BinaryOp
//===----------------------------------------------------------------------===//

LogicalResult BinaryOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  // (C1)
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "'ptrain.binary' op operands must have the same element type, got ", lhs,
                             " and ", rhs);
  // (C2), (C3)
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(lhs.getShape(), rhs.getShape(), shape))
    return emitOptionalError(loc, "'ptrain.binary' op shapes ", shapeString(lhs.getShape()), " and ",
                             shapeString(rhs.getShape()), " do not broadcast");
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//



LogicalResult SoftmaxOp::verify() {
  // (C1)
  int64_t rank = getInput().getType().getRank();
  int64_t axis = getAxisAttr().getInt();
  if (!normalizeAxis(axis, rank))
    return emitOpError() << "axis " << axis << " is out of range for rank " << rank;
  return success();
}


//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  // (C1)
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "'ptrain.matmul' op operands must have rank >= 2, got ", lhs, " and ", rhs);
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "'ptrain.matmul' op operands must have the same element type, got ", lhs,
                             " and ", rhs);
  // (C2)
  int64_t k = lhs.getShape().back(), k2 = rhs.getShape()[rhs.getRank() - 2];
  if (k != k2)
    return emitOptionalError(loc, "'ptrain.matmul' op contracted dimensions differ: ",
                             shapeString(lhs.getShape()), " x ", shapeString(rhs.getShape()));
  // (C3)
  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(lhs.getShape().drop_back(2), rhs.getShape().drop_back(2), batch))
    return emitOptionalError(loc, "'ptrain.matmul' op batch dimensions of ", shapeString(lhs.getShape()),
                             " and ", shapeString(rhs.getShape()), " do not broadcast");
  // (C5)
  Type element = lhs.getElementType();
  // The custom parser infers before the attribute dictionary becomes properties: read it from there too.
  TypeAttr accumulate = adaptor.getAccumulateAttr();
  if (!accumulate)
    if (DictionaryAttr attrs = adaptor.getAttributes())
      accumulate = attrs.getAs<TypeAttr>("accumulate");
  if (accumulate) {
    if (!accumulate.getValue().isF32())
      return emitOptionalError(loc, "'ptrain.matmul' op accumulate must be f32, got ", accumulate.getValue());
    if (!element.isBF16() && !element.isF16())
      return emitOptionalError(loc, "'ptrain.matmul' op accumulate = f32 needs 16-bit operands (bf16 or f16), got ",
                               lhs, " and ", rhs);
    element = accumulate.getValue();
  }
  // (C4)
  batch.push_back(lhs.getShape()[lhs.getRank() - 2]);
  batch.push_back(rhs.getShape().back());
  inferred.push_back(RankedTensorType::get(batch, element));
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto type = getInput().getType();
  // (C1)
  std::optional<int64_t> axis = normalizeAxis(getAxisAttr().getInt(), type.getRank());
  if (!axis)
    return emitOpError() << "axis " << getAxisAttr().getInt() << " is out of range for rank "
                         << type.getRank();
  // (C2)
  auto expected = RankedTensorType::get(type.getShape().drop_front(*axis), type.getElementType());
  if (getScale().getType() != expected)
    return emitOpError() << "scale must be " << expected << " (the input's dimensions from axis " << *axis
                         << "), got " << getScale().getType();
  if (getBias() && getBias().getType() != expected)
    return emitOpError() << "bias must be " << expected << " (the input's dimensions from axis " << *axis
                         << "), got " << getBias().getType();
  // (C3)
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError() << "epsilon must be > 0, got " << getEpsilon().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  // (C1)
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return emitOpError() << "needs static shapes, got " << in << " -> " << out;
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "must keep the element type, got " << in << " -> " << out;
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "must keep the element count: " << in << " has " << in.getNumElements() << ", "
                         << out << " has " << out.getNumElements();
  return success();
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  // (C1)
  SmallVector<bool> seen(type.getRank(), false);
  bool valid = static_cast<int64_t>(perm.size()) == type.getRank();
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= type.getRank() || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid) {
    std::string permText;
    llvm::raw_string_ostream os(permText);
    llvm::interleaveComma(perm, os);
    return emitOptionalError(loc, "'ptrain.transpose' op perm [", permText, "] is not a permutation of the ",
                             type.getRank(), " dimensions of ", type);
  }
  // (C2)
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  inferred.push_back(type.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

LogicalResult SplitOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  // (C1)
  int64_t axisValue = adaptor.getAxisAttr().getInt();
  std::optional<int64_t> axis = normalizeAxis(axisValue, type.getRank());
  if (!axis)
    return emitOptionalError(loc, "'ptrain.split' op axis ", axisValue, " is out of range for rank ",
                             type.getRank());
  // (C2)
  int64_t total = 0;
  for (int64_t size : adaptor.getSizes()) {
    if (size < 0)
      return emitOptionalError(loc, "'ptrain.split' op sizes must be >= 0, got ", size);
    total += size;
  }
  if (total != type.getDimSize(*axis))
    return emitOptionalError(loc, "'ptrain.split' op sizes add up to ", total, " but dimension ", *axis,
                             " of ", type, " is ", type.getDimSize(*axis));
  // (C3)
  for (int64_t size : adaptor.getSizes()) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = size;
    inferred.push_back(type.clone(shape));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  auto logits = cast<RankedTensorType>(adaptor.getLogits().getType());
  auto labels = cast<RankedTensorType>(adaptor.getLabels().getType());
  // (C1)
  if (logits.getRank() < 1 || logits.getShape().drop_back() != labels.getShape())
    return emitOptionalError(loc, "'ptrain.cross_entropy' op labels ", labels,
                             " must have the logits' shape without the class dimension, got logits ", logits);
  // (C3)
  inferred.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

LogicalResult mlir::ptrain::verifyCrossEntropyOptions(Operation *op, RankedTensorType logits, RankedTensorType labels,
                                                      Value weight, std::optional<int64_t> ignoreIndex,
                                                      std::optional<StringRef> reduction) {
  // (C4)
  if (weight) {
    auto type = cast<RankedTensorType>(weight.getType());
    if (logits.getRank() < 1 || type.getRank() != 1 || type.getDimSize(0) != logits.getShape().back() ||
        type.getElementType() != logits.getElementType())
      return op->emitOpError() << "weight must be [C] of the logits' element type for logits " << logits << ", got "
                               << type;
  }
  // (C5)
  if (reduction && *reduction != "mean" && *reduction != "sum")
    return op->emitOpError() << "reduction must be \"mean\" or \"sum\", got \"" << *reduction << "\"";
  // (C6)
  if (ignoreIndex) {
    unsigned width = labels.getElementType().getIntOrFloatBitWidth();
    if (width < 64 && !llvm::isIntN(width, *ignoreIndex))
      return op->emitOpError() << "ignore_index " << *ignoreIndex << " does not fit the labels' type "
                               << labels.getElementType();
  }
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  return verifyCrossEntropyOptions(*this, getLogits().getType(), getLabels().getType(), getWeight(), getIgnoreIndex(),
                                   getReduction());
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> offsets = adaptor.getOffsets(), sizes = adaptor.getSizes();
  // (C1)
  if (static_cast<int64_t>(offsets.size()) != type.getRank() || static_cast<int64_t>(sizes.size()) != type.getRank())
    return emitOptionalError(loc, "'ptrain.slice' op needs one offset and one size per dimension of ", type);
  // (C2)
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (offsets[d] < 0 || sizes[d] < 0 || offsets[d] + sizes[d] > type.getDimSize(d))
      return emitOptionalError(loc, "'ptrain.slice' op slice [", offsets[d], ", ", offsets[d] + sizes[d],
                               ") of dimension ", d, " is out of bounds for ", type);
  // (C3)
  inferred.push_back(type.clone(sizes));
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  // (C1)
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "'ptrain.concat' op needs at least one input");
  auto first = cast<RankedTensorType>(adaptor.getInputs().front().getType());
  // (C2)
  int64_t axisValue = adaptor.getAxisAttr().getInt();
  std::optional<int64_t> axis = normalizeAxis(axisValue, first.getRank());
  if (!axis)
    return emitOptionalError(loc, "'ptrain.concat' op axis ", axisValue, " is out of range for rank ",
                             first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value input : adaptor.getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    // (C1), (C3)
    if (type.getRank() != first.getRank() || type.getElementType() != first.getElementType())
      return emitOptionalError(loc, "'ptrain.concat' op inputs must have one rank and element type, got ", first,
                               " and ", type);
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != *axis && type.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, "'ptrain.concat' op inputs differ in dimension ", d, ": ", first, " and ",
                                 type);
    shape[*axis] += type.getDimSize(*axis);
  }
  inferred.push_back(first.clone(shape));
  return success();
}
