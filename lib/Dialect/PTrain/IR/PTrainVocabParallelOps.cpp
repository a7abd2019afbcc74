//===- PTrainVocabParallelOps.cpp - vocabulary-parallel embedding and loss -*- C++ -*-===//
//
// Verifiers and gradient rules of the vocabulary-parallel ops (PTrainVocabParallelOps.td): Megatron-LM's
// VocabParallelEmbedding and _VocabParallelCrossEntropy as SPMD ops over one grid axis.
//
//===----------------------------------------------------------------------===//

#include "PTrainGridAxes.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainVocabParallelOps.cpp.inc"

/// (C1) `grid` names a grid and (C2) `axis` is one of its axes; the group's size.
static FailureOr<int64_t> verifyVocabAxis(Operation *op, SymbolTableCollection &symbolTable, FlatSymbolRefAttr grid,
                                          StringAttr axis) {
  return verifyCollectiveGroup(op, symbolTable, grid, ArrayAttr::get(op->getContext(), {axis}));
}

//===----------------------------------------------------------------------===//
// TPAllGatherOp
//===----------------------------------------------------------------------===//

LogicalResult TPAllGatherOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  // (C3)
  if (getDimAttr().getInt() < 0 || getDimAttr().getInt() >= in.getRank())
    return emitOpError() << "dim " << getDimAttr().getInt() << " is not a dimension of " << in;
  // (C4), the part that does not need the grid.
  SmallVector<int64_t> expected(in.getShape());
  if (out.getRank() != in.getRank() || out.getElementType() != in.getElementType())
    return emitOpError() << "result " << out << " must have the rank and element type of the input " << in;
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (d != getDimAttr().getInt() && out.getDimSize(d) != in.getDimSize(d))
      return emitOpError() << "result " << out << " must equal the input " << in << " outside dimension "
                           << getDimAttr().getInt();
  return success();
}

LogicalResult TPAllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> size = verifyVocabAxis(*this, symbolTable, getGridAttr(), getAxisAttr());
  if (failed(size))
    return failure();
  // (C4)
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (out.getDimSize(getDimAttr().getInt()) != in.getDimSize(getDimAttr().getInt()) * *size)
    return emitOpError() << "result dimension " << getDimAttr().getInt() << " must be "
                         << in.getDimSize(getDimAttr().getInt()) << " x " << *size << " (the size of axis " << getAxis()
                         << "), got " << out;
  return success();
}

//===----------------------------------------------------------------------===//
// VocabParallelEmbeddingOp, VocabParallelEmbeddingGradOp
//===----------------------------------------------------------------------===//

/// (C3)/(C4) of both embedding ops: a 2-D float table, integer ids, rows of ids.shape x H.
static LogicalResult verifyEmbeddingShapes(Operation *op, RankedTensorType table, RankedTensorType ids,
                                           RankedTensorType rows, StringRef rowsName) {
  if (table.getRank() != 2 || !isa<FloatType>(table.getElementType()))
    return op->emitOpError() << "table must be a 2-D float tensor (Vl x H), got " << table;
  if (!ids.getElementType().isSignlessInteger() || ids.getElementType().isInteger(1))
    return op->emitOpError() << "ids must be integers, got " << ids;
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(table.getDimSize(1));
  if (rows.getShape() != ArrayRef(expected) || rows.getElementType() != table.getElementType())
    return op->emitOpError() << rowsName << " must be ids.shape x H with the table's element type, got " << rows
                             << " for ids " << ids << " and table " << table;
  return success();
}

LogicalResult VocabParallelEmbeddingOp::verify() {
  return verifyEmbeddingShapes(*this, getTable().getType(), getIds().getType(), getResult().getType(), "result");
}

LogicalResult VocabParallelEmbeddingOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return failure(failed(verifyVocabAxis(*this, symbolTable, getGridAttr(), getAxisAttr())));
}

LogicalResult VocabParallelEmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(VocabParallelEmbeddingGradOp::create(b, getLoc(), getTable().getType(), resultGrads[0],
                                                              getIds(), getGrid(), getAxis()));
  operandGrads.push_back(nullptr);
  return success();
}

