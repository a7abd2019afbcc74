//===- LegalizeReductions.cpp - ONNX reductions and softmax -*- C++ -*-===//
//
// ReduceSum (axes as attribute before opset 13, as an optional input from 13), ReduceMean and ReduceMax
// (axes as attribute in opsets 1-17, as an optional input from 18) become ptrain.reduce; ReduceMin becomes
// -max(-x), ReduceProd a tree of multiplications, ReduceL2 sqrt(sum(x * x)) (same opsets), GlobalAveragePool a mean over the spatial dimensions; Softmax and LogSoftmax (the
// 2-D coercion at `axis` before opset 13, one axis from 13) become ptrain.softmax / ptrain.log_softmax, with reshapes
// around them for the coercion (the losses are in LegalizeLosses.cpp). Semantics from the ONNX operator definitions
// (https://onnx.ai/onnx/operators/).
//
//===----------------------------------------------------------------------===//

#include "LegalizePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

namespace {

/// The axes of a reduction: from the attribute (`axesAsInput` false) or the optional constant input #1;
/// without axes every dimension. Sets `identity` when `noop_with_empty_axes` (the axes-as-input forms) makes
/// the node the identity.
template <bool axesAsInput>
FailureOr<SmallVector<int64_t>> reductionAxes(OnnxNodeOp node, RankedTensorType type, bool &identity) {
  identity = false;
  if (failed(expectArity(node, 1, axesAsInput ? 2 : 1)))
    return failure();
  SmallVector<int64_t> axes;
  bool present = false;
  if (axesAsInput && node.getInputs().size() > 1) {
    FailureOr<SmallVector<int64_t>> given = constantInts(node, 1, "the axes");
    if (failed(given))
      return failure();
    axes = *given;
    present = true;
  } else if (auto attr = node.getOnnxAttrs().getAs<DenseI64ArrayAttr>("axes")) {
    axes.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    present = true;
  }
  if (!present || axes.empty()) {
    if (axesAsInput && intAttr(node, "noop_with_empty_axes", 0) != 0) {
      identity = true;
      return axes;
    }
    axes.clear();
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
  }
  return axes;
}

/// `axes` in [0, rank), or failure with an error at the node (ptrain.reduce's verifier checks the others).
FailureOr<SmallVector<int64_t>> normalizedAxes(OnnxNodeOp node, ArrayRef<int64_t> axes, RankedTensorType type) {
  SmallVector<int64_t> normalized;
  for (int64_t axis : axes) {
    if (axis < -type.getRank() || axis >= type.getRank())
      return nodeError(node) << "reduce axis " << axis << " is out of range for " << type;
    normalized.push_back(axis < 0 ? axis + type.getRank() : axis);
  }
  return normalized;
}

/// ReduceSum/Mean/Max: one ptrain.reduce.
template <ReduceKind kind, bool axesAsInput> LogicalResult legalizeReduce(OnnxNodeOp node, IRRewriter &rewriter) {
  Value x = node.getInputs()[0];
  bool identity;
  FailureOr<SmallVector<int64_t>> axes =
      reductionAxes<axesAsInput>(node, cast<RankedTensorType>(x.getType()), identity);
  if (failed(axes))
    return failure();
  if (identity)
    return replaceFirstOutput(node, x, rewriter);
  bool keepdims = intAttr(node, "keepdims", 1) != 0;
  return replaceWith<ReduceOp>(node, rewriter, kind, x, ArrayRef<int64_t>(*axes), keepdims);
}

/// ReduceMin: -max(-x), exact in floats and integers (ptrain.reduce has no min kind; the gradient is max's:
/// dy split evenly among the elements equal to the minimum).
template <bool axesAsInput> LogicalResult legalizeReduceMin(OnnxNodeOp node, IRRewriter &rewriter) {
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
  bool identity;
  FailureOr<SmallVector<int64_t>> axes = reductionAxes<axesAsInput>(node, type, identity);
  if (failed(axes))
    return failure();
  if (identity)
    return replaceFirstOutput(node, x, rewriter);
  FailureOr<SmallVector<int64_t>> dims = normalizedAxes(node, *axes, type);
  if (failed(dims))
    return failure();
  for (int64_t axis : *dims)
    if (type.getDimSize(axis) == 0)
      return nodeError(node) << "the minimum over the zero-size dimension " << axis << " of " << type
                             << " has no value";
  Location loc = node.getLoc();
  Value negated = negate(rewriter, loc, x);
  if (!negated)
    return nodeError(node) << "ReduceMin of " << type << " is not supported (float or signed integers)";
  Value max = buildChecked<ReduceOp>(node, rewriter, ReduceKind::Max, negated, ArrayRef<int64_t>(*axes),
                                     intAttr(node, "keepdims", 1) != 0);
  if (!max)
    return failure();
  return replaceFirstOutput(node, negate(rewriter, loc, max), rewriter);
}

/// ReduceL2: sqrt(sum(x * x)) (sentence-transformers' normalization).
template <bool axesAsInput> LogicalResult legalizeReduceL2(OnnxNodeOp node, IRRewriter &rewriter) {
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
  if (!isa<FloatType>(type.getElementType()))
    return nodeError(node) << "ReduceL2 of " << type << " is not supported (float only)";
  bool identity;
  FailureOr<SmallVector<int64_t>> axes = reductionAxes<axesAsInput>(node, type, identity);
  if (failed(axes))
    return failure();
  if (identity)
    return replaceFirstOutput(node, x, rewriter);
  Location loc = node.getLoc();
  Value squares = BinaryOp::create(rewriter, loc, BinaryKind::Mul, x, x);
  Value sum = buildChecked<ReduceOp>(node, rewriter, ReduceKind::Sum, squares, ArrayRef<int64_t>(*axes),
                                     intAttr(node, "keepdims", 1) != 0);
  if (!sum)
    return failure();
  return replaceFirstOutput(node, UnaryOp::create(rewriter, loc, UnaryKind::Sqrt, sum), rewriter);
}

/// GlobalAveragePool-1: the mean over every spatial dimension (all but N and C) of an [N, C, D1, ...] float
/// tensor, kept as size 1. tf2onnx writes TensorFlow's moments over the last axis of a rank-3 [B, T, D] tensor
/// (Keras LayerNormalization) this way: a mean over D.
LogicalResult legalizeGlobalAveragePool(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 3 || !isa<FloatType>(type.getElementType()))
    return nodeError(node) << "GlobalAveragePool of " << type
                           << " is not supported (a float tensor [N, C, D1, ...] of rank 3 or more)";
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < type.getRank(); ++d)
    axes.push_back(d);
  return replaceWith<ReduceOp>(node, rewriter, ReduceKind::Mean, x, ArrayRef<int64_t>(axes), /*keepdims=*/true);
}

