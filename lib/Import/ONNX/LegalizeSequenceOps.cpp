//===- LegalizeSequenceOps.cpp - static ONNX sequences, CumSum, Cos, Sin -*- C++ -*-===//
//
// The ops the newest PyTorch exporter (torch.onnx.export(dynamo=True)) writes when its graph is not
// constant-folded (optimize=False):
//  - torch.split as SplitToSequence, its parts taken by SequenceAt at constant positions (GPT-2's q/k/v).
//    ptrain's IR has no sequence type: the faithful import types a sequence `tuple<>`, and during the
//    legalization a sequence of static length is `builtin.unrealized_conversion_cast` of its elements to a
//    `tuple<...>` of their types. SequenceAt, SequenceLength and ConcatFromSequence read the elements back;
//    the casts are erased once unused (eraseSequences: a sequence that reaches a graph output or an op
//    without a pattern is an error naming the node that built it).
//  - CumSum (LLaMA-style position and mask arithmetic), Cos and Sin (the rotary tables): folded when the
//    input is a constant. A float CumSum of a run-time tensor is a matmul with a constant triangular matrix
//    (exact for the 0/1 weights, with matmul's gradient rule). ptrain has no cos/sin model op: Cos and Sin
//    of a value computed from initializers (the rotary inv_freq buffer) are folded with the initializers'
//    values, with a remark naming them; of a run-time value they are an error naming the node.
// Semantics from the ONNX operator definitions (https://onnx.ai/onnx/operators/).
//
//===----------------------------------------------------------------------===//

#include "LegalizeNewestOpsets.h"

#include "ptrain/Import/ONNX/Initializers.h"
#include "ptrain/Interpreter/Interpreter.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

