//===- LegalizeMiscOps.cpp - ONNX Gemm and Dropout to model ops -*- C++ -*-===//
//
// Gemm-7/11 becomes transposes, a matmul and elementwise mul/add; inference-mode Dropout-12 is the
// identity. Semantics from the ONNX operator definitions
// (https://onnx.ai/onnx/operators/).
//
//===----------------------------------------------------------------------===//

#include "LegalizePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

namespace {

/// `value` * `scale` as a rank-0 constant of `value`'s float element type; `value` itself when scale is 1.
Value scaled(Value value, double scale, IRRewriter &rewriter, Location loc) {
  if (scale == 1.0)
    return value;
  Type elementType = cast<RankedTensorType>(value.getType()).getElementType();
  auto splat =
      DenseElementsAttr::get(RankedTensorType::get({}, elementType), rewriter.getFloatAttr(elementType, scale));
  Value constant = arith::ConstantOp::create(rewriter, loc, splat);
  return BinaryOp::create(rewriter, loc, BinaryKind::Mul, value, constant);
}

/// Gemm-11/13: Y = alpha * A' * B' + beta * C, with A' = transpose(A) when transA (likewise B), A and B
/// 2-D, and C optional and unidirectionally broadcast to [M, N].
LogicalResult legalizeGemm(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 3)))
    return failure();
  Value a = node.getInputs()[0], b = node.getInputs()[1];
  auto aType = cast<RankedTensorType>(a.getType()), bType = cast<RankedTensorType>(b.getType());
  if (aType.getRank() != 2 || bType.getRank() != 2)
    return nodeError(node) << "A and B must be 2-D, got " << aType << " and " << bType;
  if (!isa<FloatType>(aType.getElementType()))
    return nodeError(node) << "only float Gemm is supported, got " << aType;
  Location loc = node.getLoc();
  for (auto [operand, attr] : {std::pair{&a, "transA"}, std::pair{&b, "transB"}}) {
    int64_t trans = intAttr(node, attr, 0);
    if (trans != 0 && trans != 1)
      return attrError(node, attr) << "is " << trans << "; expected 0 or 1";
    if (trans &&
        !(*operand = buildChecked<TransposeOp>(node, rewriter, *operand, rewriter.getDenseI64ArrayAttr({1, 0}))))
      return failure();
  }
  Value y = buildChecked<MatmulOp>(node, rewriter, a, b);
  if (!y)
    return failure();
  y = scaled(y, floatAttr(node, "alpha", 1.0), rewriter, loc);
  double beta = floatAttr(node, "beta", 1.0);
  if (node.getInputs().size() > 2 && beta != 0.0) {
    Value c = scaled(node.getInputs()[2], beta, rewriter, loc);
    if (!(y = buildChecked<BinaryOp>(node, rewriter, BinaryKind::Add, y, c)))
      return failure();
  }
  return replaceFirstOutput(node, y, rewriter);
}

/// Gemm-7/9: C is required.
LogicalResult legalizeGemm7(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 3, 3)))
    return failure();
  return legalizeGemm(node, rewriter);
}

/// Dropout-12/13/22 in inference mode (training_mode absent or constant false) is the identity; its mask
/// output must be unused.
LogicalResult legalizeDropout(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 3)))
    return failure();
  if (node.getInputs().size() > 2) {
    DenseIntElementsAttr mode;
    if (!matchPattern(node.getInputs()[2], m_Constant(&mode)) || !mode.isSplat())
      return nodeError(node) << "input 'training_mode' must be a constant false; only inference-mode Dropout "
                                "is supported";
    if (!mode.getSplatValue<APInt>().isZero())
      return nodeError(node) << "input 'training_mode' is true; only inference-mode Dropout is supported";
  }
  if (node.getNumResults() > 1 && !node.getOutputs()[1].use_empty())
    return nodeError(node) << "its mask output is used; only the data output is supported";
  return replaceFirstOutput(node, node.getInputs()[0], rewriter);
}

} // namespace

void onnx_import::populateMiscPatterns(PatternTable &t) {
  t.onOp("Gemm", 7, legalizeGemm7);
  t.onOp("Gemm", 11, legalizeGemm);
  t.onOp("Dropout", 12, legalizeDropout);
}
