//===- LegalizeSelectionOps.cpp - ONNX masks, casts, gathers, generators -*- C++ -*-===//
//
// Comparisons and logical ops become ptrain.compare (i1 masks; ONNX BOOL is i1), Where becomes
// ptrain.select, Cast and CastLike ptrain.cast, Expand ptrain.broadcast_to, Gather ptrain.embedding (axis 0 of a
// 2-D float table) or ptrain.gather, GatherND with constant indices ptrain.gather on the flattened data. Shape, Range
// and ConstantOfShape become constants (shapes are static after --bind); Trilu becomes a select with a constant
// triangular mask. Semantics from the ONNX operator definitions (https://onnx.ai/onnx/operators/); constant operands
// fold afterwards (foldConstantOps).
//
//===----------------------------------------------------------------------===//

#include "LegalizePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

namespace {

/// The element type ONNX gave result `i`, or `fallback` when ONNX inferred none.
Type resultElementType(OnnxNodeOp node, unsigned i = 0, Type fallback = {}) {
  auto type = dyn_cast<TensorType>(node->getResultTypes()[i]);
  return type ? type.getElementType() : fallback;
}

/// Equal-11/13/19, Less/Greater-9/13, LessOrEqual/GreaterOrEqual-12/16, And/Or/Xor-7.
template <CompareKind kind> LogicalResult legalizeCompare(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  return replaceWith<CompareOp>(node, rewriter, kind, node.getInputs()[0], node.getInputs()[1]);
}

/// Not-1: xor with a true splat.
LogicalResult legalizeNot(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  Value x = node.getInputs()[0];
  if (!cast<RankedTensorType>(x.getType()).getElementType().isInteger(1))
    return nodeError(node) << "expects a BOOL input, got " << x.getType();
  Value trueSplat = arith::ConstantOp::create(
      rewriter, node.getLoc(), DenseElementsAttr::get(RankedTensorType::get({}, rewriter.getI1Type()), true));
  return replaceWith<CompareOp>(node, rewriter, CompareKind::Xor, x, trueSplat);
}

/// Where-9/16: condition ? X : Y with multidirectional broadcasting.
LogicalResult legalizeWhere(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 3, 3)))
    return failure();
  return replaceWith<SelectOp>(node, rewriter, node.getInputs()[0], node.getInputs()[1], node.getInputs()[2]);
}

/// Cast-6/9/13: to the element type ONNX inferred from `to`; a same-type cast is the identity.
LogicalResult legalizeCast(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
  Type to = resultElementType(node);
  if (!to)
    return nodeError(node) << "ONNX shape inference gave the result no element type";
  if (type.getElementType() == to)
    return replaceFirstOutput(node, x, rewriter);
  auto op = CastOp::create(rewriter, node.getLoc(), type.clone(to), x);
  return replaceChecked(node, op, rewriter);
}

/// Expand-8/13: broadcast to the shape ONNX inferred (the input's and the `shape` input's broadcast).
LogicalResult legalizeExpand(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  Value x = node.getInputs()[0];
  FailureOr<SmallVector<int64_t>> shape = constantInts(node, 1, "the shape");
  if (failed(shape))
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> broadcast;
  if (!OpTrait::util::getBroadcastedShape(type.getShape(), *shape, broadcast))
    return nodeError(node) << "the input " << type << " does not broadcast with the shape input";
  if (ArrayRef<int64_t>(broadcast) == type.getShape())
    return replaceFirstOutput(node, x, rewriter);
  auto op = BroadcastToOp::create(rewriter, node.getLoc(), type.clone(broadcast), x);
  return replaceChecked(node, op, rewriter);
}

