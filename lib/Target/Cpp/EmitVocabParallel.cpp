//===- EmitVocabParallel.cpp - Vocabulary-parallel ops in --emit-cpp ------===//
//
// Megatron-LM's vocabulary-parallel embedding, LM head and cross-entropy (PTrainVocabParallelOps.td,
// --ptrain-shard-tp="vocab-parallel=true") onto cpu/VocabParallel.cpp. The rank-local kernels take the
// rank's part on the op's axis as an argument: the generated code's gridCoordinate(ptrain_rank, axis),
// which is also the rank's position in the axis' communicator (createGroup orders a group's ranks by
// their grid coordinate). ptrain.tp_all_gather is a blocking all-gather along its dimension over that
// communicator (ptrain_all_gather_dim), like ptrain.tp_all_reduce completes in place.
//
//===----------------------------------------------------------------------===//

#include "EmitVocabParallel.h"

#include "Common/CppTypes.h"
#include "EmitModelOps.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

namespace {

/// What every vocabulary-parallel kernel needs: the rank's part and the number of parts of the axis.
struct Part {
  std::string index; ///< a C expression: this rank's coordinate on the axis
  int64_t parts = 1;
};

std::string str(int64_t v) { return std::to_string(v); }

LogicalResult emitAllGather(TPAllGatherOp op, const std::string &comm, CallWriter &w) {
  Value in = op.getInput();
  RankedTensorType type = tensorOf(in); // f32 or i64 (emitVocabParallelOp)
  std::string dims = emitDimsArray(w, type.getShape(), "dims");
  return w.call(RuntimeCall::ptrain_all_gather_dim,
                {comm, w.ptr(in), type.getElementType().isF32() ? "PTRAIN_DTYPE_F32" : "PTRAIN_DTYPE_I64",
                 str(type.getRank()), dims, str(op.getDimAttr().getInt()), w.ptr(op.getResult())});
}

LogicalResult emitEmbedding(VocabParallelEmbeddingOp op, const Part &part, CallWriter &w) {
  ArrayRef<int64_t> table = tensorOf(op.getTable()).getShape();
  return w.call(RuntimeCall::ptrain_vocab_parallel_embedding_fwd_f32,
                {w.ptr(op.getTable()), w.ptr(op.getIds()), str(countOf(op.getIds())), str(table[0]), str(table[1]),
                 part.index, str(part.parts), w.ptr(op.getResult())});
}

LogicalResult emitEmbeddingGrad(VocabParallelEmbeddingGradOp op, const Part &part, CallWriter &w) {
  ArrayRef<int64_t> table = tensorOf(op.getResult()).getShape();
  return w.call(RuntimeCall::ptrain_vocab_parallel_embedding_bwd_f32,
                {w.ptr(op.getGrad()), w.ptr(op.getIds()), str(countOf(op.getIds())), str(table[0]), str(table[1]),
                 part.index, str(part.parts), w.ptr(op.getResult())});
}

LogicalResult emitParts(VocabParallelCrossEntropyPartsOp op, const Part &part, CallWriter &w) {
  return w.call(RuntimeCall::ptrain_vocab_parallel_ce_parts_fwd_f32,
                {w.ptr(op.getLogits()), w.ptr(op.getLabels()), w.ptr(op.getMax()), str(countOf(op.getLabels())),
                 str(tensorOf(op.getLogits()).getShape().back()), str(op.getVocab()), part.index, str(part.parts),
                 w.ptr(op.getSumExp()), w.ptr(op.getTarget())});
}

LogicalResult emitPartsGrad(VocabParallelCrossEntropyPartsGradOp op, const Part &part, CallWriter &w) {
  return w.call(RuntimeCall::ptrain_vocab_parallel_ce_parts_bwd_f32,
                {w.ptr(op.getDSumExp()), w.ptr(op.getDTarget()), w.ptr(op.getLogits()), w.ptr(op.getLabels()),
                 w.ptr(op.getMax()), str(countOf(op.getLabels())), str(tensorOf(op.getLogits()).getShape().back()),
                 str(op.getVocab()), part.index, str(part.parts), w.ptr(op.getResult())});
}

} // namespace

LogicalResult mlir::ptrain::cpp::emitVocabParallelOp(Operation *op, const std::string &comm, GridOp grid,
                                                     CallWriter &w) {
  StringRef axis = vocabParallelAxis(op).second;
  std::optional<unsigned> index = grid ? grid.getAxisIndex(axis) : std::nullopt;
  if (!index)
    return op->emitError("--emit-cpp: no grid axis ") << axis << " for '" << op->getName() << "'";
  // Every operand is a static f32/i64 tensor (the function emitter checked); the kernels need i64 ids and labels.
  for (Value v : op->getOperands())
    if (!tensorOf(v).getElementType().isF32() && !tensorOf(v).getElementType().isInteger(64))
      return op->emitError("--emit-cpp: '") << op->getName() << "' supports f32 and i64 tensors, got " << v.getType();
  Part part{"gridCoordinate(ptrain_rank, " + std::to_string(*index) + ")", grid.getShape()[*index]};
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<TPAllGatherOp>([&](TPAllGatherOp g) { return emitAllGather(g, comm, w); })
      .Case<VocabParallelEmbeddingOp>([&](VocabParallelEmbeddingOp e) { return emitEmbedding(e, part, w); })
      .Case<VocabParallelEmbeddingGradOp>([&](VocabParallelEmbeddingGradOp e) { return emitEmbeddingGrad(e, part, w); })
      .Case<VocabParallelCrossEntropyPartsOp>([&](VocabParallelCrossEntropyPartsOp p) { return emitParts(p, part, w); })
      .Case<VocabParallelCrossEntropyPartsGradOp>(
          [&](VocabParallelCrossEntropyPartsGradOp p) { return emitPartsGrad(p, part, w); })
      .Default([](Operation *other) {
        return other->emitError("--emit-cpp internal error: '")
               << other->getName() << "' is not a vocabulary-parallel op";
      });
}
