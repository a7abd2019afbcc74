//===- LegalizeLosses.cpp - ONNX SoftmaxCrossEntropyLoss and NLL -*- C++ -*-===//
//
// SoftmaxCrossEntropyLoss-12/13 and NegativeLogLikelihoodLoss-12/13 over scores [N, C, d...] and integer
// labels [N, d...], with the ONNX semantics (https://onnx.ai/onnx/operators/): per position
//   loss[n, d] = -w[label[n, d]] * logp[n, label[n, d], d], w = class weights (input #2) or ones,
// and 0 (weight 0) where label == ignore_index; reduction `none` keeps [N, d...], `sum` adds the positions,
// `mean` divides that sum by the sum of the weights of the positions that are not ignored.
// SoftmaxCrossEntropyLoss with reduction mean or sum is one `ptrain.cross_entropy` with the class dimension
// moved last, carrying the weights, ignore_index and reduction (PTrainCrossEntropy.h; the plain mean without
// them, the plain sum as the mean times the positions). Reduction `none` and NegativeLogLikelihoodLoss are
// built from differentiable
// model ops: log_softmax on axis 1 (SCE only), a one-hot mask `compare eq` of the labels against the class
// index, `select` + `reduce sum` over the classes (so an ignored label outside [0, C) selects nothing and
// never indexes out of range), and the weights picked the same way; every op has a gradient rule.
//
//===----------------------------------------------------------------------===//

#include "LegalizePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