namespace {

/// The sequence of `elements`: a cast of them to the tuple of their types.
Value makeSequence(IRRewriter &rewriter, Location loc, ValueRange elements) {
  SmallVector<Type> types(elements.getTypes());
  return UnrealizedConversionCastOp::create(rewriter, loc, TupleType::get(rewriter.getContext(), types), elements)
      .getResult(0);
}

/// The elements of the sequence input #`index`, or failure with a diagnostic.
FailureOr<SmallVector<Value>> sequenceElements(OnnxNodeOp node, unsigned index) {
  Value seq = node.getInputs()[index];
  auto cast = seq.getDefiningOp<UnrealizedConversionCastOp>();
  if (!cast || !isa<TupleType>(seq.getType())) {
    nodeError(node) << "the sequence (input #" << index
                    << ") must be built by SplitToSequence or SequenceConstruct with static sizes";
    return failure();
  }
  return SmallVector<Value>(cast.getInputs());
}

/// The axis attribute normalized into [0, rank + extra), or failure with a diagnostic.
FailureOr<int64_t> normalizedAxis(OnnxNodeOp node, int64_t axis, int64_t rank, int64_t extra = 0) {
  int64_t limit = rank + extra;
  if (axis < -limit || axis >= limit) {
    attrError(node, "axis") << "is " << axis << ", out of range for rank " << rank;
    return failure();
  }
  return axis < 0 ? axis + limit : axis;
}

FailureOr<RankedTensorType> staticInput(OnnxNodeOp node, unsigned index) {
  auto type = dyn_cast<RankedTensorType>(node.getInputs()[index].getType());
  if (!type || !type.hasStaticShape()) {
    nodeError(node) << "input #" << index << " must have a static shape, got " << node.getInputs()[index].getType();
    return failure();
  }
  return type;
}

/// SplitToSequence-11: parts of `split` (a scalar: chunks of that size, the last one smaller; a 1-D tensor:
/// the sizes) or, without it, every index of `axis` (squeezed unless keepdims).
LogicalResult legalizeSplitToSequence(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 2)))
    return failure();
  FailureOr<RankedTensorType> type = staticInput(node, 0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis = normalizedAxis(node, intAttr(node, "axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  int64_t dim = type->getDimSize(*axis);
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (node.getInputs().size() > 1) {
    FailureOr<SmallVector<int64_t>> split = constantInts(node, 1, "the split");
    if (failed(split))
      return failure();
    if (cast<ShapedType>(node.getInputs()[1].getType()).getRank() == 0) {
      int64_t chunk = split->front();
      if (chunk <= 0)
        return nodeError(node) << "the split (input #1) is " << chunk << "; a chunk size must be > 0";
      for (int64_t at = 0; at < dim; at += chunk)
        sizes.push_back(std::min(chunk, dim - at));
    } else {
      sizes = *split;
      int64_t total = 0;
      for (int64_t s : sizes)
        total += s;
      if (llvm::any_of(sizes, [](int64_t s) { return s < 0; }) || total != dim)
        return nodeError(node) << "the split sizes (input #1) must be >= 0 and add up to " << dim
                               << ", the size of axis " << *axis;
    }
  } else {
    sizes.assign(dim, 1);
    squeeze = intAttr(node, "keepdims", 1) == 0;
  }
  Location loc = node.getLoc();
  SmallVector<Value> parts;
  if (!sizes.empty()) {
    auto split = SplitOp::create(rewriter, loc, node.getInputs()[0], rewriter.getI64IntegerAttr(*axis),
                                 rewriter.getDenseI64ArrayAttr(sizes));
    if (failed(verify(split, /*verifyRecursively=*/false))) {
      rewriter.eraseOp(split);
      return nodeError(node) << "the node does not satisfy ptrain's split (see above)";
    }
    parts.assign(split->result_begin(), split->result_end());
  }
  if (squeeze) {
    SmallVector<int64_t> shape(type->getShape());
    shape.erase(shape.begin() + *axis);
    for (Value &part : parts)
      part = ReshapeOp::create(rewriter, loc, type->clone(shape), part);
  }
  rewriter.replaceOp(node, makeSequence(rewriter, loc, parts));
  return success();
}

/// SequenceConstruct-11: the sequence of the inputs.
LogicalResult legalizeSequenceConstruct(OnnxNodeOp node, IRRewriter &rewriter) {
  if (node.getInputs().empty())
    return nodeError(node) << "expects at least 1 input, got 0";
  rewriter.replaceOp(node, makeSequence(rewriter, node.getLoc(), node.getInputs()));
  return success();
}

/// SequenceAt-11: the element at a constant position (negative counts from the end).
LogicalResult legalizeSequenceAt(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  FailureOr<SmallVector<Value>> elements = sequenceElements(node, 0);
  if (failed(elements))
    return failure();
  FailureOr<SmallVector<int64_t>> position = constantInts(node, 1, "the position");
  if (failed(position))
    return failure();
  int64_t n = static_cast<int64_t>(elements->size()), p = position->front();
  if (p < -n || p >= n)
    return nodeError(node) << "position " << p << " is out of range for a sequence of " << n << " tensors";
  Value element = (*elements)[p < 0 ? p + n : p];
  if (!matchesONNXType(element.getType(), node->getResultTypes().front()))
    return nodeError(node) << "the element is " << element.getType() << " but ONNX inferred "
                           << node->getResultTypes().front();
  rewriter.replaceOp(node, element);
  return success();
}

/// SequenceLength-11: a rank-0 i64 constant.
LogicalResult legalizeSequenceLength(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  FailureOr<SmallVector<Value>> elements = sequenceElements(node, 0);
  if (failed(elements))
    return failure();
  auto type = RankedTensorType::get({}, rewriter.getI64Type());
  rewriter.replaceOp(node,
                     arith::ConstantOp::create(rewriter, node.getLoc(),
                                               DenseElementsAttr::get(type, static_cast<int64_t>(elements->size()))));
  return success();
}

/// ConcatFromSequence-11: concat along `axis`, or with new_axis stacked along a new axis.
LogicalResult legalizeConcatFromSequence(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  FailureOr<SmallVector<Value>> elements = sequenceElements(node, 0);
  if (failed(elements))
    return failure();
  if (elements->empty())
    return nodeError(node) << "the sequence is empty";
  auto axisAttr = node.getOnnxAttrs().getAs<IntegerAttr>("axis");
  if (!axisAttr)
    return attrError(node, "axis") << "is required";
  auto first = cast<RankedTensorType>(elements->front().getType());
  bool newAxis = intAttr(node, "new_axis", 0) != 0;
  FailureOr<int64_t> axis = normalizedAxis(node, axisAttr.getInt(), first.getRank(), newAxis ? 1 : 0);
  if (failed(axis))
    return failure();
  Location loc = node.getLoc();
  SmallVector<Value> inputs(*elements);
  if (newAxis) {
    for (Value &v : inputs) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(t.getShape());
      shape.insert(shape.begin() + *axis, 1);
      v = ReshapeOp::create(rewriter, loc, t.clone(shape), v);
    }
  }
  SmallVector<int64_t> shape(cast<RankedTensorType>(inputs.front().getType()).getShape());
  shape[*axis] = 0;
  for (Value v : inputs)
    shape[*axis] += cast<RankedTensorType>(v.getType()).getDimSize(*axis);
  auto concat = ConcatOp::create(rewriter, loc, first.clone(shape), inputs, rewriter.getI64IntegerAttr(*axis));
  return replaceChecked(node, concat, rewriter);
}

/// The values of a constant float tensor as doubles, or nullopt.
std::optional<DenseElementsAttr> constantOf(Value v) {
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr;
  return std::nullopt;
}

/// `f` applied to every element of the float constant `attr`, rounded to its element type.
DenseElementsAttr mapFloats(DenseElementsAttr attr, double (*f)(double)) {
  const llvm::fltSemantics &semantics = cast<FloatType>(attr.getElementType()).getFloatSemantics();
  SmallVector<APFloat> out;
  for (APFloat v : attr.getValues<APFloat>()) {
    bool lost;
    v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    APFloat r(f(v.convertToDouble()));
    r.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
    out.push_back(r);
  }
  return DenseElementsAttr::get(attr.getType(), out);
}

/// The value of `x`, computed by the reference interpreter from constants and float initializers (read from
/// the model file): the unfolded exports compute the rotary tables from a buffer (Hugging Face's inv_freq),
/// which ONNX stores as an initializer like any weight. ptrain has no cos/sin model op, so those initializers
/// are folded into the table (a remark names them: no gradient reaches them through this node). A value that
/// depends on a graph input is an error; at most 2^20 elements are read.
FailureOr<DenseElementsAttr> evaluateFromInitializers(OnnxNodeOp node, Value x) {
  std::string what = ("the input must be computed from constants and initializers (ptrain has no " + node.getOpType() +
                      " model op; the importer folds it)")
                         .str();
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  options.omitBlockArguments = true; // graph inputs are reported below
  if (!x.getDefiningOp() || failed(getBackwardSlice(x, &slice, options))) {
    explainNotConstant(nodeError(node) << what, x);
    return failure();
  }
  auto module = node->getParentOfType<ModuleOp>();
  auto file = module->getAttrOfType<StringAttr>("ptrain.onnx_file");
  SmallVector<std::string> folded;
  int64_t readElements = 0;
  llvm::DenseMap<Value, interp::Tensor> values;
  std::optional<onnx_data::ONNXInitializers> initializers;
  for (Operation *op : slice) {
    for (Value operand : op->getOperands())
      if (isa<BlockArgument>(operand)) {
        explainNotConstant(nodeError(node) << what, operand);
        return failure();
      }
    if (auto read = dyn_cast<StateReadOp>(op)) {
      auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(read, read.getStateAttr());
      auto type = cast<RankedTensorType>(read.getType());
      readElements += type.getNumElements();
      if (!state || state.getKind() != StateKind::Parameter || !file || readElements > (int64_t(1) << 20)) {
        nodeError(node) << what << "; it reads " << (state ? "state '" + state.getKey().str() + "'" : "a state")
                        << ", which is not a small initializer";
        return failure();
      }
      if (!initializers) {
        llvm::Expected<onnx_data::ONNXInitializers> opened = onnx_data::ONNXInitializers::open(file.getValue());
        if (!opened) {
          nodeError(node) << llvm::toString(opened.takeError());
          return failure();
        }
        initializers.emplace(std::move(*opened));
      }
      llvm::Expected<interp::Tensor> tensor = initializers->read(state.getKey());
      if (!tensor) {
        nodeError(node) << llvm::toString(tensor.takeError());
        return failure();
      }
      folded.push_back(state.getKey().str());
      values.try_emplace(read.getResult(), std::move(*tensor));
      continue;
    }
    DenseElementsAttr attr;
    if (op->getNumResults() == 1 && matchPattern(op->getResult(0), m_Constant(&attr))) {
      llvm::Expected<interp::Tensor> tensor = interp::tensorFromDenseElements(attr);
      if (!tensor) {
        nodeError(node) << what << ": " << llvm::toString(tensor.takeError());
        return failure();
      }
      values.try_emplace(op->getResult(0), std::move(*tensor));
      continue;
    }
    std::vector<const interp::Tensor *> operands;
    for (Value operand : op->getOperands())
      operands.push_back(&values.find(operand)->second);
    llvm::Expected<std::vector<interp::Tensor>> results = interp::evaluateOp(op, operands);
    if (!results) {
      nodeError(node) << what << ": " << llvm::toString(results.takeError());
      return failure();
    }
    for (auto [result, tensor] : llvm::zip(op->getResults(), *results))
      values.try_emplace(result, std::move(tensor));
  }
  InFlightDiagnostic remark = emitRemark(node.getLoc());
  remark << "ONNX " << node.getOpType() << " node: folded with the values of initializer(s) ";
  llvm::interleaveComma(folded, remark, [&](const std::string &name) { remark << "'" << name << "'"; });
  remark << " (no gradient reaches them through this node)";
  return interp::denseElementsFromTensor(values.find(x)->second, node.getContext());
}

/// Cos-7 and Sin-7 of a constant (the rotary tables of an unfolded export).
template <double (*F)(double)> LogicalResult legalizeTrig(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 1, 1)))
    return failure();
  Value x = node.getInputs()[0];
  auto type = dyn_cast<RankedTensorType>(x.getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return nodeError(node) << "the input must be a float tensor, got " << x.getType();
  std::optional<DenseElementsAttr> value = constantOf(x);
  if (!value) {
    FailureOr<DenseElementsAttr> computed = evaluateFromInitializers(node, x);
    if (failed(computed))
      return failure();
    value = *computed;
  }
  return replaceChecked(node, arith::ConstantOp::create(rewriter, node.getLoc(), mapFloats(*value, F)), rewriter);
}

