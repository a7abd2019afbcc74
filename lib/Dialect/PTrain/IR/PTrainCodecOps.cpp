//===- PTrainCodecOps.cpp - compress, decompress, compressed collectives -*- C++ -*-===//

#include "PTrainGridAxes.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainCodecOps.cpp.inc"

/// Fails with "<what> must have types (expected), got (actual)" unless the types agree.
static LogicalResult expectTypes(Operation *op, StringRef what, CodecAttrInterface codec, TypeRange actual,
                                 ArrayRef<Type> expected) {
  if (TypeRange(expected) == actual)
    return success();
  InFlightDiagnostic diag = op->emitOpError() << what << " must have types (";
  llvm::interleaveComma(expected, diag);
  diag << ") for codec " << Attribute(codec) << ", got (";
  llvm::interleaveComma(actual, diag);
  return diag << ")";
}

/// The encoding side shared by `compress` and `compressed_all_reduce_start`: (C1)-(C5) of `compress`.
static LogicalResult verifyEncoder(Operation *op, CodecAttrInterface codec, RankedTensorType type,
                                   bool errorFeedback, TypeRange state, TypeRange newState, TypeRange params) {
  // (C1)
  if (failed(codec.verifyForType([&] { return op->emitOpError(); }, type)))
    return failure();
  SmallVector<Type> expectedState;
  if (errorFeedback) {
    // (C2)
    if (state.empty())
      return op->emitOpError("with error_feedback the first state operand is the residual, but there is none");
    // A bf16 / f16 input keeps an f32 residual: g + e is formed in fp32 from the widened input.
    RankedTensorType residual = getCodecComputeType(type);
    if (state.front() != residual) {
      if (residual != type)
        return op->emitOpError() << "residual type " << state.front() << " must be " << residual
                                 << ": the residual of the 16-bit input " << type << " stays f32";
      return op->emitOpError() << "residual type " << state.front() << " must equal the input type " << type;
    }
    expectedState.push_back(residual);
  }
  llvm::append_range(expectedState, codec.getEncoderStateTypes(type));
  // (C3), (C4), (C5)
  if (failed(expectTypes(op, errorFeedback ? "state (residual, then codec state)" : "state", codec, state,
                         expectedState)) ||
      failed(expectTypes(op, "new state", codec, newState, expectedState)) ||
      failed(expectTypes(op, "params", codec, params, codec.getEncoderParamTypes(type))))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// CompressOp
//===----------------------------------------------------------------------===//

LogicalResult CompressOp::verify() {
  auto type = getInput().getType();
  if (failed(verifyEncoder(*this, getCodec(), type, getErrorFeedback(), getState().getTypes(),
                           getNewState().getTypes(), getParams().getTypes())))
    return failure();
  // (C6)
  return expectTypes(*this, "codes", getCodec(), getCodes().getTypes(), getCodec().getCodeTypes(type));
}

//===----------------------------------------------------------------------===//
// DecompressOp
//===----------------------------------------------------------------------===//

LogicalResult DecompressOp::verify() {
  auto type = getResult().getType();
  CodecAttrInterface codec = getCodec();
  // (C1)
  if (failed(codec.verifyForType([&] { return emitOpError(); }, type)))
    return failure();
  // (C2)
  if (failed(expectTypes(*this, "codes", codec, getCodes().getTypes(), codec.getCodeTypes(type))))
    return failure();
  // (C3) codes straight from a compress: same codec, same tensor type.
  if (auto producer = getCodes().empty() ? CompressOp() : getCodes().front().getDefiningOp<CompressOp>()) {
    if (producer.getCodec() != codec)
      return emitOpError() << "codec " << Attribute(codec) << " does not match the codec "
                           << Attribute(producer.getCodec()) << " of the compress that produced its codes";
    if (producer.getInput().getType() != type)
      return emitOpError() << "result type " << type << " does not match the type "
                           << producer.getInput().getType() << " compressed by its compress";
  }
  // (C4), (C5)
  SmallVector<Type> stateTypes = codec.getDecoderStateTypes(type);
  if (failed(expectTypes(*this, "state", codec, getState().getTypes(), stateTypes)) ||
      failed(expectTypes(*this, "new state", codec, getNewState().getTypes(), stateTypes)) ||
      failed(expectTypes(*this, "params", codec, getParams().getTypes(), codec.getDecoderParamTypes(type))))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// CompressedAllReduceStartOp
//===----------------------------------------------------------------------===//

void CompressedAllReduceStartOp::build(OpBuilder &builder, OperationState &state, Value input,
                                       ValueRange codecState, ValueRange params, StringRef grid,
                                       ArrayRef<StringRef> gridAxes, ReductionKind reduction,
                                       CodecAttrInterface codec, bool errorFeedback) {
  auto requestType = RequestType::get(builder.getContext(), input.getType());
  build(builder, state, requestType, codecState.getTypes(), input, codecState, params,
        FlatSymbolRefAttr::get(builder.getContext(), grid), builder.getStrArrayAttr(gridAxes),
        ReductionKindAttr::get(builder.getContext(), reduction), codec,
        errorFeedback ? builder.getUnitAttr() : UnitAttr(), /*value_type=*/TypeAttr());
}

LogicalResult CompressedAllReduceStartOp::verify() {
  if (failed(verifyAxesUnique(*this, getGridAxes(), "collective axes")))
    return failure();
  // (C4)
  if (getReduction() != ReductionKind::Sum && getReduction() != ReductionKind::Avg)
    return emitOpError() << "a compressed all-reduce sums codes: reduction must be sum or avg, got "
                         << stringifyReductionKind(getReduction());
  auto type = getInput().getType();
  // (C5), (C6)
  if (failed(verifyEncoder(*this, getCodec(), type, getErrorFeedback(), getState().getTypes(),
                           getNewState().getTypes(), getParams().getTypes())))
    return failure();
  // (C7)
  if (getRequest().getType().getValueType() != type)
    return emitOpError() << "request must yield the input type " << type << ", got "
                         << getRequest().getType();
  // (C8)
  if (std::optional<Type> values = getValueType()) {
    if (!isHalfFloat(*values))
      return emitOpError() << "value_type must be bf16 or f16 (the 16-bit values a top-k or rand-k site sends), got "
                           << *values;
    if (!isa<TopKAttr, RandKAttr>(getCodec()))
      return emitOpError() << "value_type is the type of the values top-k and rand-k send; the codec "
                           << Attribute(getCodec()) << " sends none";
    if (!cast<RankedTensorType>(type).getElementType().isF32())
      return emitOpError() << "value_type needs an f32 input (the widened form of a 16-bit site); a " << type
                           << " input's values already have its type";
  }
  return success();
}

LogicalResult CompressedAllReduceStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyCollectiveGroup(*this, symbolTable, getGridAttr(), getGridAxes());
}

//===----------------------------------------------------------------------===//
// CompressedReduceScatterStartOp
//===----------------------------------------------------------------------===//

LogicalResult CompressedReduceScatterStartOp::verify() {
  if (failed(verifyAxesUnique(*this, getGridAxes(), "collective axes")))
    return failure();
  // (C4)
  if (getReduction() != ReductionKind::Sum && getReduction() != ReductionKind::Avg)
    return emitOpError() << "a compressed reduce-scatter sums decoded chunks: reduction must be sum or avg, got "
                         << stringifyReductionKind(getReduction());
  auto type = cast<RankedTensorType>(getInput().getType());
  // (C5)
  if (type.getRank() != 1 || !type.hasStaticShape())
    return emitOpError() << "input must be a static 1-D tensor (a flattened bucket), got " << type;
  // (C6)
  auto quant = dyn_cast<QuantAttr>(getCodec());
  if (!quant || quant.getGranularity() == QuantGranularity::Channel)
    return emitOpError() << "codec must be #ptrain.quant with granularity tensor or block (the chunk is 1-D: "
                            "channel granularity would keep a scale per element), got "
                         << Attribute(getCodec());
  auto chunk = dyn_cast<RankedTensorType>(getRequest().getType().getValueType());
  if (!chunk || chunk.getRank() != 1 || chunk.getElementType() != type.getElementType())
    return emitOpError() << "request must yield a 1-D chunk of the input's element type, got "
                         << getRequest().getType();
  // (C7)
  if (failed(getCodec().verifyForType([&] { return emitOpError(); }, chunk)))
    return failure();
  // (C8)
  SmallVector<Type> expected;
  if (getErrorFeedback())
    expected.push_back(type);
  if (!llvm::equal(getState().getTypes(), expected) || !llvm::equal(getNewState().getTypes(), expected)) {
    InFlightDiagnostic diag = emitOpError();
    if (getErrorFeedback())
      diag << "with error_feedback the state and new state are one residual of the input type " << type;
    else
      diag << "without error_feedback there is no state";
    return diag << "; got " << getState().size() << " state and " << getNewState().size() << " new state values";
  }
  return success();
}

LogicalResult CompressedReduceScatterStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> group = verifyCollectiveGroup(*this, symbolTable, getGridAttr(), getGridAxes());
  if (failed(group))
    return failure();
  // (C9)
  int64_t n = cast<RankedTensorType>(getInput().getType()).getDimSize(0);
  int64_t shard = cast<RankedTensorType>(getRequest().getType().getValueType()).getDimSize(0);
  if (n % *group != 0 || shard * *group != n)
    return emitOpError() << "scatters " << n << " elements over " << *group << " ranks " << getGridAxes()
                         << ": the group size must divide them and the request yield " << n / *group
                         << " elements each, got " << shard;
  return success();
}