namespace {

/// The reduction attribute: mean (default), sum or none; failure with a diagnostic otherwise.
FailureOr<StringRef> reductionOf(OnnxNodeOp node) {
  auto reduction = node.getOnnxAttrs().getAs<StringAttr>("reduction");
  StringRef mode = reduction ? reduction.getValue() : "mean";
  if (mode != "mean" && mode != "sum" && mode != "none") {
    attrError(node, "reduction") << "is '" << mode << "'; expected 'mean', 'sum' or 'none'";
    return failure();
  }
  return mode;
}

/// Checks scores [N, C, d...] (float), labels [N, d...] (integer) and weights [C] (scores' element type).
LogicalResult checkOperands(OnnxNodeOp node, RankedTensorType scores, RankedTensorType labels, Value weights) {
  if (scores.getRank() < 2 || !isa<FloatType>(scores.getElementType()))
    return nodeError(node) << "scores must be a float tensor [N, C, ...], got " << scores;
  SmallVector<int64_t> expected = {scores.getDimSize(0)};
  llvm::append_range(expected, scores.getShape().drop_front(2));
  if (!labels.getElementType().isInteger() || labels.getShape() != ArrayRef<int64_t>(expected))
    return nodeError(node) << "labels must be integers of shape [N, d...] for scores " << scores << ", got " << labels;
  if (weights) {
    auto type = cast<RankedTensorType>(weights.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != scores.getDimSize(1) ||
        type.getElementType() != scores.getElementType())
      return nodeError(node) << "weights (input #2) must be [C] of the scores' element type, got " << type;
  }
  return success();
}

/// The general negative log-likelihood of `logProb` [N, C, d...] (see the file comment); returns the loss
/// (rank 0, or [N, d...] for `none`) or null after a diagnostic.
Value buildNegativeLogLikelihood(OnnxNodeOp node, IRRewriter &rewriter, Value logProb, Value labels, Value weights,
                                 StringRef mode) {
  Location loc = node.getLoc();
  auto type = cast<RankedTensorType>(logProb.getType());
  auto labelType = cast<RankedTensorType>(labels.getType());
  Type f = type.getElementType(), i = labelType.getElementType();
  int64_t rank = type.getRank(), classes = type.getDimSize(1);
  // Labels as [N, 1, d...] against the class index [1, C, 1...]: the one-hot mask [N, C, d...].
  SmallVector<int64_t> unsqueezed = {type.getDimSize(0), 1};
  llvm::append_range(unsqueezed, type.getShape().drop_front(2));
  Value column = ReshapeOp::create(rewriter, loc, labelType.clone(unsqueezed), labels);
  SmallVector<int64_t> classShape(rank, 1);
  classShape[1] = classes;
  SmallVector<APInt> classIds;
  for (int64_t c = 0; c < classes; ++c)
    classIds.push_back(APInt(i.getIntOrFloatBitWidth(), c, /*isSigned=*/true));
  Value classIndex =
      arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(RankedTensorType::get(classShape, i), classIds));
  Value oneHot = buildChecked<CompareOp>(node, rewriter, CompareKind::Eq, column, classIndex);
  if (!oneHot)
    return nullptr;
  Value zero = scalarConstant(rewriter, loc, f, 0.0);
  auto pick = [&](Value perClass) -> Value {
    Value selected = buildChecked<SelectOp>(node, rewriter, oneHot, perClass, zero);
    return selected ? buildChecked<ReduceOp>(node, rewriter, ReduceKind::Sum, selected, ArrayRef<int64_t>{1}, false)
                    : nullptr;
  };
  Value picked = pick(logProb);
  if (!picked)
    return nullptr;
  Value positionLoss = BinaryOp::create(rewriter, loc, BinaryKind::Sub, zero, picked);
  // The weight of each position: w[label] (or 1), 0 where the label is ignore_index.
  Value weight;
  if (weights) {
    SmallVector<int64_t> weightShape(rank, 1);
    weightShape[1] = classes;
    weight = pick(ReshapeOp::create(rewriter, loc, RankedTensorType::get(weightShape, f), weights));
    if (!weight)
      return nullptr;
  }
  if (Attribute ignore = node.getOnnxAttrs().get("ignore_index")) {
    auto index = dyn_cast<IntegerAttr>(ignore);
    if (!index) {
      attrError(node, "ignore_index") << "must be an integer";
      return nullptr;
    }
    Value ignored = buildChecked<CompareOp>(node, rewriter, CompareKind::Eq, labels,
                                            scalarConstant(rewriter, loc, i, static_cast<double>(index.getInt())));
    if (!ignored)
      return nullptr;
    Value kept = weight ? weight : scalarConstant(rewriter, loc, f, 1.0);
    weight = buildChecked<SelectOp>(node, rewriter, ignored, zero, kept);
    if (!weight)
      return nullptr;
  }
  if (weight)
    positionLoss = BinaryOp::create(rewriter, loc, BinaryKind::Mul, positionLoss, weight);
  if (mode == "none")
    return positionLoss;
  SmallVector<int64_t> all;
  for (int64_t d = 0; d + 1 < rank; ++d)
    all.push_back(d);
  Value total = ReduceOp::create(rewriter, loc, ReduceKind::Sum, positionLoss, ArrayRef<int64_t>(all), false);
  if (mode == "sum")
    return total;
  if (!weight)
    return BinaryOp::create(rewriter, loc, BinaryKind::Div, total,
                            scalarConstant(rewriter, loc, f, static_cast<double>(labelType.getNumElements())));
  // `weight` may be a broadcast scalar (ignore_index without weights): sum it at the positions' shape.
  auto positions = cast<RankedTensorType>(positionLoss.getType());
  if (cast<RankedTensorType>(weight.getType()).getShape() != positions.getShape())
    weight = BroadcastToOp::create(rewriter, loc, positions, weight);
  Value weightSum = ReduceOp::create(rewriter, loc, ReduceKind::Sum, weight, ArrayRef<int64_t>(all), false);
  return BinaryOp::create(rewriter, loc, BinaryKind::Div, total, weightSum);
}

/// Replaces output #1 (log_prob of SCE) by `logProb` when it is used.
LogicalResult replaceLogProb(OnnxNodeOp node, Value logProb) {
  if (node.getNumResults() < 2 || node.getOutputs()[1].use_empty())
    return success();
  if (!matchesONNXType(logProb.getType(), node->getResultTypes()[1]))
    return nodeError(node) << "log_prob has type " << logProb.getType() << " but ONNX inferred "
                           << node->getResultTypes()[1];
  node.getOutputs()[1].replaceAllUsesWith(logProb);
  return success();
}

