//===- EmitTraffic.h - Bytes per link in the generated step -----*- C++ -*-===//
//
// The traffic entry points of a generated step with communicators
// (docs/CodegenCpu.md, "Traffic per link"): the runtime counts what each
// communicator sends (ptrain_comm_p2p_traffic, ptrain_comm_collective_traffic);
// the step names its links and gathers every rank's counters.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_EMITTRAFFIC_H
#define PTRAIN_TARGET_COMMON_EMITTRAFFIC_H

#include "Common/CommGroups.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::ptrain::target {

/// One communicator of the step: its static variable and the grid axes it spans.
struct TrafficGroup {
  std::string var;
  SmallVector<std::string> axes; ///< a subgroup axis with its members: "pp{0, 3}"
  bool subgroup = false;         ///< the ranks outside the subgroup hold a null communicator (and count 0)
  /// For the pp group only: two-rank communicators that carry its point-to-point transfers instead (the CUDA
  /// target's pipeline channels, stage `from` -> `to`; null on the other ranks): their bytes count on the
  /// group's "pp forward" / "pp backward" links.
  struct Channel {
    std::string var;
    int64_t from, to;
  };
  SmallVector<Channel> p2pChannels;
};

/// Writes the link table (a group over exactly the axis pp has the links "pp forward" (to stage + 1),
/// "pp backward" (to stage - 1) and "pp collectives"; any other group "<axes> collectives") and the entry points
/// ptrain_step_num_links, ptrain_step_link_name, ptrain_step_traffic (collective over every rank) and
/// ptrain_step_reset_traffic. Uses the generated unit's ptrain_world, ptrain_stage, kWorldSize and
/// PTRAIN_STEP_CALL.
void emitTrafficEntryPoints(ArrayRef<TrafficGroup> groups, llvm::raw_ostream &s);

/// The runtime calls of those entry points on the step's communicators: the CPU runtime's MPI ones
/// (ptrain_comm_size, _p2p_traffic, _collective_traffic, _reset_traffic) or, for --emit-cuda, the NCCL
/// communicators' (ptrain_nccl_comm_size, ...) with the same parameter lists. The all-gather of every rank's
/// counters is MPI's (over ptrain_world, host buffers) or, with `rendezvousGather` (--emit-cuda), the TCP
/// rendezvous' (ptrain_rendezvous_all_gather over ptrain_bootstrap) when the step was launched torchrun-style.
struct TrafficCalls {
  const char *size, *p2p, *collective, *reset;
  const char *rendezvousGather = nullptr;
};
void emitTrafficEntryPoints(ArrayRef<TrafficGroup> groups, llvm::raw_ostream &s, const TrafficCalls &calls);

/// One TrafficGroup per communicator group of the step, in creation order, named by its axes (a subgroup axis
/// with its members).
SmallVector<TrafficGroup> trafficGroups(const CommGroups &comms);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_EMITTRAFFIC_H
