//===- EmitCudaModelOps.cpp - Model ops beyond the GPT core in --emit-cuda ===//
//
// See EmitCudaModelOps.h. The CPU target's mapping (lib/Target/Cpp/EmitBroadcast.cpp, EmitSelection.cpp,
// EmitVocabParallel.cpp) onto the CUDA model kernels, with two differences (the optimizers and clipping are
// both targets', lib/Target/Common/OptimizerOps.cpp):
//   - ids and labels are cast to int32 into scratch first (as for ptrain.embedding);
//   - ptrain.tp_all_gather is ptrain_nccl_all_gather (rank-major) and, when the gathered dimension is not
//     the outermost, a permute of [parts, outer, inner] to [outer, parts, inner] in 4-byte words; it is
//     blocking like the CPU's (ptrain_nccl_wait).
// The rank-local vocabulary-parallel kernels take this rank's coordinate on the axis, gridCoordinate(
// ptrain_rank, axis) of the generated code, which is also its position in the axis' NCCL communicator
// (CommGroups.h orders a group's ranks by their grid coordinate).
//
//===----------------------------------------------------------------------===//

#include "EmitCudaModelOps.h"

#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"
#include "Common/OpGeometry.h"
#include "Common/VocabParallelAxis.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;
using namespace mlir::ptrain::cuda;

namespace {

std::string str(int64_t v) { return std::to_string(v); }
bool isF32(Value v) { return tensorOf(v).getElementType().isF32(); }

/// The PTRAIN_CAST_* kind of a device buffer's element type (f32, i64 or an i1 mask, one uint8_t per element).
const char *castKind(Value v) {
  Type t = tensorOf(v).getElementType();
  return t.isF32() ? "PTRAIN_CAST_F32" : isMaskElementType(t) ? "PTRAIN_CAST_MASK" : "PTRAIN_CAST_I64";
}

LogicalResult emitReduce(ReduceOp op, CudaCallWriter &w) {
  if (!isF32(op.getInput()))
    return op.emitError("--emit-cuda: 'ptrain.reduce' supports f32 tensors only");
  // The kernel reduces to the keepdims shape, which has the result's elements in the same order.
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  SmallVector<int64_t> kept(in.begin(), in.end());
  for (int64_t axis : op.getNormalizedAxes())
    kept[axis] = 1;
  return w.emitCall(CudaCall::ptrain_cuda_reduce_f32,
                    {str(static_cast<int>(op.getKind())), w.valuePtr(op.getInput()), str(in.size()),
                     w.constArray(in, "dims", "int64_t"), str(kept.size()), w.constArray(kept, "out_dims", "int64_t"),
                     w.valuePtr(op.getResult())});
}

LogicalResult emitBroadcastTo(BroadcastToOp op, CudaCallWriter &w) {
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op.getResult());
  return w.emitCall(CudaCall::ptrain_cuda_broadcast_to,
                    {w.valuePtr(op.getInput()), str(elementBytes(tensorOf(op.getInput()).getElementType())),
                     str(in.size()), w.constArray(in, "dims", "int64_t"), str(out.size()),
                     w.constArray(out, "out_dims", "int64_t"), w.valuePtr(op.getResult())});
}

LogicalResult emitCast(CastOp op, CudaCallWriter &w) {
  Type from = tensorOf(op.getInput()).getElementType(), to = tensorOf(op.getResult()).getElementType();
  // Mixed precision (docs/MixedPrecision.md): fp32 <-> bf16 or f16 through the cast codec's kernels without a
  // residual, which round as the CPU's ptrain_cast_f32_bf16 / _f32_f16 (to nearest even) and widen exactly.
  auto halfDType = [](Type t) { return t.isBF16() ? "PTRAIN_DTYPE_BF16" : "PTRAIN_DTYPE_F16"; };
  if (from.isF32() && (to.isBF16() || to.isF16()))
    return w.emitCall(
        CudaCall::ptrain_cuda_cast_encode_f32,
        {w.valuePtr(op.getInput()), "nullptr", str(countOf(op.getInput())), halfDType(to), w.valuePtr(op.getResult())});
  if ((from.isBF16() || from.isF16()) && to.isF32())
    return w.emitCall(CudaCall::ptrain_cuda_cast_decode_f32, {w.valuePtr(op.getInput()), str(countOf(op.getInput())),
                                                              halfDType(from), w.valuePtr(op.getResult())});
  auto kind = [](Type t) { return t.isF32() || t.isInteger(64) || isMaskElementType(t); };
  if (!kind(from) || !kind(to))
    return op.emitError("--emit-cuda: a cast from ")
           << from << " to " << to << " is not supported (f32, i64 and i1 among themselves, f32 <-> bf16, f32 <-> f16)";
  return w.emitCall(CudaCall::ptrain_cuda_cast_elements,
                    {w.valuePtr(op.getInput()), castKind(op.getInput()), str(countOf(op.getInput())),
                     castKind(op.getResult()), w.valuePtr(op.getResult())});
}

