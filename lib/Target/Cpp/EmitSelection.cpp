//===- EmitSelection.cpp - cast, gather, log_softmax in --emit-cpp --------===//
//
// ONNX Cast, Gather and LogSoftmax as imported (ptrain.cast, ptrain.gather, ptrain.log_softmax) onto
// cpu/Selection.cpp and cpu/LogSoftmax.cpp. Casts convert between the generated code's buffer types: f32,
// i64 and i1 masks (uint8_t); the step's reduce-max gradient casts its i1 tie mask to f32 this way. Gather
// views the data as [outer, len, inner] around its axis; log_softmax likewise around its axis, so any axis
// works. The gradients are ops of the core: a cast back (float to float only), and log_softmax's
// reduce/unary/binary; gather has no gradient rule.
//
//===----------------------------------------------------------------------===//

#include "Common/CppTypes.h"
#include "EmitModelOps.h"
#include "Common/OpGeometry.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

namespace {

/// The PTRAIN_CAST_* kind of a buffer element type (f32, i64 or an i1 mask: the types the emitter admits).
const char *castKind(Type t) {
  if (t.isF32())
    return "PTRAIN_CAST_F32";
  if (t.isInteger(64))
    return "PTRAIN_CAST_I64";
  return "PTRAIN_CAST_MASK";
}

LogicalResult emitCast(CastOp op, CallWriter &w) {
  // Mixed precision (docs/MixedPrecision.md): fp32 <-> bf16 or f16, rounding to nearest even one way, exact the
  // other.
  Type from = tensorOf(op.getInput()).getElementType(), to = tensorOf(op.getResult()).getElementType();
  std::optional<RuntimeCall> halfCast;
  if (from.isF32() && (to.isBF16() || to.isF16()))
    halfCast = to.isBF16() ? RuntimeCall::ptrain_cast_f32_bf16 : RuntimeCall::ptrain_cast_f32_f16;
  else if ((from.isBF16() || from.isF16()) && to.isF32())
    halfCast = from.isBF16() ? RuntimeCall::ptrain_cast_bf16_f32 : RuntimeCall::ptrain_cast_f16_f32;
  if (halfCast)
    return w.call(*halfCast, {w.ptr(op.getInput()), std::to_string(countOf(op.getInput())), w.ptr(op.getResult())});
  if ((!isModelElementType(from) && !isMaskElementType(from)) || (!isModelElementType(to) && !isMaskElementType(to)))
    return op.emitError("--emit-cpp: ptrain.cast from ")
           << from << " to " << to << " is not supported (f32, i64 and i1 among themselves, f32 <-> bf16, f32 <-> f16)";
  return w.call(RuntimeCall::ptrain_cast_elements,
                {w.ptr(op.getInput()), castKind(tensorOf(op.getInput()).getElementType()),
                 std::to_string(countOf(op.getInput())), castKind(tensorOf(op.getResult()).getElementType()),
                 w.ptr(op.getResult())});
}

LogicalResult emitGather(GatherOp op, CallWriter &w) {
  RankedTensorType indices = tensorOf(op.getIndices()), data = tensorOf(op.getData());
  if (!indices.getElementType().isInteger(64))
    return op.emitError("--emit-cpp: gather indices must be i64, got ") << indices;
  auto [outer, len, inner] = aroundAxis(data.getShape(), op.getAxisAttr().getInt());
  return w.call(RuntimeCall::ptrain_gather_axis,
                {w.ptr(op.getData()), std::to_string(elementBytes(data.getElementType())), std::to_string(outer),
                 std::to_string(len), std::to_string(inner), w.ptr(op.getIndices()),
                 std::to_string(countOf(op.getIndices())), w.ptr(op.getResult())});
}

LogicalResult emitLogSoftmax(LogSoftmaxOp op, CallWriter &w) {
  auto [outer, len, inner] = aroundAxis(tensorOf(op.getInput()).getShape(), op.getAxisAttr().getInt());
  return w.call(RuntimeCall::ptrain_log_softmax_f32, {w.ptr(op.getInput()), std::to_string(outer), std::to_string(len),
                                                      std::to_string(inner), w.ptr(op.getResult())});
}

} // namespace

LogicalResult mlir::ptrain::cpp::emitSelectionOp(Operation *op, CallWriter &w) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<CastOp>([&](CastOp c) { return emitCast(c, w); })
      .Case<GatherOp>([&](GatherOp g) { return emitGather(g, w); })
      .Case<LogSoftmaxOp>([&](LogSoftmaxOp l) { return emitLogSoftmax(l, w); })
      .Default([](Operation *other) {
        return other->emitError("--emit-cpp internal error: '") << other->getName() << "' is not a selection op";
      });
}
