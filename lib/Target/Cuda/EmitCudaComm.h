//===- EmitCudaComm.h - NCCL communicators of --emit-cuda -------*- C++ -*-===//
//
// The multi-rank part of a generated CUDA step (docs/CodegenCuda.md,
// "Multi-rank steps"): MPI_COMM_WORLD (the CPU runtime's ptrain_comm_init) is
// the bootstrap, ptrain_nccl_comm_init makes the NCCL world over it (its
// unique id all-gathered through MPI, the device chosen from LOCAL_RANK /
// OMPI_COMM_WORLD_LOCAL_RANK), and ptrain_nccl_comm_split one communicator
// per group of lib/Target/Common/CommGroups.h, its ranks ordered as the CPU
// target's createGroup orders them (by world rank), so a pp peer is the
// stage coordinate on both targets.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_EMITCUDACOMM_H
#define PTRAIN_TARGET_CUDA_EMITCUDACOMM_H

#include "Common/CommGroups.h"
#include "CudaCallTable.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::ptrain::cuda {

/// The pipeline's point-to-point channels (docs/CodegenCuda.md, "Streams and events"): one NCCL communicator
/// and one communication stream per ordered pair of stages (from -> to) a send or receive names, split from the
/// pp group at ptrain_step_init, so that transfers in the two directions (and to different peers) progress
/// beside each other and beside the compute stream, as MPI's nonblocking transfers do. Each send or receive op
/// has two events: `ev_posted[k]`, recorded on the compute stream at the start op and waited on by the
/// channel's stream (the kernels that write the sent buffer, or last read the receive buffer's memory, are
/// done), and `ev_done[k]`, recorded on the channel's stream after the transfer and waited on by the compute
/// stream at the IR's ptrain.wait (after the host watchdog ptrain_nccl_wait_event).
class PipeChannels {
public:
  struct Channel {
    int64_t from, to;
    std::string comm;   ///< ptrain_nccl_comm_t over the two stages (null on the other ranks)
    std::string stream; ///< the channel's communication stream on this rank
  };
  /// A runtime call of the generated code: the callee and its arguments.
  using Call = std::pair<CudaCall, SmallVector<std::string>>;

  /// The calls of a send (`isSend`) or receive `op` of stage `stage` with peer `peer` over the pp group
  /// `ppComm`, on device buffer `buffer` of `bytes` bytes; registers its channel and events on first use.
  SmallVector<Call> startCalls(Operation *op, Value request, bool isSend, int64_t stage, int64_t peer, StringRef ppComm,
                               const std::string &buffer, int64_t bytes);
  /// The calls of the ptrain.wait of `request` if a send or receive started it (else empty): the watchdog
  /// over its transfer, then the compute stream's wait on the transfer's event.
  SmallVector<Call> waitCalls(Value request) const;

  bool empty() const { return channels.empty(); }

  std::vector<Channel> channels;
  std::string ppComm; ///< the pp group communicator the channels are split from
  int64_t numEvents = 0;

private:
  struct Pending {
    std::string comm, done, what;
  };
  llvm::DenseMap<Operation *, int64_t> eventOf; ///< per op: the emitter's dry run and its real run agree
  llvm::DenseMap<Value, Pending> pending;
};

/// Writes the communicator variables (ptrain_world, nccl_world, one ptrain_nccl_comm_t per group and per
/// pipeline channel, the channels' streams and the transfer events), the grid (kGridShape, kWorldSize),
/// ptrain_rank / ptrain_stage, gridCoordinate and createGroup, in the generated code's anonymous namespace.
/// Returns the world size (the grid's product).
int64_t emitCudaCommunicators(const target::CommGroups &comms, const PipeChannels &pipes, llvm::raw_ostream &os);

/// Writes the start of ptrain_step_init: the bootstrap (a torchrun-style TCP rendezvous when RANK and
/// WORLD_SIZE are set outside mpirun, else MPI), the world size check (before any device is touched), the device
/// check, the NCCL world, every group, the stage coordinate, the pipeline channels (communicators split from
/// the pp group, their streams, the events) and, for a pipeline (`stages` not empty), the stage's state table and the
/// size of its d_states (active_state_bytes).
void emitCudaCommInit(const target::CommGroups &comms, const PipeChannels &pipes, ArrayRef<int64_t> stages,
                      llvm::raw_ostream &os);

/// Writes the part of ptrain_step_init after the device blocks exist: every channel of this rank connected by
/// one NCCL group of 1-byte transfers (NCCL connects point-to-point peers on first use, which needs both
/// sides; done here, no transfer of the step waits on a connection).
void emitCudaPipeConnect(const PipeChannels &pipes, llvm::raw_ostream &os);

/// Writes ptrain_step_rank, ptrain_step_finalize (the transfer events, every communicator, then the channels' streams
/// and the compute stream destroyed, MPI last) and ptrain_step_abort (MPI_Abort of the job), the entry points
/// ptrain-run calls on a multi-rank step.
void emitCudaCommEntryPoints(const target::CommGroups &comms, const PipeChannels &pipes, llvm::raw_ostream &os);

/// NCCL matches the sends and receives between two ranks in posting order (it has no tags): for every entry
/// kind (ptrain.entry) and ordered pair of stages (one channel), the tags stage s sends to stage t (its ops in
/// program order, calls followed) must be the tags stage t receives from s, in the same order; every start's
/// request must be waited on in its function. An error names the first send or receive out of order. Then
/// every stage runs as the generated code does (a transfer starts on its channel's stream once both stages'
/// compute streams reached its start op and the channel's earlier transfers are done; a wait holds its stage
/// until the transfer is done; an all-reduce over pp holds the compute stream until every stage of its group
/// reaches it: all stages, or the members of a ptrain.subgroup on pp):
/// a schedule that would stop is an error naming the transfer (or all-reduce) a stage would wait for forever.
LogicalResult checkPointToPoint(ModuleOp module);

} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_CUDA_EMITCUDACOMM_H
