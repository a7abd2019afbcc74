//===- LegalizeOpset18.cpp - ONNX semantics new in opsets 18-20 ---*- C++ -*-===//
//
// Split-18 (`num_outputs`: equal chunks, the last one smaller when the dimension does not divide), Gelu-20
// (`approximate` none or tanh) into ptrain.gelu, and Sigmoid (SwiGLU's SiLU, x * sigmoid(x), in LLaMA-style
// exports) as 1 / (1 + exp(-x)). ReduceMean/ReduceMax-18 (axes as an input) are in LegalizeReductions.cpp.
// Semantics from the ONNX operator definitions (https://onnx.ai/onnx/operators/); Debian's libonnx 1.12
// knows none of these opsets, so ONNX shape inference leaves their results untyped and the types here are
// ptrain's own inference.
//
//===----------------------------------------------------------------------===//

#include "LegalizeNewestOpsets.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

namespace {

/// Split-18: sizes from the optional input #1, else `num_outputs` chunks of ceil(dim / num_outputs), the
/// last one taking the remainder.
LogicalResult legalizeSplit18(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 2)))
    return failure();
  auto type = cast<RankedTensorType>(node.getInputs()[0].getType());
  int64_t rank = type.getRank(), axis = intAttr(node, "axis", 0);
  if (axis < -rank || axis >= rank)
    return attrError(node, "axis") << "is " << axis << ", out of range for rank " << rank;
  int64_t dim = type.getDimSize(axis < 0 ? axis + rank : axis);
  SmallVector<int64_t> sizes;
  if (node.getInputs().size() > 1) {
    FailureOr<SmallVector<int64_t>> given = constantInts(node, 1, "the split sizes");
    if (failed(given))
      return failure();
    sizes = *given;
  } else {
    int64_t parts = intAttr(node, "num_outputs", 0);
    if (parts <= 0)
      return attrError(node, "num_outputs") << "must be given (> 0) when the split sizes (input #1) are absent";
    if (parts != static_cast<int64_t>(node.getNumResults()))
      return attrError(node, "num_outputs")
             << "is " << parts << " but the node has " << node.getNumResults() << " outputs";
    int64_t chunk = (dim + parts - 1) / parts;
    if (chunk * (parts - 1) >= dim && parts > 1)
      return nodeError(node) << "cannot split dimension of size " << dim << " into " << parts << " chunks of " << chunk
                             << " with a non-empty last chunk";
    sizes.assign(parts - 1, chunk);
    sizes.push_back(dim - chunk * (parts - 1));
  }
  return replaceWith<SplitOp>(node, rewriter, node.getInputs()[0], rewriter.getI64IntegerAttr(axis),
                              rewriter.getDenseI64ArrayAttr(sizes));
}

/// Gelu-20: approximate "none" (default, erf) or "tanh".
LogicalResult legalizeGelu20(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  auto approximate = node.getOnnxAttrs().getAs<StringAttr>("approximate");
  StringRef mode = approximate ? approximate.getValue() : "none";
  GeluApproximation kind;
  if (mode == "none")
    kind = GeluApproximation::None;
  else if (mode == "tanh")
    kind = GeluApproximation::Tanh;
  else
    return attrError(node, "approximate") << "is '" << mode << "'; only 'none' and 'tanh' are defined";
  // The result type is the input's (ONNX 1.12's shape inference does not know Gelu and leaves it untyped).
  Value y = buildChecked<GeluOp>(node, rewriter, node.getInputs()[0],
                                 GeluApproximationAttr::get(rewriter.getContext(), kind));
  return y ? replaceFirstOutput(node, y, rewriter) : failure();
}

/// Sigmoid-6/13: 1 / (1 + exp(-x)) with ptrain.unary and ptrain.binary (each with a gradient rule).
LogicalResult legalizeSigmoid(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  Value x = node.getInputs()[0];
  auto type = dyn_cast<RankedTensorType>(x.getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return nodeError(node) << "the input must be a float tensor, got " << x.getType();
  Location loc = node.getLoc();
  Value e = UnaryOp::create(rewriter, loc, UnaryKind::Exp, UnaryOp::create(rewriter, loc, UnaryKind::Neg, x));
  Value onePlus =
      BinaryOp::create(rewriter, loc, BinaryKind::Add, e, scalarConstant(rewriter, loc, type.getElementType(), 1.0));
  return replaceFirstOutput(node, UnaryOp::create(rewriter, loc, UnaryKind::Reciprocal, onePlus), rewriter);
}

} // namespace

void onnx_import::populateOpset18Patterns(PatternTable &t) {
  t.onOp("Split", 18, legalizeSplit18);
  t.onOp("Gelu", 20, legalizeGelu20);
  t.onOp("Sigmoid", 6, legalizeSigmoid);
}
