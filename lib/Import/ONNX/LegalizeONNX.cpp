//===- LegalizeONNX.cpp - ptrain.onnx_node to model ops -----------*- C++ -*-===//
//
// The second importer layer: one pattern per (ONNX op type, first opset with these semantics), in the style
// of torch-mlir's `onOp("Abs", 1, ...)`. Nodes are visited in graph order, so constant inputs (Reshape's
// shape, Split's sizes) are already `arith.constant` when their consumer is legalized. Each new model op is
// built with the result type ONNX shape inference gave and then verified, so a disagreement between ONNX
// and ptrain semantics is an error at the node, never silent.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Import/ONNX/ImportONNX.h"

#include "LegalizeNewestOpsets.h"
#include "LegalizePatterns.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Interpreter/Interpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// "ONNX <op> node '<name>' (opset N): ", at the node's location (its 1-based index in the graph as line).
InFlightDiagnostic onnx_import::nodeError(OnnxNodeOp node) {
  InFlightDiagnostic diag = emitError(node.getLoc()) << "ONNX " << node.getOpType();
  if (auto name = dyn_cast<NameLoc>(node.getLoc()))
    diag << " node '" << name.getName().getValue() << "'";
  diag << " (opset " << static_cast<int64_t>(node.getOpset()) << "): ";
  return diag;
}

int64_t onnx_import::intAttr(OnnxNodeOp node, StringRef name, int64_t defaultValue) {
  if (auto attr = node.getOnnxAttrs().getAs<IntegerAttr>(name))
    return attr.getInt();
  return defaultValue;
}

double onnx_import::floatAttr(OnnxNodeOp node, StringRef name, double defaultValue) {
  if (auto attr = node.getOnnxAttrs().getAs<FloatAttr>(name))
    return attr.getValueAsDouble();
  return defaultValue;
}

LogicalResult onnx_import::expectArity(OnnxNodeOp node, unsigned minInputs, unsigned maxInputs) {
  unsigned n = node.getInputs().size();
  if (n < minInputs || n > maxInputs)
    return nodeError(node) << "expects " << minInputs << (minInputs == maxInputs ? "" : " to ")
                           << (minInputs == maxInputs ? "" : std::to_string(maxInputs)) << " inputs, got " << n;
  return success();
}

void onnx_import::explainNotConstant(InFlightDiagnostic &&diag, Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  if (auto name = fn ? fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "ptrain.onnx_name") : nullptr)
    diag << "; it is graph input '" << name.getValue()
         << "' and ptrain's IR is static: give its value with --constant-input " << name.getValue() << "=<tensor.pb>";
  else
    diag << "; it is computed from values only known at run time (graph inputs that are not constants)";
}

/// The integer values of a constant input, or failure with a diagnostic naming the input.
FailureOr<SmallVector<int64_t>> onnx_import::constantInts(OnnxNodeOp node, unsigned index, StringRef what) {
  DenseIntElementsAttr attr;
  if (!matchPattern(node.getInputs()[index], m_Constant(&attr))) {
    explainNotConstant(nodeError(node) << what << " (input #" << index << ") must be a constant",
                       node.getInputs()[index]);
    return failure();
  }
  return llvm::to_vector(llvm::map_range(attr.getValues<APInt>(), [](APInt v) { return v.getSExtValue(); }));
}

bool onnx_import::matchesONNXType(Type type, Type onnxType) {
  if (type == onnxType || isa<NoneType>(onnxType))
    return true;
  auto unranked = dyn_cast<UnrankedTensorType>(onnxType);
  auto tensor = dyn_cast<RankedTensorType>(type);
  return unranked && tensor && unranked.getElementType() == tensor.getElementType();
}

bool onnx_import::hasStaticResultTypes(OnnxNodeOp node) {
  return llvm::all_of(node->getResultTypes(), [](Type t) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    return ranked && ranked.hasStaticShape();
  });
}

