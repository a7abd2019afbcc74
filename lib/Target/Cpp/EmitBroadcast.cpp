//===- EmitBroadcast.cpp - Broadcasting masks, select, reduce, i64 in --emit-cpp ===//
//
// i1 masks (the bool causal mask of Hugging Face GPT-2 exports, ONNX Equal/Less/Not/And) are uint8_t buffers
// (CppTypes.h). Every op here calls one broadcasting kernel of cpu/Broadcast.cpp with its operands' and
// result's shapes; the runtime checks that they broadcast.
//
//===----------------------------------------------------------------------===//

#include "Common/CppTypes.h"
#include "EmitModelOps.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

std::string mlir::ptrain::cpp::emitDimsArray(CallWriter &w, ArrayRef<int64_t> values, const std::string &name) {
  if (values.empty())
    return "nullptr";
  std::string list;
  for (auto [i, v] : llvm::enumerate(values))
    list += (i ? ", " : "") + std::to_string(v);
  w.line("static const int64_t " + name + "[" + std::to_string(values.size()) + "] = {" + list + "};");
  return name;
}

namespace {

/// The pointer, rank and dims arguments of one broadcast operand.
SmallVector<std::string> operandArgs(CallWriter &w, Value v, const std::string &name) {
  ArrayRef<int64_t> shape = tensorOf(v).getShape();
  return {w.ptr(v), std::to_string(shape.size()), emitDimsArray(w, shape, name + "_dims")};
}

/// The rank, dims and pointer arguments of the result.
SmallVector<std::string> resultArgs(CallWriter &w, Value v) {
  ArrayRef<int64_t> shape = tensorOf(v).getShape();
  return {std::to_string(shape.size()), emitDimsArray(w, shape, "out_dims"), w.ptr(v)};
}

LogicalResult emitCompare(CompareOp op, CallWriter &w) {
  Type elem = tensorOf(op.getLhs()).getElementType();
  RuntimeCall callee;
  if (elem.isF32())
    callee = RuntimeCall::ptrain_compare_f32;
  else if (elem.isInteger(64))
    callee = RuntimeCall::ptrain_compare_i64;
  else if (elem.isInteger(1))
    callee = RuntimeCall::ptrain_logical_u8;
  else
    return op.emitError("--emit-cpp: 'ptrain.compare' of ") << elem << " is not supported (f32, i64, i1)";
  SmallVector<std::string> args = {std::to_string(static_cast<int>(op.getKind()))};
  args.append(operandArgs(w, op.getLhs(), "a"));
  args.append(operandArgs(w, op.getRhs(), "b"));
  args.append(resultArgs(w, op.getResult()));
  return w.call(callee, args);
}

/// An i64 `ptrain.binary` other than the step counter's add of equal shapes (KernelTarget.h's add_i64): integer
/// index arithmetic of exports (tf2onnx's guard of negative token ids multiplies and adds with broadcasting).
LogicalResult emitIntegerBinary(BinaryOp op, CallWriter &w) {
  Type elem = tensorOf(op.getResult()).getElementType();
  BinaryKind kind = op.getKind();
  if (!elem.isInteger(64))
    return op.emitError("--emit-cpp: 'ptrain.binary' of ") << elem << " is not supported (f32, i64)";
  if (kind != BinaryKind::Add && kind != BinaryKind::Sub && kind != BinaryKind::Mul && kind != BinaryKind::Max &&
      kind != BinaryKind::Min)
    return op.emitError("--emit-cpp: i64 'ptrain.binary' supports add, sub, mul, max and min, got ")
           << stringifyBinaryKind(kind);
  SmallVector<std::string> args = {std::to_string(static_cast<int>(kind))};
  args.append(operandArgs(w, op.getLhs(), "a"));
  args.append(operandArgs(w, op.getRhs(), "b"));
  args.append(resultArgs(w, op.getResult()));
  return w.call(RuntimeCall::ptrain_binary_i64, args);
}

LogicalResult emitSelect(SelectOp op, CallWriter &w) {
  SmallVector<std::string> args = operandArgs(w, op.getCondition(), "c");
  args.append(operandArgs(w, op.getLhs(), "a"));
  args.append(operandArgs(w, op.getRhs(), "b"));
  args.push_back(std::to_string(elementBytes(tensorOf(op.getResult()).getElementType())));
  args.append(resultArgs(w, op.getResult()));
  return w.call(RuntimeCall::ptrain_select, args);
}

LogicalResult emitBroadcastTo(BroadcastToOp op, CallWriter &w) {
  ArrayRef<int64_t> shape = tensorOf(op.getInput()).getShape();
  SmallVector<std::string> args = {w.ptr(op.getInput()),
                                   std::to_string(elementBytes(tensorOf(op.getInput()).getElementType())),
                                   std::to_string(shape.size()), emitDimsArray(w, shape, "dims")};
  args.append(resultArgs(w, op.getResult()));
  return w.call(RuntimeCall::ptrain_broadcast_to, args);
}

LogicalResult emitReduce(ReduceOp op, CallWriter &w) {
  if (!tensorOf(op.getInput()).getElementType().isF32())
    return op.emitError("--emit-cpp: 'ptrain.reduce' supports f32 tensors only");
  // The kernel reduces to the keepdims shape, which has the result's elements in the same order.
  ArrayRef<int64_t> in = tensorOf(op.getInput()).getShape();
  SmallVector<int64_t> kept(in.begin(), in.end());
  for (int64_t axis : op.getNormalizedAxes())
    kept[axis] = 1;
  return w.call(RuntimeCall::ptrain_reduce_f32,
                {std::to_string(static_cast<int>(op.getKind())), w.ptr(op.getInput()), std::to_string(in.size()),
                 emitDimsArray(w, in, "dims"), std::to_string(kept.size()), emitDimsArray(w, kept, "out_dims"),
                 w.ptr(op.getResult())});
}

} // namespace

LogicalResult mlir::ptrain::cpp::emitBroadcastOp(Operation *op, CallWriter &w) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<CompareOp>([&](CompareOp c) { return emitCompare(c, w); })
      .Case<BinaryOp>([&](BinaryOp b) { return emitIntegerBinary(b, w); })
      .Case<SelectOp>([&](SelectOp s) { return emitSelect(s, w); })
      .Case<BroadcastToOp>([&](BroadcastToOp b) { return emitBroadcastTo(b, w); })
      .Case<ReduceOp>([&](ReduceOp r) { return emitReduce(r, w); })
      .Default([](Operation *other) {
        return other->emitError("--emit-cpp internal error: '") << other->getName() << "' is not a broadcast op";
      });
}
