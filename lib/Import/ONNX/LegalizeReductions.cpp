//===- LegalizeReductions.cpp - ONNX reductions and softmax -*- C++ -*-===//
//
// ReduceSum (axes as attribute before opset 13, as an optional input from 13), ReduceMean and ReduceMax
// (axes as attribute, opsets 1-17) become ptrain.reduce; Softmax and LogSoftmax (the 2-D coercion at `axis`
// before opset 13, one axis from 13) become ptrain.softmax / ptrain.log_softmax, with reshapes around them for
// the coercion (the losses are in LegalizeLosses.cpp). Semantics from the ONNX operator definitions
// (https://onnx.ai/onnx/operators/).
//
//===----------------------------------------------------------------------===//

#include "LegalizePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

namespace {

/// ReduceSum/Mean/Max: axes from the attribute (`axesAsInput` false) or the optional constant input #1;
/// without axes every dimension is reduced, unless `noop_with_empty_axes` (opset 13+ ReduceSum) makes it
/// the identity.
template <ReduceKind kind, bool axesAsInput> LogicalResult legalizeReduce(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, axesAsInput ? 2 : 1)))
    return failure();
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
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
    if (axesAsInput && intAttr(node, "noop_with_empty_axes", 0) != 0)
      return replaceFirstOutput(node, x, rewriter);
    axes.clear();
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
  }
  bool keepdims = intAttr(node, "keepdims", 1) != 0;
  return replaceWith<ReduceOp>(node, rewriter, kind, x, ArrayRef<int64_t>(axes), keepdims);
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
  t.onOp("Softmax", 1, legalizeSoftmax1<SoftmaxOp>);
  t.onOp("Softmax", 13, legalizeSoftmax13<SoftmaxOp>);
  t.onOp("LogSoftmax", 1, legalizeSoftmax1<LogSoftmaxOp>);
  t.onOp("LogSoftmax", 13, legalizeSoftmax13<LogSoftmaxOp>);
}