double cosine(double x) { return std::cos(x); }
double sine(double x) { return std::sin(x); }

/// Whether element `i` (outer, j, inner) contributes to element `o` (outer, k, inner) of CumSum along one
/// axis: j <= k (j < k exclusive), reversed j >= k (j > k).
bool contributes(int64_t j, int64_t k, bool exclusive, bool reverse) {
  return reverse ? (exclusive ? j > k : j >= k) : (exclusive ? j < k : j <= k);
}

/// CumSum-11/14 folded: sums in double (floats) or int64 (integers), per (outer, inner) line.
DenseElementsAttr foldCumSum(DenseElementsAttr attr, int64_t axis, bool exclusive, bool reverse) {
  auto type = cast<RankedTensorType>(attr.getType());
  int64_t outer = 1, inner = 1, n = type.getDimSize(axis);
  for (int64_t d = 0; d < type.getRank(); ++d)
    (d < axis ? outer : inner) *= d == axis ? 1 : type.getDimSize(d);
  bool isFloat = isa<FloatType>(type.getElementType());
  SmallVector<double> fin;
  SmallVector<int64_t> iin;
  if (isFloat)
    for (APFloat v : attr.getValues<APFloat>()) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      fin.push_back(v.convertToDouble());
    }
  else
    for (APInt v : attr.getValues<APInt>())
      iin.push_back(v.getSExtValue());
  int64_t count = outer * n * inner;
  SmallVector<double> fout(isFloat ? count : 0, 0.0);
  SmallVector<int64_t> iout(isFloat ? 0 : count, 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < n; ++j) {
          if (!contributes(j, k, exclusive, reverse))
            continue;
          int64_t to = (o * n + k) * inner + i, from = (o * n + j) * inner + i;
          if (isFloat)
            fout[to] += fin[from];
          else
            iout[to] += iin[from];
        }
  if (!isFloat) {
    unsigned width = type.getElementType().getIntOrFloatBitWidth();
    SmallVector<APInt> values;
    for (int64_t v : iout)
      values.push_back(APInt(width, static_cast<uint64_t>(v), /*isSigned=*/true, /*implicitTrunc=*/true));
    return DenseElementsAttr::get(type, values);
  }
  const llvm::fltSemantics &semantics = cast<FloatType>(type.getElementType()).getFloatSemantics();
  SmallVector<APFloat> values;
  for (double v : fout) {
    APFloat r(v);
    bool lost;
    r.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
    values.push_back(r);
  }
  return DenseElementsAttr::get(type, values);
}