/// Gather-1/11/13: axis 0 of a 2-D float table is an embedding lookup (the op with a training rule);
/// everything else, including index arithmetic on shapes, is ptrain.gather.
LogicalResult legalizeGather(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  Value data = node.getInputs()[0], indices = node.getInputs()[1];
  auto dataType = cast<RankedTensorType>(data.getType());
  int64_t axis = intAttr(node, "axis", 0);
  if (axis < -dataType.getRank() || axis >= dataType.getRank())
    return attrError(node, "axis") << "is " << axis << ", out of range for rank " << dataType.getRank();
  if ((axis == 0 || axis == -2) && dataType.getRank() == 2 && isa<FloatType>(dataType.getElementType()) &&
      !matchPattern(data, m_Constant()))
    return replaceWith<EmbeddingOp>(node, rewriter, data, indices);
  return replaceWith<GatherOp>(node, rewriter, data, indices, rewriter.getI64IntegerAttr(axis));
}

/// CastLike-15/19: Cast to the element type of the second input.
LogicalResult legalizeCastLike(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
  Type to = cast<RankedTensorType>(node.getInputs()[1].getType()).getElementType();
  if (type.getElementType() == to)
    return replaceFirstOutput(node, x, rewriter);
  auto op = CastOp::create(rewriter, node.getLoc(), type.clone(to), x);
  return replaceChecked(node, op, rewriter);
}

/// GatherND-11/12/13 with constant indices and batch_dims 0 (the newest exporters index masks with it):
/// data reshaped to [d0 * ... * d(q-1), d(q)...], the index tuples turned into flat constant indices, then
/// ptrain.gather on axis 0, giving indices.shape[:-1] + data.shape[q:].
LogicalResult legalizeGatherND(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  if (intAttr(node, "batch_dims", 0) != 0)
    return attrError(node, "batch_dims") << "is " << intAttr(node, "batch_dims", 0) << "; only 0 is supported";
  Value data = node.getInputs()[0];
  auto dataType = cast<RankedTensorType>(data.getType());
  auto indicesType = cast<RankedTensorType>(node.getInputs()[1].getType());
  FailureOr<SmallVector<int64_t>> indices = constantInts(node, 1, "the indices");
  if (failed(indices))
    return failure();
  int64_t q = indicesType.getRank() ? indicesType.getShape().back() : 0;
  if (indicesType.getRank() == 0 || q < 1 || q > dataType.getRank())
    return nodeError(node) << "the indices " << indicesType << " must end in a dimension of 1 to the rank of the data "
                           << dataType;
  int64_t outer = 1;
  for (int64_t d = 0; d < q; ++d)
    outer *= dataType.getDimSize(d);
  SmallVector<int64_t> flatShape = {outer}, outShape(indicesType.getShape().drop_back());
  for (int64_t d = q; d < dataType.getRank(); ++d)
    flatShape.push_back(dataType.getDimSize(d));
  SmallVector<int64_t> flat;
  for (size_t t = 0; t < indices->size(); t += q) {
    int64_t index = 0;
    for (int64_t d = 0; d < q; ++d) {
      int64_t i = (*indices)[t + d], size = dataType.getDimSize(d);
      if (i < -size || i >= size)
        return nodeError(node) << "index " << i << " is out of range for dimension " << d << " of " << dataType;
      index = index * size + (i < 0 ? i + size : i);
    }
    flat.push_back(index);
  }
  Location loc = node.getLoc();
  Value flatData = data;
  if (ArrayRef<int64_t>(flatShape) != dataType.getShape())
    flatData = ReshapeOp::create(rewriter, loc, dataType.clone(flatShape), data);
  auto idxType = RankedTensorType::get(outShape, rewriter.getI64Type());
  Value idx = arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(idxType, ArrayRef<int64_t>(flat)));
  Value gathered = buildChecked<GatherOp>(node, rewriter, flatData, idx, rewriter.getI64IntegerAttr(0));
  if (!gathered)
    return failure();
  return replaceFirstOutput(node, gathered, rewriter);
}