LogicalResult emitGather(GatherOp op, CudaCallWriter &w) {
  if (isF32(op.getIndices()))
    return op.emitError("--emit-cuda: gather indices must be i64, got ") << op.getIndices().getType();
  RankedTensorType data = tensorOf(op.getData());
  auto [outer, len, inner] = aroundAxis(data.getShape(), op.getAxisAttr().getInt());
  return w.emitCall(CudaCall::ptrain_cuda_gather_axis,
                    {w.valuePtr(op.getData()), str(elementBytes(data.getElementType())), str(outer), str(len),
                     str(inner), w.valuePtr(op.getIndices()), str(countOf(op.getIndices())),
                     w.valuePtr(op.getResult())});
}

LogicalResult emitLogSoftmax(LogSoftmaxOp op, CudaCallWriter &w) {
  auto [outer, len, inner] = aroundAxis(shapeOf(op.getInput()), op.getAxisAttr().getInt());
  return w.emitCall(CudaCall::ptrain_cuda_log_softmax_f32,
                    {w.valuePtr(op.getInput()), str(outer), str(len), str(inner), w.valuePtr(op.getResult())});
}

/// This rank's part of a vocabulary-parallel axis: a C expression and the number of parts.
struct Part {
  std::string index;
  int64_t parts = 1;
};

LogicalResult emitAllGather(TPAllGatherOp op, const std::string &comm, const Part &part, CudaCallWriter &w) {
  Value in = op.getInput(), out = op.getResult();
  ArrayRef<int64_t> shape = shapeOf(in);
  const int64_t dim = op.getDimAttr().getInt();
  const int64_t outer = numElements(shape.take_front(dim));
  const int64_t innerBytes = numElements(shape.drop_front(dim)) * elementBytes(tensorOf(in).getElementType());
  const char *dtype = isF32(in) ? "PTRAIN_DTYPE_F32" : "PTRAIN_DTYPE_I64";
  if (outer == 1) // rank-major is already the result's layout
    return failure(failed(w.emitCall(CudaCall::ptrain_nccl_all_gather,
                                     {comm, w.valuePtr(in), w.valuePtr(out), str(countOf(in)), dtype})) ||
                   failed(w.emitCall(CudaCall::ptrain_nccl_wait, {comm})));
  // Gathered as [parts][outer][inner], then interleaved to [outer][parts][inner] (4-byte words: f32 or i64).
  std::string gathered = w.scratch(bytesOf(out), "float");
  std::string dims = w.constArray({part.parts, outer, innerBytes / 4}, "gathered_dims", "int64_t");
  std::string perm = w.constArray({1, 0, 2}, "perm", "int32_t");
  return failure(
      failed(w.emitCall(CudaCall::ptrain_nccl_all_gather, {comm, w.valuePtr(in), gathered, str(countOf(in)), dtype})) ||
      failed(w.emitCall(CudaCall::ptrain_cuda_permute_f32,
                        {gathered, "3", dims, perm, "reinterpret_cast<float *>(" + w.valuePtr(out) + ")"})) ||
      failed(w.emitCall(CudaCall::ptrain_nccl_wait, {comm})));
}