/// CumSum-11/14: (x, axis) with `exclusive` and `reverse`. A constant x is folded; a float x becomes
/// x @ T along the axis (moved last and back with transposes), T[j][k] = 1 where j contributes to k.
LogicalResult legalizeCumSum(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  FailureOr<RankedTensorType> type = staticInput(node, 0);
  if (failed(type))
    return failure();
  FailureOr<SmallVector<int64_t>> axisValue = constantInts(node, 1, "the axis");
  if (failed(axisValue))
    return failure();
  if (type->getRank() == 0)
    return nodeError(node) << "the input must have rank >= 1";
  FailureOr<int64_t> axis = normalizedAxis(node, axisValue->front(), type->getRank());
  if (failed(axis))
    return failure();
  bool exclusive = intAttr(node, "exclusive", 0) != 0, reverse = intAttr(node, "reverse", 0) != 0;
  Value x = node.getInputs()[0];
  Location loc = node.getLoc();
  if (std::optional<DenseElementsAttr> value = constantOf(x))
    return replaceChecked(node, arith::ConstantOp::create(rewriter, loc, foldCumSum(*value, *axis, exclusive, reverse)),
                          rewriter);
  Type elt = type->getElementType();
  if (!isa<FloatType>(elt)) {
    explainNotConstant(nodeError(node) << "the input must be a constant or a float tensor (an integer CumSum "
                                          "of run-time values has no ptrain model op)",
                       x);
    return failure();
  }
  int64_t rank = type->getRank(), n = type->getDimSize(*axis);
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[*axis], perm[rank - 1]);
  bool moved = *axis != rank - 1;
  Value lhs = moved ? Value(TransposeOp::create(rewriter, loc, x, rewriter.getDenseI64ArrayAttr(perm))) : x;
  SmallVector<APFloat> weights;
  const llvm::fltSemantics &semantics = cast<FloatType>(elt).getFloatSemantics();
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < n; ++k)
      weights.push_back(contributes(j, k, exclusive, reverse) ? APFloat::getOne(semantics)
                                                              : APFloat::getZero(semantics));
  Value triangle =
      arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(RankedTensorType::get({n, n}, elt), weights));
  // matmul takes rank >= 2: a 1-D x is one row.
  if (rank == 1)
    lhs = ReshapeOp::create(rewriter, loc, type->clone({1, n}), lhs);
  Value sums = MatmulOp::create(rewriter, loc, lhs, triangle);
  if (rank == 1)
    sums = ReshapeOp::create(rewriter, loc, *type, sums);
  Value result = moved ? Value(TransposeOp::create(rewriter, loc, sums, rewriter.getDenseI64ArrayAttr(perm))) : sums;
  return replaceFirstOutput(node, result, rewriter);
}

} // namespace