/// Replaces `node` by `newOp` after checking that `newOp` verifies and produces the types ONNX inferred.
LogicalResult onnx_import::replaceChecked(OnnxNodeOp node, Operation *newOp, IRRewriter &rewriter) {
  if (failed(verify(newOp, /*verifyRecursively=*/false))) {
    // The name before the erase: reading it from the erased op was a use after free (fuzz/ImportONNXFuzzer.cpp).
    const OperationName name = newOp->getName();
    rewriter.eraseOp(newOp);
    return nodeError(node) << "the node does not satisfy ptrain's " << name << " (see above)";
  }
  for (auto [result, onnxType] : llvm::zip(newOp->getResults(), node->getResultTypes()))
    if (!matchesONNXType(result.getType(), onnxType)) {
      Type type = result.getType();
      rewriter.eraseOp(newOp);
      return nodeError(node) << "the result has type " << type << " but ONNX inferred " << onnxType;
    }
  rewriter.replaceOp(node, newOp->getResults());
  return success();
}

Value onnx_import::scalarConstant(OpBuilder &builder, Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element = isa<FloatType>(elementType)
                          ? Attribute(builder.getFloatAttr(elementType, value))
                          : Attribute(builder.getIntegerAttr(elementType, static_cast<int64_t>(value)));
  return arith::ConstantOp::create(builder, loc, DenseElementsAttr::get(type, element));
}

Value onnx_import::negate(OpBuilder &builder, Location loc, Value x) {
  Type elementType = cast<RankedTensorType>(x.getType()).getElementType();
  if (isa<FloatType>(elementType))
    return UnaryOp::create(builder, loc, UnaryKind::Neg, x);
  if (!elementType.isSignlessInteger() || elementType.isInteger(1))
    return nullptr;
  return BinaryOp::create(builder, loc, BinaryKind::Sub, scalarConstant(builder, loc, elementType, 0.0), x);
}

void onnx_import::foldConstantOps(Block::iterator begin, Block::iterator end, IRRewriter &rewriter) {
  constexpr int64_t kMaxFoldedElements = int64_t(1) << 20;
  for (Operation &op : llvm::make_early_inc_range(llvm::make_range(begin, end))) {
    if (isa<arith::ConstantOp>(op) || op.getDialect() != op.getContext()->getLoadedDialect<PTrainDialect>() ||
        !isPure(&op) || op.getNumResults() == 0)
      continue;
    std::vector<interp::Tensor> values;
    bool foldable = true;
    for (Value operand : op.getOperands()) {
      DenseElementsAttr attr;
      if (!matchPattern(operand, m_Constant(&attr))) {
        foldable = false;
        break;
      }
      llvm::Expected<interp::Tensor> tensor = interp::tensorFromDenseElements(attr);
      if (!tensor) {
        llvm::consumeError(tensor.takeError());
        foldable = false;
        break;
      }
      values.push_back(std::move(*tensor));
    }
    for (Type type : op.getResultTypes()) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      foldable &= tensor && tensor.hasStaticShape() && tensor.getNumElements() <= kMaxFoldedElements;
    }
    if (!foldable)
      continue;
    std::vector<const interp::Tensor *> operands;
    for (const interp::Tensor &value : values)
      operands.push_back(&value);
    llvm::Expected<std::vector<interp::Tensor>> results = interp::evaluateOp(&op, operands);
    if (!results) {
      // Left to run time, where the interpreter reports the same error at the op.
      llvm::consumeError(results.takeError());
      continue;
    }
    rewriter.setInsertionPoint(&op);
    SmallVector<Value> constants;
    for (const interp::Tensor &result : *results)
      constants.push_back(
          arith::ConstantOp::create(rewriter, op.getLoc(), interp::denseElementsFromTensor(result, op.getContext())));
    rewriter.replaceOp(&op, constants);
  }
}

InFlightDiagnostic onnx_import::attrError(OnnxNodeOp node, StringRef attr) {
  return nodeError(node) << "attribute '" << attr << "' ";
}