/// Shape-1/13/15: the (static) shape of the input as an i64 constant, sliced by `start`/`end` from 15.
LogicalResult legalizeShape(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  auto type = cast<RankedTensorType>(node.getInputs()[0].getType());
  int64_t rank = type.getRank();
  auto clampIndex = [rank](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
  int64_t start = clampIndex(intAttr(node, "start", 0)), end = clampIndex(intAttr(node, "end", rank));
  SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(type.getDimSize(d));
  auto attr = DenseElementsAttr::get(RankedTensorType::get({static_cast<int64_t>(dims.size())}, rewriter.getI64Type()),
                                     ArrayRef<int64_t>(dims));
  if (!matchesONNXType(attr.getType(), node->getResultTypes().front()))
    return nodeError(node) << "the shape has type " << attr.getType() << " but ONNX inferred "
                           << node->getResultTypes().front();
  rewriter.replaceOp(node, arith::ConstantOp::create(rewriter, node.getLoc(), attr)->getResults());
  return success();
}

/// Size-1/13: the number of elements of the (static) input, a rank-0 i64 constant.
LogicalResult legalizeSize(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  auto type = cast<RankedTensorType>(node.getInputs()[0].getType());
  auto attr = DenseElementsAttr::get(RankedTensorType::get({}, rewriter.getI64Type()), type.getNumElements());
  if (!matchesONNXType(attr.getType(), node->getResultTypes().front()))
    return nodeError(node) << "the size has type " << attr.getType() << " but ONNX inferred "
                           << node->getResultTypes().front();
  rewriter.replaceOp(node, arith::ConstantOp::create(rewriter, node.getLoc(), attr)->getResults());
  return success();
}

/// The value of a rank-0 (or one-element) constant input as a double.
FailureOr<double> constantScalar(OnnxNodeOp node, unsigned index, StringRef what) {
  DenseElementsAttr attr;
  if (!matchPattern(node.getInputs()[index], m_Constant(&attr))) {
    explainNotConstant(nodeError(node) << what << " (input #" << index << ") must be a one-element constant",
                       node.getInputs()[index]);
    return failure();
  }
  if (attr.getNumElements() != 1) {
    nodeError(node) << what << " (input #" << index << ") must be a one-element constant";
    return failure();
  }
  if (isa<FloatType>(attr.getElementType()))
    return (*attr.getValues<APFloat>().begin()).convertToDouble();
  return static_cast<double>((*attr.getValues<APInt>().begin()).getSExtValue());
}

/// Range-11: start, start + delta, ... below `limit` (above it for a negative delta); constant inputs only.
LogicalResult legalizeRange(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 3, 3)))
    return failure();
  FailureOr<double> start = constantScalar(node, 0, "start"), limit = constantScalar(node, 1, "limit"),
                    delta = constantScalar(node, 2, "delta");
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  if (*delta == 0)
    return nodeError(node) << "delta is 0";
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((*limit - *start) / *delta)));
  Type elt = resultElementType(node, 0, cast<TensorType>(node.getInputs()[0].getType()).getElementType());
  auto type = RankedTensorType::get({count}, elt);
  if (!matchesONNXType(type, node->getResultTypes().front()))
    return nodeError(node) << "the range has " << count << " elements but ONNX inferred "
                           << node->getResultTypes().front();
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < count; ++i) {
    double v = *start + i * *delta;
    values.push_back(isa<FloatType>(elt) ? Attribute(rewriter.getFloatAttr(elt, v))
                                         : Attribute(rewriter.getIntegerAttr(elt, static_cast<int64_t>(v))));
  }
  rewriter.replaceOp(
      node, arith::ConstantOp::create(rewriter, node.getLoc(), DenseElementsAttr::get(type, values))->getResults());
  return success();
}