LogicalResult onnx_import::eraseSequences(ModuleOp module) {
  SmallVector<UnrealizedConversionCastOp> sequences;
  module.walk([&](UnrealizedConversionCastOp cast) {
    if (cast->getNumResults() == 1 && isa<TupleType>(cast->getResult(0).getType()))
      sequences.push_back(cast);
  });
  for (UnrealizedConversionCastOp cast : llvm::reverse(sequences)) {
    if (cast->use_empty()) {
      cast->erase();
      continue;
    }
    Operation *user = *cast->getUsers().begin();
    return cast.emitError() << "this ONNX sequence is used by " << user->getName()
                            << (isa<func::ReturnOp>(user) ? " (a graph output)" : "")
                            << ": ptrain's IR has no sequence type; only sequences read by SequenceAt, "
                               "SequenceLength and ConcatFromSequence are imported";
  }
  return success();
}

void onnx_import::populateSequencePatterns(PatternTable &t) {
  t.onOp("SplitToSequence", 11, legalizeSplitToSequence);
  t.onOp("SequenceConstruct", 11, legalizeSequenceConstruct);
  t.onOp("SequenceAt", 11, legalizeSequenceAt);
  t.onOp("SequenceLength", 11, legalizeSequenceLength);
  t.onOp("ConcatFromSequence", 11, legalizeConcatFromSequence);
  t.onOp("CumSum", 11, legalizeCumSum);
  t.onOp("Cos", 7, legalizeTrig<cosine>);
  t.onOp("Sin", 7, legalizeTrig<sine>);
}
