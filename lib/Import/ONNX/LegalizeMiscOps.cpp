//===- LegalizeMiscOps.cpp - ONNX Gemm and Dropout to model ops -*- C++ -*-===//
//
// Gemm-7/11 becomes transposes, a matmul and elementwise mul/add; Clip binary max/min with its bounds;
// inference-mode Dropout-12 is the identity, training-mode Dropout `ptrain.dropout` keyed to the step counter.
// Semantics from the ONNX operator definitions (https://onnx.ai/onnx/operators/).
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

/// The seed of a training-mode dropout without a `seed` attribute: a hash of the node name, and of the
/// node's line (its 1-based index in the graph) too when another node of the function has the same name, so
/// that nodes with duplicate names never share a mask. (Unnamed nodes are named "<op>#<index>".)
int64_t dropoutSeed(OnnxNodeOp node) {
  auto name = dyn_cast<NameLoc>(node.getLoc());
  if (!name)
    return 0;
  auto line = [](Location loc) -> int64_t {
    auto named = dyn_cast<NameLoc>(loc);
    auto file = named ? dyn_cast<FileLineColLoc>(named.getChildLoc()) : nullptr;
    return file ? static_cast<int64_t>(file.getLine()) : -1;
  };
  int64_t own = line(name);
  bool duplicate = false;
  node->getParentOfType<func::FuncOp>().walk([&](Operation *op) {
    auto other = dyn_cast<NameLoc>(op->getLoc());
    if (other && other.getName() == name.getName() && line(other) != own)
      duplicate = true;
  });
  std::string key = name.getName().getValue().str();
  if (duplicate)
    key += "#" + std::to_string(own);
  return static_cast<int64_t>(llvm::xxh3_64bits(key));
}

/// Dropout-7/10 (a `ratio` attribute, no training mode: the identity in inference, which ONNX runtimes run)
/// and Dropout-12/13/22: in inference mode (training_mode absent or constant false) the identity; in training
/// mode (training_mode constant true) `ptrain.dropout` with the constant `ratio` (default 0.5), keyed to the
/// step counter and to the node's `seed` attribute or, without one, dropoutSeed. A ratio of 0 is the
/// identity in both modes. The optional mask output (true where an element is kept) is an all-true constant
/// in inference mode or at ratio 0; in training mode it is `compare gt` of the same dropout (same ratio, seed
/// and step) applied to ones against 0: the mask is a function of (seed, step, element index) only, so it is
/// exactly the one that dropped the data.
LogicalResult legalizeDropout(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 3)))
    return failure();
  bool training = false;
  if (node.getInputs().size() > 2) {
    DenseIntElementsAttr mode;
    if (!matchPattern(node.getInputs()[2], m_Constant(&mode)) || !mode.isSplat()) {
      explainNotConstant(nodeError(node) << "input 'training_mode' (input #2) must be a constant", node.getInputs()[2]);
      return failure();
    }
    training = !mode.getSplatValue<APInt>().isZero();
  }
  double ratio = 0.5;
  if (training && node.getInputs().size() > 1) {
    DenseFPElementsAttr value;
    if (!matchPattern(node.getInputs()[1], m_Constant(&value)) || !value.isSplat()) {
      explainNotConstant(nodeError(node) << "input 'ratio' (input #1) must be a constant in training mode",
                         node.getInputs()[1]);
      return failure();
    }
    ratio = value.getSplatValue<APFloat>().convertToDouble();
  }
  Value x = node.getInputs()[0];
  auto type = cast<RankedTensorType>(x.getType());
  Location loc = node.getLoc();
  bool maskUsed = node.getNumResults() > 1 && !node.getOutputs()[1].use_empty();
  auto maskType = RankedTensorType::get(type.getShape(), rewriter.getI1Type());
  if (maskUsed && !matchesONNXType(maskType, node.getOutputs()[1].getType()))
    return nodeError(node) << "the mask output has type " << maskType << " but ONNX inferred "
                           << node.getOutputs()[1].getType();
  if (!training || ratio == 0.0) {
    if (maskUsed)
      node.getOutputs()[1].replaceAllUsesWith(
          arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(maskType, true)));
    return replaceFirstOutput(node, x, rewriter);
  }
  if (!(ratio > 0.0 && ratio < 1.0))
    return nodeError(node) << "ratio " << ratio << " is not in [0, 1)";
  FailureOr<StateOp> counter = stepCounter(node, rewriter);
  if (failed(counter))
    return failure();
  int64_t seed = intAttr(node, "seed", dropoutSeed(node));
  auto dropout = [&](Value input) {
    Value step = StateReadOp::create(rewriter, loc, counter->getTensorType(), counter->getSymName());
    return buildChecked<DropoutOp>(node, rewriter, input, step, rewriter.getF64FloatAttr(ratio),
                                   rewriter.getI64IntegerAttr(seed));
  };
  Value y = dropout(x);
  if (!y)
    return failure();
  if (maskUsed) {
    Value ones = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(type, rewriter.getFloatAttr(type.getElementType(), 1.0)));
    Value kept = dropout(ones);
    if (!kept)
      return failure();
    Value mask = CompareOp::create(rewriter, loc, CompareKind::Gt, kept,
                                   scalarConstant(rewriter, loc, type.getElementType(), 0.0));
    node.getOutputs()[1].replaceAllUsesWith(mask);
  }
  return replaceFirstOutput(node, y, rewriter);
}

/// Clip-6 (min/max attributes) and Clip-11+ (optional min/max inputs): binary max with min, then binary min
/// with max.
template <bool asInputs> LogicalResult legalizeClip(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, asInputs ? 3 : 1)))
    return failure();
  Location loc = node.getLoc();
  Value y = node.getInputs()[0];
  Type elt = cast<RankedTensorType>(y.getType()).getElementType();
  auto bound = [&](unsigned input, StringRef attr) -> Value {
    if (asInputs)
      return node.getInputs().size() > input ? node.getInputs()[input] : Value();
    if (auto value = node.getOnnxAttrs().getAs<FloatAttr>(attr))
      return scalarConstant(rewriter, loc, elt, value.getValueAsDouble());
    return Value();
  };
  if (Value lo = bound(1, "min"))
    y = buildChecked<BinaryOp>(node, rewriter, BinaryKind::Max, y, lo);
  if (Value hi = y ? bound(2, "max") : Value())
    y = buildChecked<BinaryOp>(node, rewriter, BinaryKind::Min, y, hi);
  if (!y)
    return failure();
  return replaceFirstOutput(node, y, rewriter);
}

} // namespace

void onnx_import::populateMiscPatterns(PatternTable &t) {
  t.onOp("Clip", 6, legalizeClip</*asInputs=*/false>);
  t.onOp("Clip", 11, legalizeClip</*asInputs=*/true>);
  t.onOp("Gemm", 7, legalizeGemm7);
  t.onOp("Gemm", 11, legalizeGemm);
  t.onOp("Dropout", 7, legalizeDropout);
  t.onOp("Dropout", 12, legalizeDropout);
}
