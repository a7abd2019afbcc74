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

/// Builds `OpTy` at the node's location with the result types it infers from its operands and attributes
/// (InferTypeOpInterface). Where they admit no result type, reports on the node and returns null: the
/// generated builder without result types would instead end the process in report_fatal_error (a Gemm of
/// [2, 42] by [10, 3]: found by fuzz/ImportONNXFuzzer.cpp).
namespace detail {
/// OpTy's builder with explicit result types, given none: true when OpTy has one for these arguments.
template <typename OpTy, typename... Args>
auto buildWithoutTypes(OpBuilder &b, OperationState &state, int, Args &&...args)
    -> decltype(OpTy::build(b, state, TypeRange(), std::forward<Args>(args)...), bool()) {
  OpTy::build(b, state, TypeRange(), std::forward<Args>(args)...);
  return true;
}
template <typename OpTy, typename... Args> bool buildWithoutTypes(OpBuilder &, OperationState &, long, Args &&...) {
  return false;
}
} // namespace detail

template <typename OpTy, typename... Args>
Operation *createInferred(OnnxNodeOp node, IRRewriter &rewriter, Args &&...args) {
  // An op without InferTypeOpInterface (BroadcastToOp computes its type in a custom builder) or whose
  // builders all infer (CrossEntropyOp) is built as before.
  if constexpr (!OpTy::template hasTrait<InferTypeOpInterface::Trait>()) {
    return OpTy::create(rewriter, node.getLoc(), std::forward<Args>(args)...);
  } else {
    OperationState state(node.getLoc(), OpTy::getOperationName());
    if (!detail::buildWithoutTypes<OpTy>(rewriter, state, 0, std::forward<Args>(args)...))
      return OpTy::create(rewriter, node.getLoc(), std::forward<Args>(args)...);
    SmallVector<Type, 2> types;
    if (failed(OpTy::inferReturnTypes(rewriter.getContext(), state.location, state.operands,
                                      state.attributes.getDictionary(rewriter.getContext()), state.getRawProperties(),
                                      state.regions, types))) {
      nodeError(node) << "the node does not satisfy ptrain's " << OpTy::getOperationName()
                      << ": no result type for operands of types " << ValueRange(state.operands).getTypes();
      return nullptr;
    }
    state.addTypes(types);
    return rewriter.create(state);
  }
}

/// Builds `OpTy` with the node's result types (or, where ONNX left a shape unknown and `OpTy` infers its
/// types, with the inferred ones) and attributes, then checks and replaces.
template <typename OpTy, typename... Args>
LogicalResult replaceWith(OnnxNodeOp node, IRRewriter &rewriter, Args &&...args) {
  if constexpr (OpTy::template hasTrait<InferTypeOpInterface::Trait>()) {
    if (!hasStaticResultTypes(node)) {
      Operation *op = createInferred<OpTy>(node, rewriter, std::forward<Args>(args)...);
      return op ? replaceChecked(node, op, rewriter) : failure();
    }
  }
  auto op = OpTy::create(rewriter, node.getLoc(), node->getResultTypes(), std::forward<Args>(args)...);
  return replaceChecked(node, op, rewriter);
}

/// Builds an op whose result type is inferred (createInferred), at the node's location; where no type is
/// inferred or the verifier fails, erases it, reports on the node and returns null.
template <typename OpTy, typename... Args> Value buildChecked(OnnxNodeOp node, IRRewriter &rewriter, Args &&...args) {
  Operation *op = createInferred<OpTy>(node, rewriter, std::forward<Args>(args)...);
  if (!op)
    return nullptr;
  if (failed(verify(op, /*verifyRecursively=*/false))) {
    OperationName name = op->getName(); // before the erase (fuzz finding 13: a use after free)
    rewriter.eraseOp(op);
    nodeError(node) << "the node does not satisfy ptrain's " << name << " (see above)";
    return nullptr;
  }
  return op->getResult(0);
}

/// Replaces the node's first output by `value` when its type is the one ONNX inferred; every other output
/// must be unused (checked by the caller).
LogicalResult replaceFirstOutput(OnnxNodeOp node, Value value, IRRewriter &rewriter);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_LEGALIZEPATTERNS_H
