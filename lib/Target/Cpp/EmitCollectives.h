//===- EmitCollectives.h - Tensor parallelism in the CPU code generator -*- C++ -*-===//
//
// --emit-cpp of Megatron's f/g pair (docs/CodegenCpu.md, "Tensor parallelism"): ptrain.tp_copy is an alias of
// its input (the function emitter plans it like a reshape), ptrain.tp_all_reduce a blocking sum over the tp
// communicator. The parameters --ptrain-shard-tp sliced are both targets' (Common/TensorParallelSlices.h).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITCOLLECTIVES_H
#define PTRAIN_TARGET_CPP_EMITCOLLECTIVES_H

#include "EmitCodecs.h"

#include "Common/TensorParallelSlices.h"

#include "mlir/Support/LogicalResult.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include <string>

namespace mlir::ptrain::cpp {

/// ptrain.tp_all_reduce over the communicator variable `comm`: ptrain_all_reduce_start (sum, f32) into the
/// result's buffer and its ptrain_wait at once (the op completes in place; nothing overlaps it).
LogicalResult emitTPAllReduce(TPAllReduceOp op, const std::string &comm, CallWriter &w);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_EMITCOLLECTIVES_H
