//===- PipelineDriver.h - ptrain_step_train / _eval of a pipeline -*- C++ -*-===//
//
// Shared by --emit-cpp and --emit-cuda: a pipeline module (ptrain.pipeline,
// lowered by --ptrain-lower-to-runtime into per-stage functions with
// ptrain.entry and ptrain.stage) gets ptrain_step_train and ptrain_step_eval,
// which dispatch on this rank's stage (ptrain_stage, set by ptrain_step_init)
// to the stage's host entry point ptrain_step_<func>(tokens, out_loss). Both
// targets name their MPI world `ptrain_world` and write `stepError`, so the
// driver's text is the same.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_PIPELINEDRIVER_H
#define PTRAIN_TARGET_COMMON_PIPELINEDRIVER_H

#include "Common/CommGroups.h"

#include "mlir/IR/BuiltinOps.h"

#include <set>
#include <string>

namespace mlir::ptrain::target {

/// Checks the pipeline module (pp, micro_batches, a grid with axis pp, a function of every stage in `stages`,
/// a train and an eval step per stage mapping tensor<NxSxi64> tokens to a tensor<f32> loss), registers the
/// pp communicator in `comms`, and appends the two drivers to `driverCode` and their names to `entryNames`.
/// Errors are prefixed with comms.tool. `readyVar` is the variable ptrain_step_init sets (the drivers refuse to
/// run before it): the MPI world on the CPU, the NCCL world on CUDA (which may be bootstrapped without MPI).
LogicalResult emitPipelineDriver(ModuleOp module, CommGroups &comms, const std::set<int64_t> &stages,
                                 std::string &driverCode, SmallVectorImpl<std::string> &entryNames,
                                 StringRef readyVar = "ptrain_world");

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_PIPELINEDRIVER_H