LogicalResult onnx_import::replaceFirstOutput(OnnxNodeOp node, Value value, IRRewriter &rewriter) {
  Type expected = node->getResultTypes().front();
  if (!matchesONNXType(value.getType(), expected))
    return nodeError(node) << "the result has type " << value.getType() << " but ONNX inferred " << expected;
  node.getOutputs().front().replaceAllUsesWith(value);
  rewriter.eraseOp(node);
  return success();
}

namespace {

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

LogicalResult legalizeConstant(OnnxNodeOp node, IRRewriter &rewriter) {
  DictionaryAttr attrs = node.getOnnxAttrs();
  TypedAttr value;
  if (auto dense = attrs.getAs<DenseElementsAttr>("value"))
    value = dense;
  else if (auto f = attrs.getAs<FloatAttr>("value_float"))
    value = DenseElementsAttr::get(RankedTensorType::get({}, rewriter.getF32Type()), f.getValue());
  else if (auto i = attrs.getAs<IntegerAttr>("value_int"))
    value = DenseElementsAttr::get(RankedTensorType::get({}, rewriter.getI64Type()), i.getValue());
  else if (auto ints = attrs.getAs<DenseI64ArrayAttr>("value_ints"))
    value = DenseElementsAttr::get(RankedTensorType::get({ints.size()}, rewriter.getI64Type()), ints.asArrayRef());
  else if (auto floats = attrs.getAs<DenseF32ArrayAttr>("value_floats"))
    value = DenseElementsAttr::get(RankedTensorType::get({floats.size()}, rewriter.getF32Type()), floats.asArrayRef());
  if (!value)
    return nodeError(node) << "only tensor, float, int and int/float list values are supported";
  if (!matchesONNXType(value.getType(), node->getResultTypes().front()))
    return nodeError(node) << "its value has type " << value.getType() << " but ONNX inferred "
                           << node->getResultTypes().front();
  rewriter.replaceOp(node, arith::ConstantOp::create(rewriter, node.getLoc(), value)->getResults());
  return success();
}

LogicalResult legalizeIdentity(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  rewriter.replaceOp(node, node.getInputs());
  return success();
}

template <BinaryKind kind> LogicalResult legalizeBinary(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  return replaceWith<BinaryOp>(node, rewriter, kind, node.getInputs()[0], node.getInputs()[1]);
}

template <UnaryKind kind> LogicalResult legalizeUnary(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  return replaceWith<UnaryOp>(node, rewriter, kind, node.getInputs()[0]);
}

/// Max/Min-8/12/13 are variadic: one input is the identity, more fold left into binary max/min (numpy
/// broadcasting at every step, as ONNX's multidirectional broadcast).
template <BinaryKind kind> LogicalResult legalizeVariadic(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, std::numeric_limits<unsigned>::max())))
    return failure();
  Value result = node.getInputs()[0];
  for (Value next : node.getInputs().drop_front())
    if (!(result = buildChecked<BinaryOp>(node, rewriter, kind, result, next)))
      return failure();
  return replaceFirstOutput(node, result, rewriter);
}

/// Pow-7/12/13/15: one element type is `ptrain.binary pow`; from opset 12 the exponent may have another type:
/// a float base takes the exponent cast to its type, an integer base is raised in the float exponent's type
/// and the result cast back (ONNX: the result has the base's type).
LogicalResult legalizePow(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  Value base = node.getInputs()[0], exponent = node.getInputs()[1];
  auto baseType = cast<RankedTensorType>(base.getType()), expType = cast<RankedTensorType>(exponent.getType());
  if (baseType.getElementType() == expType.getElementType())
    return replaceWith<BinaryOp>(node, rewriter, BinaryKind::Pow, base, exponent);
  Location loc = node.getLoc();
  if (isa<FloatType>(baseType.getElementType())) {
    Value converted = CastOp::create(rewriter, loc, expType.clone(baseType.getElementType()), exponent);
    return replaceWith<BinaryOp>(node, rewriter, BinaryKind::Pow, base, converted);
  }
  if (!isa<FloatType>(expType.getElementType()))
    return nodeError(node) << "Pow of " << baseType << " by " << expType
                           << " is not supported (one element type, or a float base or exponent)";
  Value converted = CastOp::create(rewriter, loc, baseType.clone(expType.getElementType()), base);
  Value y = buildChecked<BinaryOp>(node, rewriter, BinaryKind::Pow, converted, exponent);
  if (!y)
    return failure();
  auto yType = cast<RankedTensorType>(y.getType());
  return replaceFirstOutput(node, CastOp::create(rewriter, loc, yType.clone(baseType.getElementType()), y), rewriter);
}

