//===- EmitTransformer.cpp - rms_norm, rotary_embedding, dropout in --emit-cpp ---===//
//
// The LLaMA-style ops onto cpu/Transformer.cpp and ptrain.dropout onto cpu/Dropout.cpp. Like layer_norm's
// emitter, rms_norm views its input as rows x cols (cols = the normalized trailing dimensions); unlike it,
// no statistics are saved: the gradient is built from core ops that recompute them.
//
//===----------------------------------------------------------------------===//

#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"
#include "EmitModelOps.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

namespace {

/// An int64_t expression of any seed (INT64_MIN has no decimal literal).
std::string seedLiteral(int64_t seed) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "static_cast<int64_t>(0x%016llxULL)",
                static_cast<unsigned long long>(static_cast<uint64_t>(seed)));
  return buf;
}

LogicalResult emitRmsNorm(RmsNormOp op, CallWriter &w) {
  ArrayRef<int64_t> x = tensorOf(op.getInput()).getShape();
  int64_t axis = op.getNormalizedAxis();
  int64_t rows = numElements(x.take_front(axis)), cols = numElements(x.drop_front(axis));
  return w.call(RuntimeCall::ptrain_rms_norm_fwd_f32,
                {w.ptr(op.getInput()), w.ptr(op.getScale()), std::to_string(rows), std::to_string(cols),
                 doubleLiteral(op.getEpsilonAttr().getValueAsDouble()), w.ptr(op.getResult())});
}

LogicalResult emitRotary(RotaryEmbeddingOp op, CallWriter &w) {
  ArrayRef<int64_t> x = tensorOf(op.getInput()).getShape();
  return w.call(RuntimeCall::ptrain_rotary_embedding_f32,
                {w.ptr(op.getInput()), w.ptr(op.getCos()), w.ptr(op.getSin()), std::to_string(x[0]),
                 std::to_string(x[1]), std::to_string(x[2]), std::to_string(x[3]),
                 std::to_string(op.getRotatedChannels()), op.getInterleaved() ? "1" : "0", w.ptr(op.getResult())});
}

LogicalResult emitDropout(DropoutOp op, CallWriter &w) {
  RankedTensorType counter = tensorOf(op.getCounter());
  if (counter.getRank() != 0 || !counter.getElementType().isInteger(64))
    return op.emitError("--emit-cpp: the dropout counter must be tensor<i64>, got ") << counter;
  FailureOr<DropoutLayoutArgs> layout = dropoutLayoutArgs(op, "--emit-cpp");
  if (failed(layout))
    return failure();
  const std::string count = w.ptr(op.getCounter()) + "[0]";
  std::vector<std::string> args = {w.ptr(op.getInput()), std::to_string(countOf(op.getInput())),
                                   doubleLiteral(op.getRatio().convertToDouble()),
                                   seedLiteral(op.getSeedAttr().getInt())};
  if (!layout->global) {
    args.push_back(count);
    args.push_back(w.ptr(op.getResult()));
    return w.call(RuntimeCall::ptrain_dropout_f32, args);
  }
  std::string step = count, base = "0";
  if (layout->packedRows) {
    // The counter packs step + 2^32 row (lib/Transforms/DropoutRows.cpp).
    step = "(" + count + " & 0xFFFFFFFFLL)";
    std::string row = "(" + count + " >> 32)";
    if (!layout->replicaCoordinate.empty())
      row = "(" + row + " + " + layout->replicaCoordinate + " * " + std::to_string(layout->replicaRows) + ")";
    base = row + " * " + std::to_string(layout->rowElems);
  }
  for (const std::string &arg : {step, std::to_string(layout->mid), std::to_string(layout->inner), layout->part,
                                 std::to_string(layout->parts), base, w.ptr(op.getResult())})
    args.push_back(arg);
  return w.call(RuntimeCall::ptrain_dropout_global_f32, args);
}

} // namespace

LogicalResult mlir::ptrain::cpp::emitTransformerOp(Operation *op, CallWriter &w) {
  // Operands and results are f32 (model floats; the ops' verifiers require float types and the emitter's
  // type check admits f32 only), the dropout counter i64.
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<RmsNormOp>([&](RmsNormOp r) { return emitRmsNorm(r, w); })
      .Case<RotaryEmbeddingOp>([&](RotaryEmbeddingOp r) { return emitRotary(r, w); })
      .Case<DropoutOp>([&](DropoutOp d) { return emitDropout(d, w); })
      .Default([](Operation *other) {
        return other->emitError("--emit-cpp internal error: '") << other->getName() << "' is not a transformer op";
      });
}
