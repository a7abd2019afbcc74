//===- PTrainTensorParallelOps.cpp - Megatron's f/g pair ---------*- C++ -*-===//
//
// Verifiers and gradient rules of `ptrain.tp_copy` (f) and `ptrain.tp_all_reduce` (g); Shoeybi et al. 2019,
// section 3: f is the identity forward and an all-reduce backward, g the reverse.
//
//===----------------------------------------------------------------------===//

#include "PTrainGridAxes.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainTensorParallelOps.cpp.inc"

/// (C1) `grid` names a grid and (C2) `axis` is one of its axes.
static LogicalResult verifyTensorParallelAxis(Operation *op, SymbolTableCollection &symbolTable, FlatSymbolRefAttr grid,
                                              StringAttr axis) {
  FailureOr<int64_t> group = verifyCollectiveGroup(op, symbolTable, grid, ArrayAttr::get(op->getContext(), {axis}));
  return failure(failed(group));
}

LogicalResult TPCopyOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyTensorParallelAxis(*this, symbolTable, getGridAttr(), getAxisAttr());
}

LogicalResult TPAllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyTensorParallelAxis(*this, symbolTable, getGridAttr(), getAxisAttr());
}

/// f: the parts of the input's gradient that the ranks computed from their columns are summed over the axis.
LogicalResult TPCopyOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(TPAllReduceOp::create(b, getLoc(), resultGrads[0], getGrid(), getAxis()));
  return success();
}

/// g: the sum is replicated, so every rank already holds the whole gradient.
LogicalResult TPAllReduceOp::buildGradients(OpBuilder &, ArrayRef<Value> resultGrads,
                                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(resultGrads[0]);
  return success();
}