/// Neg-6/13: `ptrain.unary neg` on floats; on signed integers (the expanded LayerNormalization negates an i64
/// axis) `ptrain.binary sub` from a zero of the element type.
LogicalResult legalizeNeg(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  Value x = node.getInputs()[0];
  Value y = negate(rewriter, node.getLoc(), x);
  if (!y)
    return nodeError(node) << "Neg of " << x.getType() << " is not supported (float or signed integers)";
  return replaceFirstOutput(node, y, rewriter);
}

LogicalResult legalizeMatMul(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  return replaceWith<MatmulOp>(node, rewriter, node.getInputs()[0], node.getInputs()[1]);
}

LogicalResult legalizeTranspose(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  int64_t rank = cast<RankedTensorType>(node.getInputs()[0].getType()).getRank();
  SmallVector<int64_t> perm;
  if (auto attr = node.getOnnxAttrs().getAs<DenseI64ArrayAttr>("perm"))
    perm.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  return replaceWith<TransposeOp>(node, rewriter, node.getInputs()[0], rewriter.getDenseI64ArrayAttr(perm));
}

/// Reshape-5 (shape as input) and -14 (`allowzero`): 0 copies the input dimension unless allowzero, -1 is
/// inferred from the element count.
LogicalResult legalizeReshape(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = constantInts(node, 1, "the target shape");
  if (failed(shape))
    return failure();
  auto inType = cast<RankedTensorType>(node.getInputs()[0].getType());
  bool allowZero = intAttr(node, "allowzero", 0) != 0;
  int64_t known = 1, inferIndex = -1;
  for (auto [i, d] : llvm::enumerate(*shape)) {
    if (d == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= inType.getRank())
        return nodeError(node) << "target dimension " << i << " is 0 (copy) but the input has rank "
                               << inType.getRank();
      d = inType.getDimSize(i);
    }
    if (d == -1) {
      if (inferIndex >= 0)
        return nodeError(node) << "the target shape has more than one -1";
      inferIndex = i;
      continue;
    }
    if (d < 0)
      return nodeError(node) << "target dimension " << i << " is " << d;
    if (llvm::MulOverflow(known, d, known))
      return nodeError(node) << "the target shape's element count overflows 64 bits (dimension " << i << " is "
                             << d << ")";
  }
  if (inferIndex >= 0) {
    if (known == 0 || inType.getNumElements() % known != 0)
      return nodeError(node) << "cannot infer the -1 dimension of a reshape of " << inType;
    (*shape)[inferIndex] = inType.getNumElements() / known;
  }
  auto resultType = inType.clone(*shape);
  if (!matchesONNXType(resultType, node->getResultTypes().front()))
    return nodeError(node) << "the target shape gives " << resultType << " but ONNX inferred "
                           << node->getResultTypes().front();
  return replaceChecked(node, ReshapeOp::create(rewriter, node.getLoc(), resultType, node.getInputs()[0]), rewriter);
}