LogicalResult emitVocabParallel(Operation *op, CudaCallWriter &w) {
  auto [gridName, axis] = vocabParallelAxis(op);
  FailureOr<std::string> comm = w.axisCommunicator(op, gridName, axis);
  if (failed(comm))
    return failure();
  GridOp grid = w.theGrid();
  std::optional<unsigned> index = grid ? grid.getAxisIndex(axis) : std::nullopt;
  if (!index)
    return op->emitError("--emit-cuda: no grid axis ") << axis << " for '" << op->getName() << "'";
  Part part{"gridCoordinate(ptrain_rank, " + std::to_string(*index) + ")", grid.getShape()[*index]};
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<TPAllGatherOp>([&](TPAllGatherOp g) { return emitAllGather(g, *comm, part, w); })
      .Case<VocabParallelEmbeddingOp, VocabParallelEmbeddingGradOp>([&](auto e) -> LogicalResult {
        FailureOr<std::string> ids = int32Ids(e, e.getIds(), w);
        if (failed(ids))
          return failure();
        constexpr bool forward = std::is_same_v<decltype(e), VocabParallelEmbeddingOp>;
        Value table = forward ? e->getOperand(0) : e->getResult(0);
        ArrayRef<int64_t> rows = shapeOf(table);
        return w.emitCall(forward ? CudaCall::ptrain_cuda_vocab_parallel_embedding_fwd_f32
                                  : CudaCall::ptrain_cuda_vocab_parallel_embedding_bwd_f32,
                          {w.valuePtr(e->getOperand(0)), *ids, str(countOf(e.getIds())), str(rows[0]), str(rows[1]),
                           part.index, str(part.parts), w.valuePtr(e->getResult(0))});
      })
      .Case<VocabParallelCrossEntropyPartsOp>([&](VocabParallelCrossEntropyPartsOp p) -> LogicalResult {
        FailureOr<std::string> labels = int32Ids(p, p.getLabels(), w);
        if (failed(labels))
          return failure();
        return w.emitCall(CudaCall::ptrain_cuda_vocab_parallel_ce_parts_fwd_f32,
                          {w.valuePtr(p.getLogits()), *labels, w.valuePtr(p.getMax()), str(countOf(p.getLabels())),
                           str(shapeOf(p.getLogits()).back()), str(p.getVocab()), part.index, str(part.parts),
                           w.valuePtr(p.getSumExp()), w.valuePtr(p.getTarget())});
      })
      .Case<VocabParallelCrossEntropyPartsGradOp>([&](VocabParallelCrossEntropyPartsGradOp p) -> LogicalResult {
        FailureOr<std::string> labels = int32Ids(p, p.getLabels(), w);
        if (failed(labels))
          return failure();
        return w.emitCall(CudaCall::ptrain_cuda_vocab_parallel_ce_parts_bwd_f32,
                          {w.valuePtr(p.getDSumExp()), w.valuePtr(p.getDTarget()), w.valuePtr(p.getLogits()), *labels,
                           w.valuePtr(p.getMax()), str(countOf(p.getLabels())), str(shapeOf(p.getLogits()).back()),
                           str(p.getVocab()), part.index, str(part.parts), w.valuePtr(p.getResult())});
      })
      .Default([](Operation *other) {
        return other->emitError("--emit-cuda internal error: '")
               << other->getName() << "' is not a vocabulary-parallel op";
      });
}

} // namespace

bool mlir::ptrain::cuda::isCudaModelOp(Operation *op) {
  return isa<ReduceOp, BroadcastToOp, CastOp, GatherOp, LogSoftmaxOp, TPAllGatherOp,
             VocabParallelEmbeddingOp, VocabParallelEmbeddingGradOp, VocabParallelCrossEntropyPartsOp,
             VocabParallelCrossEntropyPartsGradOp>(op);
}

FailureOr<std::string> mlir::ptrain::cuda::int32Ids(Operation *op, Value ids, CudaCallWriter &w) {
  if (isF32(ids))
    return op->emitError("--emit-cuda: '") << op->getName() << "' needs i64 ids or labels, got " << ids.getType();
  std::string out = w.scratch(4 * countOf(ids), "int32_t");
  if (failed(w.emitCall(CudaCall::ptrain_cuda_cast_i64_i32, {w.valuePtr(ids), str(countOf(ids)), out})))
    return failure();
  return out;
}

LogicalResult mlir::ptrain::cuda::emitCudaModelOp(Operation *op, CudaCallWriter &w) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<ReduceOp>([&](ReduceOp r) { return emitReduce(r, w); })
      .Case<BroadcastToOp>([&](BroadcastToOp b) { return emitBroadcastTo(b, w); })
      .Case<CastOp>([&](CastOp c) { return emitCast(c, w); })
      .Case<GatherOp>([&](GatherOp g) { return emitGather(g, w); })
      .Case<LogSoftmaxOp>([&](LogSoftmaxOp l) { return emitLogSoftmax(l, w); })
      .Case<TPAllGatherOp, VocabParallelEmbeddingOp, VocabParallelEmbeddingGradOp, VocabParallelCrossEntropyPartsOp,
            VocabParallelCrossEntropyPartsGradOp>([&](Operation *o) { return emitVocabParallel(o, w); })
      .Default([](Operation *other) {
        return other->emitError("--emit-cuda internal error: '") << other->getName() << "' is not a model op here";
      });
}
