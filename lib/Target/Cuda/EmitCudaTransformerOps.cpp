//===- EmitCudaTransformerOps.cpp - Masks and LLaMA-style ops in --emit-cuda ===//
//
// See EmitCudaTransformerOps.h. The arguments are --emit-cpp's (masks are uint8_t buffers, one byte 0 or 1 per
// element, on the device as on the CPU; dims are host arrays), with one difference: the dropout counter is a
// device tensor, so ptrain_cuda_dropout_f32 takes its pointer and derives the step and the first row of a
// row-packed counter on the device; the layout's other arguments (Common/DropoutLayout.h,
// dropoutLayoutArgs) are the CPU's.
//
//===----------------------------------------------------------------------===//

#include "EmitCudaTransformerOps.h"

#include "Common/CppTypes.h"
#include "Common/DropoutLayout.h"
#include "Common/EmitHelpers.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;
using namespace mlir::ptrain::cuda;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

/// The pointer, rank and dims arguments of one broadcast operand.
void appendOperand(SmallVectorImpl<std::string> &args, Value v, StringRef name, CudaCallWriter &w) {
  ArrayRef<int64_t> shape = shapeOf(v);
  args.append({w.valuePtr(v), str(shape.size()), w.constArray(shape, (name + "_dims").str(), "int64_t")});
}

/// The rank, dims and pointer arguments of the result.
void appendResult(SmallVectorImpl<std::string> &args, Value v, CudaCallWriter &w) {
  ArrayRef<int64_t> shape = shapeOf(v);
  args.append({str(shape.size()), w.constArray(shape, "out_dims", "int64_t"), w.valuePtr(v)});
}

LogicalResult emitCompare(CompareOp op, CudaCallWriter &w) {
  Type elem = tensorOf(op.getLhs()).getElementType();
  CudaCall callee;
  if (elem.isF32())
    callee = CudaCall::ptrain_cuda_compare_f32;
  else if (elem.isInteger(64))
    callee = CudaCall::ptrain_cuda_compare_i64;
  else if (isMaskElementType(elem))
    callee = CudaCall::ptrain_cuda_logical_u8;
  else
    return op.emitError("--emit-cuda: 'ptrain.compare' of ") << elem << " is not supported (f32, i64, i1)";
  SmallVector<std::string> args = {str(static_cast<int>(op.getKind()))};
  appendOperand(args, op.getLhs(), "a", w);
  appendOperand(args, op.getRhs(), "b", w);
  appendResult(args, op.getResult(), w);
  return w.emitCall(callee, args);
}

LogicalResult emitSelect(SelectOp op, CudaCallWriter &w) {
  SmallVector<std::string> args;
  appendOperand(args, op.getCondition(), "c", w);
  appendOperand(args, op.getLhs(), "a", w);
  appendOperand(args, op.getRhs(), "b", w);
  args.push_back(str(elementBytes(tensorOf(op.getResult()).getElementType())));
  appendResult(args, op.getResult(), w);
  return w.emitCall(CudaCall::ptrain_cuda_select, args);
}

LogicalResult emitRmsNorm(RmsNormOp op, CudaCallWriter &w) {
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  const int64_t axis = op.getNormalizedAxis();
  return w.emitCall(CudaCall::ptrain_cuda_rms_norm_fwd_f32,
                    {w.valuePtr(op.getInput()), w.valuePtr(op.getScale()), str(numElements(x.take_front(axis))),
                     str(numElements(x.drop_front(axis))), doubleLiteral(op.getEpsilonAttr().getValueAsDouble()),
                     w.valuePtr(op.getResult())});
}

LogicalResult emitRotary(RotaryEmbeddingOp op, CudaCallWriter &w) {
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  return w.emitCall(CudaCall::ptrain_cuda_rotary_embedding_f32,
                    {w.valuePtr(op.getInput()), w.valuePtr(op.getCos()), w.valuePtr(op.getSin()), str(x[0]), str(x[1]),
                     str(x[2]), str(x[3]), str(op.getRotatedChannels()), op.getInterleaved() ? "1" : "0",
                     w.valuePtr(op.getResult())});
}

/// The counter is a rank-0 i64 tensor (the op's C2), here a device pointer.
LogicalResult emitDropout(DropoutOp op, CudaCallWriter &w) {
  FailureOr<DropoutLayoutArgs> layout = dropoutLayoutArgs(op, "--emit-cuda");
  if (failed(layout))
    return failure();
  // The rank's coordinates on the layout's axes need the grid's communicators set up at init (ptrain_rank,
  // gridCoordinate): a plan with such a layout has them already (its dp / tp all-reduces); register them anyway.
  if (DropoutLayoutAttr layout = getDropoutLayout(op))
    for (StringRef axis : {layout.getShardAxis(), layout.getReplicaAxis()})
      if (!axis.empty())
        for (GridOp grid : op->getParentOfType<ModuleOp>().getOps<GridOp>())
          if (grid.getAxisIndex(axis)) {
            if (failed(w.axisCommunicator(op, grid.getSymName(), axis)))
              return failure();
            break;
          }
  std::string rowOffset = "0";
  if (!layout->replicaCoordinate.empty())
    rowOffset = layout->replicaCoordinate + " * " + str(layout->replicaRows);
  return w.emitCall(CudaCall::ptrain_cuda_dropout_f32,
                    {w.valuePtr(op.getInput()), str(countOf(op.getInput())),
                     doubleLiteral(op.getRatio().convertToDouble()), int64Literal(op.getSeedAttr().getInt()),
                     w.valuePtr(op.getCounter()), str(layout->mid), str(layout->inner), layout->part,
                     str(layout->parts), rowOffset, str(layout->packedRows ? layout->rowElems : 0),
                     w.valuePtr(op.getResult())});
}

} // namespace

bool mlir::ptrain::cuda::isCudaTransformerOp(Operation *op) {
  return isa<CompareOp, SelectOp, RmsNormOp, RotaryEmbeddingOp, DropoutOp>(op);
}

LogicalResult mlir::ptrain::cuda::emitCudaTransformerOp(Operation *op, CudaCallWriter &w) {
  // f32 model tensors (the ops' verifiers require floats; --emit-cuda admits f32), i64 counters, i1 masks.
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<CompareOp>([&](CompareOp c) { return emitCompare(c, w); })
      .Case<SelectOp>([&](SelectOp s) { return emitSelect(s, w); })
      .Case<RmsNormOp>([&](RmsNormOp r) { return emitRmsNorm(r, w); })
      .Case<RotaryEmbeddingOp>([&](RotaryEmbeddingOp r) { return emitRotary(r, w); })
      .Case<DropoutOp>([&](DropoutOp d) { return emitDropout(d, w); })
      .Default([](Operation *other) {
        return other->emitError("--emit-cuda internal error: '") << other->getName() << "' is not a mask or "
                                                                 << "transformer op";
      });
}
