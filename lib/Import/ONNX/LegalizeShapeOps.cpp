//===- LegalizeShapeOps.cpp - ONNX shape ops to model ops ---------*- C++ -*-===//
//
// Unsqueeze and Squeeze (axes as an attribute before opset 13, as a constant input from 13) and Flatten
// become ptrain.reshape; Concat becomes ptrain.concat; Slice-10 with constant starts/ends/axes/steps becomes
// ptrain.slice (unit steps) and ptrain.gather of constant indices (other steps, negative ones included). Each pattern
// computes the result shape from the ONNX operator definition (https://onnx.ai/onnx/operators/) and checks it against
// the type ONNX shape inference gave.
//
//===----------------------------------------------------------------------===//

#include "LegalizePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

namespace {

/// The node's `axes`, from the attribute (`fromInput` false) or the constant input #1; `present` is false
/// when neither is given.
FailureOr<SmallVector<int64_t>> axesOf(OnnxNodeOp node, bool fromInput, bool &present) {
  present = true;
  if (fromInput) {
    if (node.getInputs().size() < 2) {
      present = false;
      return SmallVector<int64_t>();
    }
    return constantInts(node, 1, "the axes");
  }
  if (auto attr = node.getOnnxAttrs().getAs<DenseI64ArrayAttr>("axes"))
    return SmallVector<int64_t>(attr.asArrayRef());
  present = false;
  return SmallVector<int64_t>();
}

/// Normalizes each axis into [0, rank) and rejects duplicates; `what` names where the axes came from.
LogicalResult normalizeAxes(OnnxNodeOp node, SmallVectorImpl<int64_t> &axes, int64_t rank, StringRef what) {
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t &axis : axes) {
    int64_t given = axis;
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return nodeError(node) << what << " has axis " << given << ", out of range for rank " << rank;
    if (!seen.insert(axis).second)
      return nodeError(node) << what << " repeats axis " << given;
  }
  return success();
}

StringRef axesName(bool fromInput) { return fromInput ? "input 'axes'" : "attribute 'axes'"; }

/// A reshape of the input to `shape` after checking it against ONNX's inferred type.
LogicalResult reshapeTo(OnnxNodeOp node, ArrayRef<int64_t> shape, IRRewriter &rewriter) {
  auto resultType = cast<RankedTensorType>(node.getInputs()[0].getType()).clone(shape);
  if (!matchesONNXType(resultType, node->getResultTypes().front()))
    return nodeError(node) << "the axes give " << resultType << " but ONNX inferred " << node->getResultTypes().front();
  return replaceChecked(node, ReshapeOp::create(rewriter, node.getLoc(), resultType, node.getInputs()[0]), rewriter);
}

/// Unsqueeze-1/11 (`axes` attribute) and -13 (`axes` input): inserts size-1 dimensions at `axes`, which
/// index the output (rank + number of axes).
template <bool axesAsInput> LogicalResult legalizeUnsqueeze(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, axesAsInput ? 2 : 1, axesAsInput ? 2 : 1)))
    return failure();
  bool present;
  FailureOr<SmallVector<int64_t>> axes = axesOf(node, axesAsInput, present);
  if (failed(axes))
    return failure();
  if (!present)
    return nodeError(node) << axesName(axesAsInput) << " is required";
  auto inType = cast<RankedTensorType>(node.getInputs()[0].getType());
  int64_t outRank = inType.getRank() + static_cast<int64_t>(axes->size());
  if (failed(normalizeAxes(node, *axes, outRank, axesName(axesAsInput))))
    return failure();
  SmallVector<int64_t> shape;
  auto inDims = inType.getShape();
  for (int64_t i = 0, next = 0; i < outRank; ++i)
    shape.push_back(llvm::is_contained(*axes, i) ? 1 : inDims[next++]);
  return reshapeTo(node, shape, rewriter);
}