/// At most this many elements per output of a ReduceProd (each becomes one multiplication).
constexpr int64_t kMaxProductLength = 4096;

/// ReduceProd: per reduced axis, ptrain.split into size-1 slices multiplied pairwise (a balanced tree of
/// `binary mul`), so the value is exact up to float rounding and the gradient is the product of the others,
/// exact with zeros (mul's rule). A zero-size axis gives ones. Exporters use it mostly on constant shape
/// tensors, which then fold.
template <bool axesAsInput> LogicalResult legalizeReduceProd(OnnxNodeOp node, IRRewriter &rewriter) {
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
  bool identity;
  FailureOr<SmallVector<int64_t>> axes = reductionAxes<axesAsInput>(node, type, identity);
  if (failed(axes))
    return failure();
  if (identity)
    return replaceFirstOutput(node, x, rewriter);
  axes = normalizedAxes(node, *axes, type);
  if (failed(axes))
    return failure();
  Location loc = node.getLoc();
  SmallVector<int64_t> kept(type.getShape()), out;
  int64_t length = 1;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool reduced = llvm::is_contained(*axes, d);
    if (reduced) {
      kept[d] = 1;
      length *= type.getDimSize(d);
    }
    if (!reduced || intAttr(node, "keepdims", 1) != 0)
      out.push_back(kept[d]);
  }
  if (length > kMaxProductLength)
    return nodeError(node) << "the product of " << length << " elements per output is decomposed into as many "
                           << "multiplications; at most " << kMaxProductLength << " are supported";
  Value product = x;
  if (length == 0) {
    product = BroadcastToOp::create(rewriter, loc, type.clone(kept),
                                    scalarConstant(rewriter, loc, type.getElementType(), 1.0));
  } else {
    for (int64_t axis : *axes) {
      int64_t size = type.getDimSize(axis);
      if (size == 1)
        continue;
      auto split = SplitOp::create(rewriter, loc, product, rewriter.getI64IntegerAttr(axis),
                                   rewriter.getDenseI64ArrayAttr(SmallVector<int64_t>(size, 1)));
      SmallVector<Value> factors(split->getResults());
      while (factors.size() > 1) {
        SmallVector<Value> next;
        for (size_t i = 0; i + 1 < factors.size(); i += 2)
          next.push_back(BinaryOp::create(rewriter, loc, BinaryKind::Mul, factors[i], factors[i + 1]));
        if (factors.size() % 2)
          next.push_back(factors.back());
        factors = std::move(next);
      }
      product = factors.front();
    }
  }
  if (cast<RankedTensorType>(product.getType()).getShape() != ArrayRef<int64_t>(out))
    product = ReshapeOp::create(rewriter, loc, type.clone(out), product);
  return replaceFirstOutput(node, product, rewriter);
}