/// SoftmaxCrossEntropyLoss-12/13: scores [N, C, d...], labels [N, d...], optional weights [C]; outputs the
/// loss and, optionally, log_prob = log_softmax(scores, axis 1).
LogicalResult legalizeSoftmaxCrossEntropyLoss(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 3)))
    return failure();
  Value scores = node.getInputs()[0], labels = node.getInputs()[1];
  Value weights = node.getInputs().size() > 2 ? node.getInputs()[2] : Value();
  auto type = cast<RankedTensorType>(scores.getType());
  FailureOr<StringRef> mode = reductionOf(node);
  if (failed(mode) || failed(checkOperands(node, type, cast<RankedTensorType>(labels.getType()), weights)))
    return failure();
  Value logProb;
  auto getLogProb = [&]() {
    if (!logProb)
      logProb = buildChecked<LogSoftmaxOp>(node, rewriter, scores, rewriter.getI64IntegerAttr(1));
    return logProb;
  };
  Value loss;
  Attribute ignoreAttr = node.getOnnxAttrs().get("ignore_index");
  if (ignoreAttr && !isa<IntegerAttr>(ignoreAttr))
    return attrError(node, "ignore_index") << "must be an integer";
  const bool weighted = weights || ignoreAttr;
  if (*mode != "none") {
    // The class dimension moves last: [N, d..., C].
    Value logits = scores;
    if (type.getRank() > 2) {
      SmallVector<int64_t> perm = {0};
      for (int64_t d = 2; d < type.getRank(); ++d)
        perm.push_back(d);
      perm.push_back(1);
      logits = buildChecked<TransposeOp>(node, rewriter, scores, rewriter.getDenseI64ArrayAttr(perm));
      if (!logits)
        return failure();
    }
    if (weighted) {
      auto ignore = ignoreAttr ? rewriter.getI64IntegerAttr(cast<IntegerAttr>(ignoreAttr).getInt()) : IntegerAttr();
      auto reduction = *mode == "sum" ? rewriter.getStringAttr("sum") : StringAttr();
      loss = buildChecked<CrossEntropyOp>(node, rewriter, logits, labels, weights, ignore, reduction);
    } else {
      loss = buildChecked<CrossEntropyOp>(node, rewriter, logits, labels);
    }
    if (loss && !weighted && *mode == "sum") {
      int64_t positions = cast<RankedTensorType>(labels.getType()).getNumElements();
      loss = BinaryOp::create(rewriter, node.getLoc(), BinaryKind::Mul, loss,
                              scalarConstant(rewriter, node.getLoc(), type.getElementType(), positions));
    }
  } else if (getLogProb()) {
    loss = buildNegativeLogLikelihood(node, rewriter, logProb, labels, weights, *mode);
  }
  if (!loss)
    return failure();
  if (node.getNumResults() > 1 && !node.getOutputs()[1].use_empty() &&
      (!getLogProb() || failed(replaceLogProb(node, logProb))))
    return failure();
  return replaceFirstOutput(node, loss, rewriter);
}

/// NegativeLogLikelihoodLoss-12/13: input [N, C, d...] (log-probabilities), target [N, d...], optional
/// weights [C].
LogicalResult legalizeNegativeLogLikelihoodLoss(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 3)))
    return failure();
  Value input = node.getInputs()[0], target = node.getInputs()[1];
  Value weights = node.getInputs().size() > 2 ? node.getInputs()[2] : Value();
  FailureOr<StringRef> mode = reductionOf(node);
  if (failed(mode) || failed(checkOperands(node, cast<RankedTensorType>(input.getType()),
                                           cast<RankedTensorType>(target.getType()), weights)))
    return failure();
  Value loss = buildNegativeLogLikelihood(node, rewriter, input, target, weights, *mode);
  return loss ? replaceFirstOutput(node, loss, rewriter) : failure();
}

} // namespace

void onnx_import::populateLossPatterns(PatternTable &t) {
  t.onOp("SoftmaxCrossEntropyLoss", 12, legalizeSoftmaxCrossEntropyLoss);
  t.onOp("NegativeLogLikelihoodLoss", 12, legalizeNegativeLogLikelihoodLoss);
}