/// Split-2 (`split` attribute) and Split-13 (sizes as an optional input); without sizes, equal parts.
LogicalResult legalizeSplit(OnnxNodeOp node, IRRewriter &rewriter) {
  auto type = cast<RankedTensorType>(node.getInputs()[0].getType());
  int64_t axis = intAttr(node, "axis", 0);
  int64_t dim = type.getDimSize(axis < 0 ? axis + type.getRank() : axis);
  SmallVector<int64_t> sizes;
  if (node.getInputs().size() > 1) {
    FailureOr<SmallVector<int64_t>> given = constantInts(node, 1, "the split sizes");
    if (failed(given))
      return failure();
    sizes = *given;
  } else if (auto attr = node.getOnnxAttrs().getAs<DenseI64ArrayAttr>("split")) {
    sizes.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
  } else {
    int64_t parts = node.getNumResults();
    if (dim % parts != 0)
      return nodeError(node) << "cannot split dimension of size " << dim << " into " << parts << " equal parts";
    sizes.assign(parts, dim / parts);
  }
  return replaceWith<SplitOp>(node, rewriter, node.getInputs()[0], rewriter.getI64IntegerAttr(axis),
                              rewriter.getDenseI64ArrayAttr(sizes));
}

/// LayerNormalization-17: Y from X, Scale and optional B over [axis, rank). The optional Mean and InvStdDev
/// outputs (f32, X's shape with 1 at the normalized dimensions), where used, are built from reductions:
/// mean(x) and 1 / sqrt(mean((x - mean)^2) + epsilon), for f32 X.
LogicalResult legalizeLayerNormalization(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 3)))
    return failure();
  int64_t axis = intAttr(node, "axis", -1);
  if (intAttr(node, "stash_type", 1) != 1)
    return nodeError(node) << "stash_type other than float is not supported";
  double epsilon = floatAttr(node, "epsilon", 1e-5);
  Value x = node.getInputs()[0];
  Value bias = node.getInputs().size() > 2 ? node.getInputs()[2] : Value();
  auto op = LayerNormOp::create(rewriter, node.getLoc(), x.getType(), x, node.getInputs()[1], bias,
                                rewriter.getI64IntegerAttr(axis), rewriter.getF64FloatAttr(epsilon));
  if (failed(verify(op, /*verifyRecursively=*/false))) {
    rewriter.eraseOp(op);
    return nodeError(node) << "the node does not satisfy ptrain's layer_norm (see above)";
  }
  bool statistics = llvm::any_of(llvm::drop_begin(node.getOutputs()), [](Value v) { return !v.use_empty(); });
  if (statistics) {
    auto type = cast<RankedTensorType>(x.getType());
    if (!type.getElementType().isF32())
      return nodeError(node) << "its Mean and InvStdDev outputs are used; they are supported for f32 X only, got "
                             << type;
    int64_t first = axis < 0 ? axis + type.getRank() : axis;
    SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(first, type.getRank()));
    Location loc = node.getLoc();
    Value mean = buildChecked<ReduceOp>(node, rewriter, ReduceKind::Mean, x, ArrayRef<int64_t>(axes), true);
    if (!mean)
      return failure();
    Value centered = BinaryOp::create(rewriter, loc, BinaryKind::Sub, x, mean);
    Value squared = BinaryOp::create(rewriter, loc, BinaryKind::Mul, centered, centered);
    Value variance = ReduceOp::create(rewriter, loc, ReduceKind::Mean, squared, ArrayRef<int64_t>(axes), true);
    Value shifted = BinaryOp::create(rewriter, loc, BinaryKind::Add, variance,
                                     scalarConstant(rewriter, loc, type.getElementType(), epsilon));
    Value invStdDev =
        UnaryOp::create(rewriter, loc, UnaryKind::Reciprocal, UnaryOp::create(rewriter, loc, UnaryKind::Sqrt, shifted));
    Value statisticValues[] = {mean, invStdDev};
    for (auto [output, value] : llvm::zip(llvm::drop_begin(node.getOutputs()), statisticValues)) {
      if (!matchesONNXType(value.getType(), output.getType()))
        return nodeError(node) << "its statistics have type " << value.getType() << " but ONNX inferred "
                               << output.getType();
      output.replaceAllUsesWith(value);
    }
  }
  node.getOutputs().front().replaceAllUsesWith(op.getResult());
  rewriter.eraseOp(node);
  return success();
}