/// Squeeze-1/11 (`axes` attribute) and -13 (optional `axes` input): removes the size-1 dimensions at
/// `axes`, or every size-1 dimension without axes.
template <bool axesAsInput> LogicalResult legalizeSqueeze(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, axesAsInput ? 2 : 1)))
    return failure();
  bool present;
  FailureOr<SmallVector<int64_t>> axes = axesOf(node, axesAsInput, present);
  if (failed(axes))
    return failure();
  auto inType = cast<RankedTensorType>(node.getInputs()[0].getType());
  if (failed(normalizeAxes(node, *axes, inType.getRank(), axesName(axesAsInput))))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(inType.getShape())) {
    bool listed = llvm::is_contained(*axes, static_cast<int64_t>(i));
    if (listed && d != 1)
      return nodeError(node) << axesName(axesAsInput) << " names dimension " << i << " of size " << d
                             << "; only size 1 squeezes";
    if (listed || (!present && d == 1))
      continue;
    shape.push_back(d);
  }
  return reshapeTo(node, shape, rewriter);
}

/// Flatten-1/9/11/13: [d0 .. d(axis-1), d(axis) .. d(r-1)] -> [d0 * .. * d(axis-1), d(axis) * .. * d(r-1)];
/// `axis` (default 1) in [-r, r] from opset 11 (negative counts from the end), [0, r] before; an empty
/// product is 1, so axis 0 gives [1, all].
LogicalResult legalizeFlatten(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  auto inType = cast<RankedTensorType>(node.getInputs()[0].getType());
  int64_t rank = inType.getRank();
  int64_t axis = 1;
  if (auto attr = node.getOnnxAttrs().getAs<IntegerAttr>("axis"))
    axis = attr.getInt();
  int64_t given = axis;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return attrError(node, "axis") << "is " << given << ", out of range for rank " << rank;
  int64_t outer = 1, inner = 1;
  for (auto [i, d] : llvm::enumerate(inType.getShape()))
    (static_cast<int64_t>(i) < axis ? outer : inner) *= d;
  return reshapeTo(node, {outer, inner}, rewriter);
}

/// Concat-4/11/13: along `axis` (required; negative from opset 11).
LogicalResult legalizeConcat(OnnxNodeOp node, IRRewriter &rewriter) {
  if (node.getInputs().empty())
    return nodeError(node) << "expects at least 1 input, got 0";
  auto axis = node.getOnnxAttrs().getAs<IntegerAttr>("axis");
  if (!axis)
    return attrError(node, "axis") << "is required";
  return replaceWith<ConcatOp>(node, rewriter, node.getInputs(), axis);
}

