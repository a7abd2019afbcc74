//===- EmitCudaComm.h - NCCL communicators of --emit-cuda -------*- C++ -*-===//
//
// The multi-rank part of a generated CUDA step (docs/CodegenCuda.md,
// "Multi-rank steps"): MPI_COMM_WORLD (the CPU runtime's ptrain_comm_init) is
// the bootstrap, ptrain_nccl_comm_init makes the NCCL world over it (its
// unique id all-gathered through MPI, the device chosen from LOCAL_RANK /
// OMPI_COMM_WORLD_LOCAL_RANK), and ptrain_nccl_comm_split one communicator
// per group of lib/Target/Cpp/CommGroups.h, its ranks ordered as the CPU
// target's createGroup orders them (by world rank), so a pp peer is the
// stage coordinate on both targets.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_EMITCUDACOMM_H
#define PTRAIN_TARGET_CUDA_EMITCUDACOMM_H

#include "Cpp/CommGroups.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::ptrain::cuda {

/// Writes the communicator variables (ptrain_world, nccl_world, one ptrain_nccl_comm_t per group), the grid
/// (kGridShape, kWorldSize), ptrain_rank / ptrain_stage, gridCoordinate and createGroup, in the generated
/// code's anonymous namespace. Returns the world size (the grid's product).
int64_t emitCudaCommunicators(const cpp::CommGroups &comms, llvm::raw_ostream &os);

/// Writes the start of ptrain_step_init: MPI, the world size check (before any device is touched), the device
/// check, the NCCL world, every group, the stage coordinate and, for a pipeline (`stages` not empty), the
/// stage's state table.
void emitCudaCommInit(const cpp::CommGroups &comms, ArrayRef<int64_t> stages, llvm::raw_ostream &os);

/// Writes ptrain_step_rank, ptrain_step_finalize (every communicator destroyed, MPI last) and ptrain_step_abort
/// (MPI_Abort of the job), the entry points ptrain-run calls on a multi-rank step.
void emitCudaCommEntryPoints(const cpp::CommGroups &comms, llvm::raw_ostream &os);

/// NCCL matches the sends and receives between two ranks in posting order (it has no tags): for every entry
/// kind (ptrain.entry) and pair of stages, the tags stage s sends to stage t (its ops in program order, calls
/// followed) must be the tags stage t receives from s, in the same order. An error names the first send or
/// receive out of order. Then the stages' NCCL groups (runs of consecutive starts, as the emitter posts them)
/// are run as one stream each under the strict rule (a transfer ends when its match is posted): a schedule
/// whose groups would wait on each other is an error naming the stuck transfer.
LogicalResult checkPointToPoint(ModuleOp module);

} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_CUDA_EMITCUDACOMM_H
