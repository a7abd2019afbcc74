//===- EmitCollectives.h - Tensor parallelism in the CPU code generator -*- C++ -*-===//
//
// --emit-cpp of Megatron's f/g pair and of the parameters --ptrain-shard-tp sliced (docs/CodegenCpu.md,
// "Tensor parallelism"): ptrain.tp_copy is an alias of its input (the function emitter plans it like a
// reshape), ptrain.tp_all_reduce a blocking sum over the tp communicator, and a state with ptrain.tp_slice
// is loaded at its global shape and cut to this rank's part at ptrain_step_init, in the layout of the
// multi-rank executor (tensorParallelSlice in include/ptrain/Interpreter/MultiRankExecutor.h).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITCOLLECTIVES_H
#define PTRAIN_TARGET_CPP_EMITCOLLECTIVES_H

#include "EmitCodecs.h"

#include "mlir/Support/LogicalResult.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::ptrain::cpp {

/// ptrain.tp_all_reduce over the communicator variable `comm`: ptrain_all_reduce_start (sum, f32) into the
/// result's buffer and its ptrain_wait at once (the op completes in place; nothing overlaps it).
LogicalResult emitTPAllReduce(TPAllReduceOp op, const std::string &comm, CallWriter &w);

/// A parameter that --ptrain-shard-tp sliced: `ptrain.tp_slice = #ptrain.tp_slice<axis, dim, groups, shape[,
/// padded]>`.
struct TPSlice {
  std::string var; ///< the state's static storage
  std::string dims; ///< its local dims (readTPSlice: `var`_dims; the CPU target's kStateDims + offset)
  std::string key;
  RankedTensorType local;      ///< the state's (local) type
  SmallVector<int64_t> global; ///< the shape of the ONNX initializer
  int64_t dim = 0, groups = 1; ///< dimension `dim` of `global` is groups x tp x chunk
  int64_t axis = 0, parts = 1; ///< the grid axis of the slice and its size
  int64_t padded = 0;          ///< global[dim] padded with zeros to a multiple of parts (ptrain.tp_slice's padded)
};

/// The slice of `state` (std::nullopt without ptrain.tp_slice) on `grid`; an error at the state when there is
/// no grid, its axis is not one of the grid's, or it does not fit the f32 state type on the axis' ranks (its
/// fit to the state's shape is the verifier's, PTrainAttrs.td C1-C9).
FailureOr<std::optional<TPSlice>> readTPSlice(StateOp state, GridOp grid, std::string var);

/// Writes `initStates(path)` (in the generated code's anonymous namespace, after gridCoordinate and
/// ptrain_rank): ptrain_state_init_onnx of the active states with each sliced parameter read at its global
/// shape into a temporary buffer, then this rank's part (entry [:, c, :] of dimension `dim` viewed as
/// groups x parts x chunk, c the rank's coordinate on the slice's axis) copied into the state's storage.
void emitTPStateInit(ArrayRef<TPSlice> slices, llvm::raw_ostream &os);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_EMITCOLLECTIVES_H
