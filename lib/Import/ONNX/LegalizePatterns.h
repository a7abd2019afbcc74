//===- LegalizePatterns.h - shared by the ONNX legalization files -*- C++ -*-===//
//
// Internal to lib/Import/ONNX: the pattern table of the second importer layer (STYLE habit 11) and the
// helpers every pattern uses. Patterns live in files by concept (LegalizeONNX.cpp: elementwise, matmul,
// normalization; LegalizeShapeOps.cpp: reshape-like, concat, slice; LegalizeMiscOps.cpp: Gemm, Dropout,
// Cast), each registering its patterns through one `populate*` function.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_LEGALIZEPATTERNS_H
#define PTRAIN_LIB_IMPORT_ONNX_LEGALIZEPATTERNS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::ptrain::onnx_import {

/// Legalizes one node; on failure it has emitted a diagnostic at the node.
using Legalizer = LogicalResult (*)(OnnxNodeOp node, IRRewriter &rewriter);

struct LegalizationPattern {
  /// The first opset in which the op has the semantics this pattern implements.
  int64_t sinceOpset;
  Legalizer legalize;
};

/// The patterns by op type, each list sorted by `sinceOpset`.
class PatternTable {
public:
  void onOp(StringRef opType, int64_t sinceOpset, Legalizer legalize) {
    table[opType].push_back({sinceOpset, legalize});
  }
  /// The pattern for `opType` at `opset`: the one with the greatest sinceOpset <= opset.
  const LegalizationPattern *lookup(StringRef opType, int64_t opset) const {
    auto it = table.find(opType);
    if (it == table.end())
      return nullptr;
    const LegalizationPattern *best = nullptr;
    for (const LegalizationPattern &p : it->second)
      if (p.sinceOpset <= opset && (!best || p.sinceOpset > best->sinceOpset))
        best = &p;
    return best;
  }

private:
  llvm::StringMap<SmallVector<LegalizationPattern, 2>> table;
};

/// Unsqueeze, Squeeze, Concat, Slice (LegalizeShapeOps.cpp).
void populateShapePatterns(PatternTable &table);
/// Gemm, Dropout (LegalizeMiscOps.cpp).
void populateMiscPatterns(PatternTable &table);
/// Masks and selection: Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, And, Or, Xor, Where, Cast,
/// Expand, Gather, Shape, Range, ConstantOfShape, Trilu (LegalizeSelectionOps.cpp).
void populateSelectionPatterns(PatternTable &table);
/// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, Softmax, LogSoftmax (LegalizeReductions.cpp).
void populateReductionPatterns(PatternTable &table);
/// SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss (LegalizeLosses.cpp).
void populateLossPatterns(PatternTable &table);

/// Replaces every op in [`begin`, `end`) of one block whose operands are all `arith.constant` by constants
/// computed with the reference interpreter (interp::evaluateOp), in order, so that the exporters'
/// Shape -> Gather -> Unsqueeze -> Concat chains become the constant shapes later patterns read. Results
/// over 2^20 elements are left unfolded.
void foldConstantOps(Block::iterator begin, Block::iterator end, IRRewriter &rewriter);

//===----------------------------------------------------------------------===//
// Helpers (LegalizeONNX.cpp)
//===----------------------------------------------------------------------===//

/// "ONNX <op> node '<name>' (opset N): ", at the node's location (its 1-based index in the graph as line).
InFlightDiagnostic nodeError(OnnxNodeOp node);

/// "ONNX <op> node '<name>' (opset N): attribute '<attr>' ", for an unsupported attribute value.
InFlightDiagnostic attrError(OnnxNodeOp node, StringRef attr);

int64_t intAttr(OnnxNodeOp node, StringRef name, int64_t defaultValue);
double floatAttr(OnnxNodeOp node, StringRef name, double defaultValue);

LogicalResult expectArity(OnnxNodeOp node, unsigned minInputs, unsigned maxInputs);

/// Appends to `diag` why `value` (a shape operand that must be constant) is not: a graph input (named, with
/// the --constant-input hint) or a value computed from such inputs.
void explainNotConstant(InFlightDiagnostic &&diag, Value value);

/// The integer values of a constant input, or failure with a diagnostic naming the input.
FailureOr<SmallVector<int64_t>> constantInts(OnnxNodeOp node, unsigned index, StringRef what);

/// A rank-0 constant of `elementType` (float or integer) holding `value`.
Value scalarConstant(OpBuilder &builder, Location loc, Type elementType, double value);

/// -x: `ptrain.unary neg` on floats, `ptrain.binary sub` from 0 on signed integers; null on other types.
Value negate(OpBuilder &builder, Location loc, Value x);

/// Whether `type`, computed by ptrain, agrees with `onnxType`, the node's result type from ONNX shape
/// inference: equal, or `onnxType` is unranked (ONNX could not infer the shape) with the same element type.
bool matchesONNXType(Type type, Type onnxType);

/// Whether ONNX shape inference gave every result of `node` a static type.
bool hasStaticResultTypes(OnnxNodeOp node);

/// Replaces `node` by `newOp` after checking that `newOp` verifies and produces the types ONNX inferred
/// (matchesONNXType).
LogicalResult replaceChecked(OnnxNodeOp node, Operation *newOp, IRRewriter &rewriter);

/// Builds `OpTy` with the node's result types (or, where ONNX left a shape unknown and `OpTy` infers its
/// types, with the inferred ones) and attributes, then checks and replaces.
template <typename OpTy, typename... Args>
LogicalResult replaceWith(OnnxNodeOp node, IRRewriter &rewriter, Args &&...args) {
  if constexpr (OpTy::template hasTrait<InferTypeOpInterface::Trait>()) {
    if (!hasStaticResultTypes(node))
      return replaceChecked(node, OpTy::create(rewriter, node.getLoc(), std::forward<Args>(args)...), rewriter);
  }
  auto op = OpTy::create(rewriter, node.getLoc(), node->getResultTypes(), std::forward<Args>(args)...);
  return replaceChecked(node, op, rewriter);
}

/// Builds an op whose result type is inferred, at the node's location; on a verifier failure, erases it,
/// reports on the node and returns null.
template <typename OpTy, typename... Args> Value buildChecked(OnnxNodeOp node, IRRewriter &rewriter, Args &&...args) {
  auto op = OpTy::create(rewriter, node.getLoc(), std::forward<Args>(args)...);
  if (failed(verify(op, /*verifyRecursively=*/false))) {
    rewriter.eraseOp(op);
    nodeError(node) << "the node does not satisfy ptrain's " << op->getName() << " (see above)";
    return nullptr;
  }
  return op->getResult(0);
}

/// Replaces the node's first output by `value` when its type is the one ONNX inferred; every other output
/// must be unused (checked by the caller).
LogicalResult replaceFirstOutput(OnnxNodeOp node, Value value, IRRewriter &rewriter);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_LEGALIZEPATTERNS_H