/// Softmax/LogSoftmax-13: along `axis` (default -1).
template <typename OpTy> LogicalResult legalizeSoftmax13(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  return replaceWith<OpTy>(node, rewriter, node.getInputs()[0], rewriter.getI64IntegerAttr(intAttr(node, "axis", -1)));
}

/// Softmax/LogSoftmax-1/11: the input is coerced to 2-D [prod(dims before axis), prod(dims from axis)] and
/// normalized along the second dimension (default axis 1); for the last axis that is the opset-13 form,
/// otherwise reshapes surround it.
template <typename OpTy> LogicalResult legalizeSoftmax1(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), axis = intAttr(node, "axis", 1);
  if (axis < -rank || axis > rank || (rank > 0 && axis == rank))
    return attrError(node, "axis") << "is " << axis << ", out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  if (axis == rank - 1)
    return replaceWith<OpTy>(node, rewriter, x, rewriter.getI64IntegerAttr(axis));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= type.getDimSize(d);
  auto flatType = type.clone({outer, inner});
  Value flat = ReshapeOp::create(rewriter, node.getLoc(), flatType, x);
  Value normalized = buildChecked<OpTy>(node, rewriter, flat, rewriter.getI64IntegerAttr(1));
  if (!normalized)
    return failure();
  Value back = ReshapeOp::create(rewriter, node.getLoc(), type, normalized);
  return replaceFirstOutput(node, back, rewriter);
}

} // namespace

void onnx_import::populateReductionPatterns(PatternTable &t) {
  t.onOp("ReduceSum", 1, legalizeReduce<ReduceKind::Sum, /*axesAsInput=*/false>);
  t.onOp("ReduceSum", 13, legalizeReduce<ReduceKind::Sum, /*axesAsInput=*/true>);
  t.onOp("ReduceMean", 1, legalizeReduce<ReduceKind::Mean, /*axesAsInput=*/false>);
  t.onOp("ReduceMean", 18, legalizeReduce<ReduceKind::Mean, /*axesAsInput=*/true>);
  t.onOp("ReduceMax", 1, legalizeReduce<ReduceKind::Max, /*axesAsInput=*/false>);
  t.onOp("ReduceMax", 18, legalizeReduce<ReduceKind::Max, /*axesAsInput=*/true>);
  t.onOp("ReduceMin", 1, legalizeReduceMin</*axesAsInput=*/false>);
  t.onOp("ReduceMin", 18, legalizeReduceMin</*axesAsInput=*/true>);
  t.onOp("ReduceProd", 1, legalizeReduceProd</*axesAsInput=*/false>);
  t.onOp("ReduceProd", 18, legalizeReduceProd</*axesAsInput=*/true>);
  t.onOp("ReduceL2", 1, legalizeReduceL2</*axesAsInput=*/false>);
  t.onOp("ReduceL2", 18, legalizeReduceL2</*axesAsInput=*/true>);
  t.onOp("GlobalAveragePool", 1, legalizeGlobalAveragePool);
  t.onOp("Softmax", 1, legalizeSoftmax1<SoftmaxOp>);
  t.onOp("Softmax", 13, legalizeSoftmax13<SoftmaxOp>);
  t.onOp("LogSoftmax", 1, legalizeSoftmax1<LogSoftmaxOp>);
  t.onOp("LogSoftmax", 13, legalizeSoftmax13<LogSoftmaxOp>);
}