LogicalResult VocabParallelEmbeddingGradOp::verify() {
  return verifyEmbeddingShapes(*this, getResult().getType(), getIds().getType(), getGrad().getType(), "grad");
}

LogicalResult VocabParallelEmbeddingGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return failure(failed(verifyVocabAxis(*this, symbolTable, getGridAttr(), getAxisAttr())));
}

//===----------------------------------------------------------------------===//
// VocabParallelCrossEntropyPartsOp, VocabParallelCrossEntropyPartsGradOp
//===----------------------------------------------------------------------===//

/// (C3)/(C4) of both cross-entropy ops: float logits [..., Vl], integer labels [...], per-position `perRow`
/// of the labels' shape and the logits' element type, vocab >= 1.
static LogicalResult verifyPartsShapes(Operation *op, RankedTensorType logits, RankedTensorType labels,
                                       RankedTensorType perRow, int64_t vocab) {
  if (logits.getRank() < 1 || !isa<FloatType>(logits.getElementType()))
    return op->emitOpError() << "logits must be a float tensor of rank >= 1, got " << logits;
  if (!labels.getElementType().isSignlessInteger() || labels.getElementType().isInteger(1) ||
      labels.getShape() != logits.getShape().drop_back())
    return op->emitOpError() << "labels must be integers of the logits' shape without the class dimension, got "
                             << labels << " for logits " << logits;
  if (perRow.getShape() != labels.getShape() || perRow.getElementType() != logits.getElementType())
    return op->emitOpError() << "max and the per-position sums must have the labels' shape and the logits' "
                                "element type, got "
                             << perRow;
  if (vocab < 1)
    return op->emitOpError() << "vocab must be >= 1, got " << vocab;
  return success();
}

void VocabParallelCrossEntropyPartsOp::build(OpBuilder &b, OperationState &state, Value logits, Value labels, Value max,
                                             StringRef grid, StringRef axis, int64_t vocab) {
  build(b, state, max.getType(), max.getType(), logits, labels, max, grid, axis, vocab);
}

LogicalResult VocabParallelCrossEntropyPartsOp::verify() {
  return verifyPartsShapes(*this, cast<RankedTensorType>(getLogits().getType()),
                           cast<RankedTensorType>(getLabels().getType()), cast<RankedTensorType>(getMax().getType()),
                           getVocabAttr().getInt());
}

LogicalResult VocabParallelCrossEntropyPartsOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return failure(failed(verifyVocabAxis(*this, symbolTable, getGridAttr(), getAxisAttr())));
}

LogicalResult VocabParallelCrossEntropyPartsOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                                               SmallVectorImpl<Value> &operandGrads) {
  auto zeros = [&]() -> Value {
    auto type = cast<RankedTensorType>(getMax().getType());
    return arith::ConstantOp::create(b, getLoc(),
                                     DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
  };
  Value dSum = resultGrads[0] ? resultGrads[0] : zeros();
  Value dTarget = resultGrads[1] ? resultGrads[1] : zeros();
  operandGrads.push_back(VocabParallelCrossEntropyPartsGradOp::create(
      b, getLoc(), dSum, dTarget, getLogits(), getLabels(), getMax(), getGrid(), getAxis(), getVocabAttr().getInt()));
  operandGrads.push_back(nullptr); // labels
  operandGrads.push_back(nullptr); // max: a shift the loss does not depend on
  return success();
}

void VocabParallelCrossEntropyPartsGradOp::build(OpBuilder &b, OperationState &state, Value dSumExp, Value dTarget,
                                                 Value logits, Value labels, Value max, StringRef grid, StringRef axis,
                                                 int64_t vocab) {
  build(b, state, logits.getType(), dSumExp, dTarget, logits, labels, max, grid, axis, vocab);
}

LogicalResult VocabParallelCrossEntropyPartsGradOp::verify() {
  return verifyPartsShapes(*this, cast<RankedTensorType>(getLogits().getType()),
                           cast<RankedTensorType>(getLabels().getType()), cast<RankedTensorType>(getMax().getType()),
                           getVocabAttr().getInt());
}

LogicalResult VocabParallelCrossEntropyPartsGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return failure(failed(verifyVocabAxis(*this, symbolTable, getGridAttr(), getAxisAttr())));
}
