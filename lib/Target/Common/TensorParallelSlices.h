//===- TensorParallelSlices.h - Parameters sliced over tp at init -*- C++ -*-===//
//
// A state with ptrain.tp_slice (--ptrain-shard-tp) is loaded at its global
// shape and cut to this rank's part at ptrain_step_init, in the layout of the
// multi-rank executor (tensorParallelSlice in
// include/ptrain/Interpreter/MultiRankExecutor.h). Both targets write the same
// initStates (docs/CodegenCpu.md, "Tensor parallelism"; the CUDA target then
// copies the host states to the device).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_TENSORPARALLELSLICES_H
#define PTRAIN_TARGET_COMMON_TENSORPARALLELSLICES_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::ptrain::target {

/// A parameter that --ptrain-shard-tp sliced: `ptrain.tp_slice = #ptrain.tp_slice<axis, dim, groups, shape[,
/// padded]>`.
struct TPSlice {
  std::string var;  ///< the state's static storage
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

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_TENSORPARALLELSLICES_H
