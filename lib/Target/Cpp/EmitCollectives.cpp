//===- EmitCollectives.cpp - Tensor parallelism in the CPU code generator ===//
//
// Megatron's f/g pair (Shoeybi et al. 2019, section 3) in generated code (the sliced parameters of
// --ptrain-shard-tp: Common/TensorParallelSlices.h). f (ptrain.tp_copy) needs no code: the function emitter aliases its
// result to its input. g (ptrain.tp_all_reduce) is one all-reduce (sum) over the communicator of the tp axis, started
// and waited at once. The tp communicator is one of the groups ptrain_step_init creates up front from the grid (the
// ranks equal to this one on every other axis; rank = row-major coordinate over (dp, pp, tp), tp fastest).
//
//===----------------------------------------------------------------------===//

#include "EmitCollectives.h"

#include "Common/CppTypes.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

LogicalResult mlir::ptrain::cpp::emitTPAllReduce(TPAllReduceOp op, const std::string &comm, CallWriter &w) {
  Value in = op.getInput(), out = op.getResult();
  if (!tensorOf(in).getElementType().isF32())
    return op.emitError("--emit-cpp: a tensor-parallel all-reduce of a non-f32 tensor is not supported");
  // A failing start leaves no request; a failing wait frees it (ptrain_wait).
  w.line("ptrain_request_t tp_request = nullptr;");
  if (failed(w.call(RuntimeCall::ptrain_all_reduce_start, {comm, w.ptr(in), w.ptr(out), std::to_string(countOf(in)),
                                                           "PTRAIN_DTYPE_F32", "PTRAIN_REDUCE_SUM", "&tp_request"})))
    return failure();
  return w.call(RuntimeCall::ptrain_wait, {"tp_request"});
}
