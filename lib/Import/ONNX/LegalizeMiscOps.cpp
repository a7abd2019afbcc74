//===- LegalizeMiscOps.cpp - ONNX Gemm and Dropout to model ops -*- C++ -*-===//
//
// Gemm-7/11 becomes transposes, a matmul and elementwise mul/add; inference-mode Dropout-12 is the
// identity, training-mode Dropout `ptrain.dropout` keyed to the step counter. Semantics from the ONNX operator
// definitions (https://onnx.ai/onnx/operators/).
//
//===----------------------------------------------------------------------===//

#include "LegalizePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/xxhash.h"

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

/// The module's training step counter `@step` (key "step", kind step_counter, tensor<i64>), declared on
/// first use; --ptrain-build-training-step's optimizer increments the same symbol once per step.
FailureOr<StateOp> stepCounter(OnnxNodeOp node, IRRewriter &rewriter) {
  auto module = node->getParentOfType<ModuleOp>();
  auto type = RankedTensorType::get({}, rewriter.getI64Type());
  if (Operation *existing = SymbolTable::lookupSymbolIn(module, "step")) {
    auto state = dyn_cast<StateOp>(existing);
    if (!state || state.getKind() != StateKind::StepCounter || state.getType() != type) {
      nodeError(node) << "the symbol @step (an initializer named 'step'?) is not the tensor<i64> step counter "
                         "that training-mode dropout is keyed to";
      return failure();
    }
    return state;
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(node->getParentOfType<func::FuncOp>());
  return StateOp::create(rewriter, node.getLoc(), "step", "step", StateKind::StepCounter, type);
}

/// Dropout-12/13/22: in inference mode (training_mode absent or constant false) the identity; in training
/// mode (training_mode constant true) `ptrain.dropout` with the constant `ratio` (default 0.5), keyed to the
/// step counter and to the node's `seed` attribute or, without one, a hash of the node name. A ratio of 0
/// is the identity in both modes. The mask output must be unused.
LogicalResult legalizeDropout(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 3)))
    return failure();
  bool training = false;
  if (node.getInputs().size() > 2) {
    DenseIntElementsAttr mode;
    if (!matchPattern(node.getInputs()[2], m_Constant(&mode)) || !mode.isSplat())
      return nodeError(node) << "input 'training_mode' (input #2) must be a constant; ptrain's IR is static";
    training = !mode.getSplatValue<APInt>().isZero();
  }
  if (node.getNumResults() > 1 && !node.getOutputs()[1].use_empty())
    return nodeError(node) << "its mask output is used; only the data output is supported";
  double ratio = 0.5;
  if (training && node.getInputs().size() > 1) {
    DenseFPElementsAttr value;
    if (!matchPattern(node.getInputs()[1], m_Constant(&value)) || !value.isSplat())
      return nodeError(node) << "input 'ratio' (input #1) must be a constant in training mode";
    ratio = value.getSplatValue<APFloat>().convertToDouble();
  }
  if (!training || ratio == 0.0)
    return replaceFirstOutput(node, node.getInputs()[0], rewriter);
  if (!(ratio > 0.0 && ratio < 1.0))
    return nodeError(node) << "ratio " << ratio << " is not in [0, 1)";
  FailureOr<StateOp> counter = stepCounter(node, rewriter);
  if (failed(counter))
    return failure();
  // Every node has a NameLoc (the importer names unnamed nodes "<op>#<index>").
  auto name = dyn_cast<NameLoc>(node.getLoc());
  int64_t seed = intAttr(node, "seed", name ? static_cast<int64_t>(llvm::xxh3_64bits(name.getName().getValue())) : 0);
  Location loc = node.getLoc();
  Value step = StateReadOp::create(rewriter, loc, counter->getTensorType(), counter->getSymName());
  Value y = buildChecked<DropoutOp>(node, rewriter, node.getInputs()[0], step, rewriter.getF64FloatAttr(ratio),
                                    rewriter.getI64IntegerAttr(seed));
  if (!y)
    return failure();
  return replaceFirstOutput(node, y, rewriter);
}

} // namespace

void onnx_import::populateMiscPatterns(PatternTable &t) {
  t.onOp("Gemm", 7, legalizeGemm7);
  t.onOp("Gemm", 11, legalizeGemm);
  t.onOp("Dropout", 12, legalizeDropout);
}