/// Slice-10/11/13: starts, ends and optional axes and steps as constant inputs; steps must be 1. Per the
/// ONNX spec a negative start or end counts from the end of the dimension (adds the dimension), and both
/// are then clamped to [0, dim]; an empty range gives size 0.
LogicalResult legalizeSlice(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 3, 5)))
    return failure();
  auto inType = cast<RankedTensorType>(node.getInputs()[0].getType());
  int64_t rank = inType.getRank();
  FailureOr<SmallVector<int64_t>> starts = constantInts(node, 1, "the starts");
  if (failed(starts))
    return failure();
  FailureOr<SmallVector<int64_t>> ends = constantInts(node, 2, "the ends");
  if (failed(ends))
    return failure();
  SmallVector<int64_t> axes;
  if (node.getInputs().size() > 3) {
    FailureOr<SmallVector<int64_t>> given = constantInts(node, 3, "the axes");
    if (failed(given))
      return failure();
    axes = *given;
  } else {
    for (int64_t i = 0, e = starts->size(); i < e; ++i)
      axes.push_back(i);
  }
  if (ends->size() != starts->size() || axes.size() != starts->size())
    return nodeError(node) << "starts, ends and axes have " << starts->size() << ", " << ends->size() << " and "
                           << axes.size() << " entries; they must agree";
  if (failed(normalizeAxes(node, axes, rank, "input 'axes'")))
    return failure();
  SmallVector<int64_t> steps(starts->size(), 1);
  if (node.getInputs().size() > 4) {
    FailureOr<SmallVector<int64_t>> given = constantInts(node, 4, "the steps");
    if (failed(given))
      return failure();
    if (given->size() != starts->size())
      return nodeError(node) << "steps has " << given->size() << " entries, starts has " << starts->size();
    steps = *given;
  }
  // Unit-step axes become one ptrain.slice; every other axis a ptrain.gather of the constant indices
  // start, start + step, ... (ONNX clamping: [0, dim] for positive steps, start in [0, dim - 1] and end in
  // [-1, dim - 1] for negative ones).
  SmallVector<int64_t> offsets(rank, 0), sizes(inType.getShape());
  SmallVector<std::pair<int64_t, SmallVector<int64_t>>> strided;
  for (auto [axis, start, end, step] : llvm::zip(axes, *starts, *ends, steps)) {
    int64_t dim = inType.getDimSize(axis);
    if (step == 0)
      return nodeError(node) << "input 'steps' is 0 on axis " << axis;
    auto wrap = [dim](int64_t index) { return index < 0 ? index + dim : index; };
    if (step == 1) {
      int64_t first = std::clamp<int64_t>(wrap(start), 0, dim), last = std::clamp<int64_t>(wrap(end), 0, dim);
      offsets[axis] = first;
      sizes[axis] = std::max<int64_t>(0, last - first);
      continue;
    }
    if (dim == 0) {
      strided.push_back({axis, {}});
      continue;
    }
    int64_t first = step > 0 ? std::clamp<int64_t>(wrap(start), 0, dim) : std::clamp<int64_t>(wrap(start), 0, dim - 1);
    int64_t last = step > 0 ? std::clamp<int64_t>(wrap(end), 0, dim) : std::clamp<int64_t>(wrap(end), -1, dim - 1);
    SmallVector<int64_t> indices;
    for (int64_t i = first; step > 0 ? i < last : i > last; i += step)
      indices.push_back(i);
    strided.push_back({axis, indices});
  }
  if (strided.empty())
    return replaceWith<SliceOp>(node, rewriter, node.getInputs()[0], rewriter.getDenseI64ArrayAttr(offsets),
                                rewriter.getDenseI64ArrayAttr(sizes));
  Value result = node.getInputs()[0];
  if (llvm::any_of(llvm::zip(offsets, sizes, inType.getShape()),
                   [](auto t) { return std::get<0>(t) != 0 || std::get<1>(t) != std::get<2>(t); }))
    result = buildChecked<SliceOp>(node, rewriter, inType.clone(sizes), result, rewriter.getDenseI64ArrayAttr(offsets),
                                   rewriter.getDenseI64ArrayAttr(sizes));
  for (auto &[axis, indices] : strided) {
    if (!result)
      return failure();
    auto indexType = RankedTensorType::get({static_cast<int64_t>(indices.size())}, rewriter.getI64Type());
    Value constant = arith::ConstantOp::create(rewriter, node.getLoc(),
                                               DenseElementsAttr::get(indexType, ArrayRef<int64_t>(indices)));
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = static_cast<int64_t>(indices.size());
    result =
        buildChecked<GatherOp>(node, rewriter, type.clone(shape), result, constant, rewriter.getI64IntegerAttr(axis));
  }
  if (!result)
    return failure();
  return replaceFirstOutput(node, result, rewriter);
}

} // namespace

void onnx_import::populateShapePatterns(PatternTable &t) {
  t.onOp("Unsqueeze", 1, legalizeUnsqueeze</*axesAsInput=*/false>);
  t.onOp("Unsqueeze", 13, legalizeUnsqueeze</*axesAsInput=*/true>);
  t.onOp("Squeeze", 1, legalizeSqueeze</*axesAsInput=*/false>);
  t.onOp("Squeeze", 13, legalizeSqueeze</*axesAsInput=*/true>);
  t.onOp("Flatten", 1, legalizeFlatten);
  t.onOp("Concat", 4, legalizeConcat);
  t.onOp("Slice", 10, legalizeSlice);
}
