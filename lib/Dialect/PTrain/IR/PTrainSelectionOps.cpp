//===- PTrainSelectionOps.cpp - masks, selection, reductions, casts -*- C++ -*-===//
//
// Shape inference and verifiers of the model ops the ONNX importer needs beyond the transformer core:
// compare (i1 masks), select (ONNX Where), reduce, cast, broadcast_to (ONNX Expand), gather, log_softmax
// and dropout.
// The op classes are generated into PTrainModelOps.cpp; their semantics are in PTrainModelOps.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::ptrain;

/// Formats a shape as 4x64x128 for messages.
static std::string formatDims(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

//===----------------------------------------------------------------------===//
// CompareOp
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  // (C1)
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "'ptrain.compare' op operands must have the same element type, got ", lhs, " and ",
                             rhs);
  // (C2), (C3)
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(lhs.getShape(), rhs.getShape(), shape))
    return emitOptionalError(loc, "'ptrain.compare' op shapes ", formatDims(lhs.getShape()), " and ",
                             formatDims(rhs.getShape()), " do not broadcast");
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult CompareOp::verify() {
  // (C1) The kind is a property: checked here, not in inferReturnTypes, which the parser calls before
  // properties are set.
  CompareKind kind = getKind();
  bool logical = kind == CompareKind::And || kind == CompareKind::Or || kind == CompareKind::Xor;
  if (logical && !getLhs().getType().getElementType().isInteger(1))
    return emitOpError() << "'" << stringifyCompareKind(kind) << "' needs i1 operands, got " << getLhs().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// SelectOp
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto cond = cast<RankedTensorType>(adaptor.getCondition().getType());
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  // (C1)
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "'ptrain.select' op lhs and rhs must have the same element type, got ", lhs, " and ",
                             rhs);
  // (C2), (C3)
  SmallVector<int64_t> partial, shape;
  if (!OpTrait::util::getBroadcastedShape(cond.getShape(), lhs.getShape(), partial) ||
      !OpTrait::util::getBroadcastedShape(partial, rhs.getShape(), shape))
    return emitOptionalError(loc, "'ptrain.select' op shapes ", formatDims(cond.getShape()), ", ",
                             formatDims(lhs.getShape()), " and ", formatDims(rhs.getShape()), " do not broadcast");
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

/// Normalizes `axes` into [0, rank); fails on an axis out of range or repeated (C1).
static FailureOr<SmallVector<int64_t>> normalizeReduceAxes(ArrayRef<int64_t> axes, int64_t rank,
                                                           std::optional<Location> loc) {
  SmallVector<int64_t> result;
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      (void)emitOptionalError(loc, "'ptrain.reduce' op axis ", axis, " is out of range for rank ", rank);
      return failure();
    }
    int64_t normalized = axis < 0 ? axis + rank : axis;
    if (!seen.insert(normalized).second) {
      (void)emitOptionalError(loc, "'ptrain.reduce' op axis ", axis, " is repeated");
      return failure();
    }
    result.push_back(normalized);
  }
  return result;
}

SmallVector<int64_t> ReduceOp::getNormalizedAxes() {
  FailureOr<SmallVector<int64_t>> axes = normalizeReduceAxes(getAxes(), getInput().getType().getRank(), {});
  return succeeded(axes) ? *axes : SmallVector<int64_t>();
}

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  // (C1)
  FailureOr<SmallVector<int64_t>> axes = normalizeReduceAxes(adaptor.getAxes(), type.getRank(), loc);
  if (failed(axes))
    return failure();
  // (C2)
  bool keep = adaptor.getKeepdims();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool reduced = llvm::is_contained(*axes, d);
    if (reduced && type.getDimSize(d) == 0 && adaptor.getKind() == ReduceKind::Max)
      return emitOptionalError(loc, "'ptrain.reduce' op max over the zero-size dimension ", d, " of ", type,
                               " has no value");
    if (!reduced)
      shape.push_back(type.getDimSize(d));
    else if (keep)
      shape.push_back(1);
  }
  // (C3)
  inferred.push_back(type.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  // (C1)
  if (getInput().getType().getShape() != getResult().getType().getShape())
    return emitOpError() << "must keep the shape, got " << getInput().getType() << " -> " << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// BroadcastToOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastToOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  // (C1)
  SmallVector<int64_t> shape;
  if (in.getElementType() != out.getElementType() ||
      !OpTrait::util::getBroadcastedShape(out.getShape(), in.getShape(), shape) || ArrayRef(shape) != out.getShape())
    return emitOpError() << "input " << in << " does not broadcast to " << out;
  return success();
}

//===----------------------------------------------------------------------===//
// GatherOp
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxisAttr().getInt(), rank = data.getRank();
  // (C1)
  if (axis < -rank || axis >= rank)
    return emitOptionalError(loc, "'ptrain.gather' op axis ", axis, " is out of range for rank ", rank);
  if (axis < 0)
    axis += rank;
  // (C2)
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  inferred.push_back(data.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// LogSoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult LogSoftmaxOp::verify() {
  // (C1)
  int64_t rank = getInput().getType().getRank();
  int64_t axis = getAxisAttr().getInt();
  if (axis < -rank || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  // (C3)
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult DropoutOp::verify() {
  // (C1)
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError() << "ratio " << ratio << " is not in [0, 1)";
  // (C2)
  auto counter = cast<RankedTensorType>(getCounter().getType());
  if (counter.getRank() != 0 || !counter.getElementType().isSignlessInteger(64))
    return emitOpError() << "counter must be a rank-0 i64 tensor (the step counter), got " << counter;
  Attribute layoutAttr = (*this)->getAttr(kDropoutLayoutAttr);
  if (!layoutAttr)
    return success();
  // (C4) Its entries are the attribute's own (#ptrain.dropout_layout C1-C3).
  auto layout = dyn_cast<DropoutLayoutAttr>(layoutAttr);
  if (!layout)
    return emitOpError() << kDropoutLayoutAttr << " must be a #ptrain.dropout_layout, got " << layoutAttr;
  auto type = cast<RankedTensorType>(getInput().getType());
  // (C5)
  if (std::optional<int64_t> k = layout.getShardDim(); k && *k >= type.getRank())
    return emitOpError() << kDropoutLayoutAttr << ": shard_dim " << *k << " is not in [1, " << type.getRank() << ")";
  // (C6)
  if (std::optional<int64_t> rows = layout.getBatchRows();
      rows && (type.getRank() < 1 || type.getNumElements() % *rows != 0))
    return emitOpError() << kDropoutLayoutAttr << ": batch_rows " << *rows << " does not divide the input's "
                         << type.getNumElements() << " elements";
  return success();
}