/// ConstantOfShape-9: a splat of `value` (default float 0) of the constant shape input.
LogicalResult legalizeConstantOfShape(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = constantInts(node, 0, "the shape");
  if (failed(shape))
    return failure();
  auto given = node.getOnnxAttrs().getAs<DenseElementsAttr>("value");
  auto type = RankedTensorType::get(
      *shape, resultElementType(node, 0, given ? given.getElementType() : Type(rewriter.getF32Type())));
  if (!matchesONNXType(type, node->getResultTypes().front()))
    return nodeError(node) << "the shape input gives " << type << " but ONNX inferred "
                           << node->getResultTypes().front();
  Attribute element;
  if (auto value = node.getOnnxAttrs().getAs<DenseElementsAttr>("value")) {
    if (value.getNumElements() != 1)
      return attrError(node, "value") << "must hold one element, got " << value.getType();
    element = value.getValues<Attribute>()[0];
  } else {
    element = rewriter.getFloatAttr(rewriter.getF32Type(), 0.0);
  }
  auto typed = dyn_cast<TypedAttr>(element);
  if (!typed || typed.getType() != type.getElementType())
    return attrError(node, "value") << "has element type " << (typed ? typed.getType() : Type())
                                    << " but ONNX inferred " << type;
  rewriter.replaceOp(
      node, arith::ConstantOp::create(rewriter, node.getLoc(), DenseElementsAttr::get(type, element))->getResults());
  return success();
}

/// Trilu-14: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dimensions, zeroing
/// the rest: a select with a constant i1 mask. `k` must be constant.
LogicalResult legalizeTrilu(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 2)))
    return failure();
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 2)
    return nodeError(node) << "the input must have rank >= 2, got " << type;
  int64_t k = 0;
  if (node.getInputs().size() > 1) {
    FailureOr<double> given = constantScalar(node, 1, "k");
    if (failed(given))
      return failure();
    k = static_cast<int64_t>(*given);
  }
  bool upper = intAttr(node, "upper", 1) != 0;
  int64_t rows = type.getDimSize(type.getRank() - 2), cols = type.getDimSize(type.getRank() - 1);
  SmallVector<bool> mask;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.push_back(upper ? j - i >= k : j - i <= k);
  Value maskValue = arith::ConstantOp::create(
      rewriter, node.getLoc(),
      DenseElementsAttr::get(RankedTensorType::get({rows, cols}, rewriter.getI1Type()), ArrayRef<bool>(mask)));
  Value zero = scalarConstant(rewriter, node.getLoc(), type.getElementType(), 0.0);
  return replaceWith<SelectOp>(node, rewriter, maskValue, x, zero);
}

} // namespace

void onnx_import::populateSelectionPatterns(PatternTable &t) {
  t.onOp("Equal", 7, legalizeCompare<CompareKind::Eq>);
  t.onOp("Less", 7, legalizeCompare<CompareKind::Lt>);
  t.onOp("LessOrEqual", 12, legalizeCompare<CompareKind::Le>);
  t.onOp("Greater", 7, legalizeCompare<CompareKind::Gt>);
  t.onOp("GreaterOrEqual", 12, legalizeCompare<CompareKind::Ge>);
  t.onOp("And", 7, legalizeCompare<CompareKind::And>);
  t.onOp("Or", 7, legalizeCompare<CompareKind::Or>);
  t.onOp("Xor", 7, legalizeCompare<CompareKind::Xor>);
  t.onOp("Not", 1, legalizeNot);
  t.onOp("Where", 9, legalizeWhere);
  t.onOp("Cast", 6, legalizeCast);
  t.onOp("Expand", 8, legalizeExpand);
  t.onOp("Gather", 1, legalizeGather);
  t.onOp("CastLike", 15, legalizeCastLike);
  t.onOp("GatherND", 11, legalizeGatherND);
  t.onOp("Shape", 1, legalizeShape);
  t.onOp("Size", 1, legalizeSize);
  t.onOp("Range", 11, legalizeRange);
  t.onOp("ConstantOfShape", 9, legalizeConstantOfShape);
  t.onOp("Trilu", 14, legalizeTrilu);
}