const PatternTable &patterns() {
  static const PatternTable table = [] {
    PatternTable t;
    t.onOp("Constant", 1, legalizeConstant);
    t.onOp("Identity", 1, legalizeIdentity);
    t.onOp("Add", 7, legalizeBinary<BinaryKind::Add>);
    t.onOp("Sub", 7, legalizeBinary<BinaryKind::Sub>);
    t.onOp("Mul", 7, legalizeBinary<BinaryKind::Mul>);
    t.onOp("Div", 7, legalizeBinary<BinaryKind::Div>);
    t.onOp("Pow", 7, legalizePow);
    t.onOp("Max", 8, legalizeVariadic<BinaryKind::Max>);
    t.onOp("Min", 8, legalizeVariadic<BinaryKind::Min>);
    t.onOp("Neg", 6, legalizeNeg);
    t.onOp("Exp", 6, legalizeUnary<UnaryKind::Exp>);
    t.onOp("Log", 6, legalizeUnary<UnaryKind::Log>);
    t.onOp("Sqrt", 6, legalizeUnary<UnaryKind::Sqrt>);
    t.onOp("Reciprocal", 6, legalizeUnary<UnaryKind::Reciprocal>);
    t.onOp("Erf", 9, legalizeUnary<UnaryKind::Erf>);
    t.onOp("Tanh", 6, legalizeUnary<UnaryKind::Tanh>);
    t.onOp("Relu", 6, legalizeUnary<UnaryKind::Relu>);
    t.onOp("MatMul", 1, legalizeMatMul);
    t.onOp("Transpose", 1, legalizeTranspose);
    t.onOp("Reshape", 5, legalizeReshape);
    t.onOp("Split", 2, legalizeSplit);
    t.onOp("LayerNormalization", 17, legalizeLayerNormalization);
    populateShapePatterns(t);
    populateMiscPatterns(t);
    populateSelectionPatterns(t);
    populateReductionPatterns(t);
    populateLossPatterns(t);
    populateOpset18Patterns(t);
    populateOpset23Patterns(t);
    populateSequencePatterns(t);
    return t;
  }();
  return table;
}

} // namespace

LogicalResult mlir::ptrain::legalizeONNXNodes(ModuleOp module) {
  SmallVector<OnnxNodeOp> nodes;
  module.walk([&](OnnxNodeOp node) { nodes.push_back(node); });
  IRRewriter rewriter(module.getContext());
  for (OnnxNodeOp node : nodes) {
    int64_t opset = static_cast<int64_t>(node.getOpset());
    const LegalizationPattern *pattern = patterns().lookup(node.getOpType(), opset);
    if (!pattern)
      return nodeError(node) << "op type '" << node.getOpType() << "' at opset " << opset
                             << " is not supported by ptrain's importer";
    rewriter.setInsertionPoint(node);
    Block *block = node->getBlock();
    Operation *prev = node->getPrevNode(), *next = node->getNextNode();
    if (failed(pattern->legalize(node, rewriter)))
      return failure();
    foldConstantOps(prev ? std::next(Block::iterator(prev)) : block->begin(),
                    next ? Block::iterator(next) : block->end(), rewriter);
  }
  if (failed(onnx_import::eraseSequences(module)))
    return failure();
  // Results whose shape ONNX could not infer now have the static types the legalization computed.
  module.walk([](func::FuncOp fn) {
    if (fn.isExternal())
      return;
    Operation *terminator = fn.getBody().front().getTerminator();
    fn.setType(FunctionType::get(fn.getContext(), fn.getArgumentTypes(), terminator->getOperandTypes()));
  });
  return success();
}
