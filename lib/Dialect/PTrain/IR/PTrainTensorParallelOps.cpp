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

LogicalResult TPAllReduceOp::verify() {
  Type element = getInput().getType().getElementType();
  const bool half = element.isBF16() || element.isF16();
  // (C3)
  if (half && !getAccumulate())
    return emitOpError() << "a " << element
                         << " all-reduce must declare its accumulation type: add {accumulate = f32} (16-bit values "
                            "widened and summed in fp32, rounded once)";
  // (C4)
  if (std::optional<Type> acc = getAccumulate()) {
    if (!acc->isF32())
      return emitOpError() << "accumulate must be f32, got " << *acc;
    if (!half)
      return emitOpError() << "accumulate = f32 declares how 16-bit values are summed; the input's element type is "
                           << element << ", not bf16 or f16";
  }
  return success();
}

/// f: the parts of the input's gradient that the ranks computed from their columns are summed over the axis
/// (a 16-bit gradient with the fp32 sum that C3 asks for).
LogicalResult TPCopyOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Type element = cast<RankedTensorType>(resultGrads[0].getType()).getElementType();
  TypeAttr accumulate =
      element.isBF16() || element.isF16() ? TypeAttr::get(Float32Type::get(getContext())) : TypeAttr();
  operandGrads.push_back(TPAllReduceOp::create(b, getLoc(), resultGrads[0].getType(), resultGrads[0], getGrid(),
                                               getAxis(), accumulate));
  return success();
}

/// g: the sum is replicated, so every rank already holds the whole gradient.
LogicalResult TPAllReduceOp::buildGradients(OpBuilder &, ArrayRef<Value> resultGrads,
                                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(resultGrads[0]);
  return success();
}

//===----------------------------------------------------------------------===//
// TPSplitOp
//===----------------------------------------------------------------------===//

LogicalResult TPSplitOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  const int64_t dim = getDimAttr().getInt();
  // (C3)
  if (dim < 0 || dim >= in.getRank())
    return emitOpError() << "dim " << dim << " is not a dimension of " << in;
  // (C4), the part that does not need the grid.
  if (out.getRank() != in.getRank() || out.getElementType() != in.getElementType())
    return emitOpError() << "result " << out << " must have the rank and element type of the input " << in;
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (d != dim && out.getDimSize(d) != in.getDimSize(d))
      return emitOpError() << "result " << out << " must equal the input " << in << " outside dimension " << dim;
  return success();
}

LogicalResult TPSplitOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> size =
      verifyCollectiveGroup(*this, symbolTable, getGridAttr(), ArrayAttr::get(getContext(), {getAxisAttr()}));
  if (failed(size))
    return failure();
  // (C4)
  const int64_t dim = getDimAttr().getInt();
  const int64_t whole = cast<RankedTensorType>(getInput().getType()).getDimSize(dim);
  auto out = cast<RankedTensorType>(getResult().getType());
  if (whole % *size != 0 || out.getDimSize(dim) * *size != whole)
    return emitOpError() << "result dimension " << dim << " must be " << whole << " / " << *size
                         << " (the size of axis " << getAxis() << "), got " << out;
  return success();
}

/// The input is replicated: its gradient is every rank's block of the result's gradient, gathered.
LogicalResult TPSplitOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(TPAllGatherOp::create(b, getLoc(), getInput().getType(), resultGrads[0], getGrid(), getAxis(),
                                               getDimAttr().getInt()));
  return success();
}
