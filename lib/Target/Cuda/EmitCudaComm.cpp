//===- EmitCudaComm.cpp - NCCL communicators of --emit-cuda ---------------===//
//
// See EmitCudaComm.h.
//
//===----------------------------------------------------------------------===//

#include "EmitCudaComm.h"

#include "Common/EmitHelpers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"

#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <map>
#include <optional>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;
using namespace mlir::ptrain::cuda;

namespace {

std::string cpuCall(RuntimeCall c) { return getRuntimeCallInfo(c).name; }
std::string cudaCall(CudaCall c) { return getCudaCallInfo(c).name; }

int64_t ppAxisOf(GridOp grid) {
  for (auto [d, axis] : llvm::enumerate(grid.getAxisNames()))
    if (cast<StringAttr>(axis).getValue() == "pp")
      return d;
  return -1;
}

int64_t worldSizeOf(GridOp grid) {
  int64_t n = 1;
  for (int64_t size : grid.getShape())
    n *= size;
  return n;
}

} // namespace

SmallVector<PipeChannels::Call> PipeChannels::startCalls(Operation *op, Value request, bool isSend, int64_t stage,
                                                         int64_t peer, StringRef group, const std::string &buffer,
                                                         int64_t bytes) {
  ppComm = group.str();
  const int64_t from = isSend ? stage : peer, to = isSend ? peer : stage;
  auto it = llvm::find_if(channels, [&](const Channel &c) { return c.from == from && c.to == to; });
  if (it == channels.end()) {
    const std::string name = "pp_" + std::to_string(from) + "_to_" + std::to_string(to);
    channels.push_back({from, to, "comm_" + name, "stream_" + name});
    it = std::prev(channels.end());
  }
  auto [slot, inserted] = eventOf.try_emplace(op, numEvents);
  if (inserted)
    ++numEvents;
  const std::string k = std::to_string(slot->second), posted = "ev_posted[" + k + "]", done = "ev_done[" + k + "]";
  // The channel's communicator has the two stages, ordered by stage (the split's key): the peer is 0 or 1.
  const std::string peerRank = peer < stage ? "0" : "1";
  auto tag = op->getAttrOfType<IntegerAttr>("ptrain.tag");
  std::string what = std::string(isSend ? "the send of " : "the receive of ") + std::to_string(bytes) + " bytes (tag " +
                     std::to_string(tag ? tag.getInt() : 0) + ") " + (isSend ? "to" : "from") + " stage " +
                     std::to_string(peer) + " at " + locationComment(op->getLoc());
  pending[request] = {it->comm, done, stringLiteral(what)};
  return {{CudaCall::ptrain_cuda_event_record, {posted, "stream"}},
          {CudaCall::ptrain_cuda_stream_wait_event, {it->stream, posted}},
          {CudaCall::ptrain_cuda_set_stream, {it->stream}},
          {isSend ? CudaCall::ptrain_nccl_send : CudaCall::ptrain_nccl_recv,
           {it->comm, buffer, std::to_string(bytes), peerRank}},
          {CudaCall::ptrain_cuda_event_record, {done, it->stream}},
          {CudaCall::ptrain_cuda_set_stream, {"stream"}}};
}

SmallVector<PipeChannels::Call> PipeChannels::waitCalls(Value request) const {
  auto it = pending.find(request);
  if (it == pending.end())
    return {};
  const Pending &p = it->second;
  return {{CudaCall::ptrain_nccl_wait_event, {p.comm, p.done, p.what}},
          {CudaCall::ptrain_cuda_stream_wait_event, {"stream", p.done}}};
}

int64_t mlir::ptrain::cuda::emitCudaCommunicators(const CommGroups &comms, const PipeChannels &pipes, raw_ostream &s) {
  GridOp grid = comms.theGrid;
  const int64_t worldSize = worldSizeOf(grid);
  s << "//===--- Communicators: MPI_COMM_WORLD or a TCP rendezvous (the bootstrap), the NCCL world over it and one "
       "NCCL group per (grid, axes), created by ptrain_step_init ---===//\n\n";
  s << "ptrain_comm_t ptrain_world = nullptr;      ///< MPI_COMM_WORLD (an mpirun launch)\n"
       "ptrain_rendezvous_t ptrain_bootstrap = nullptr; ///< the TCP rendezvous (a torchrun-style launch)\n"
       "ptrain_nccl_comm_t nccl_world = nullptr;\nint32_t ptrain_rank = 0;\n";
  emitGridDeclarations(comms, worldSize, "ptrain_nccl_comm_t", s);
  if (!pipes.empty()) {
    s << "/// The pipeline's channels: per ordered pair of stages, a communicator of the two (split from "
      << pipes.ppComm << ") and\n/// this rank's communication stream for it; null on the ranks outside the pair.\n";
    for (const PipeChannels::Channel &c : pipes.channels)
      s << "ptrain_nccl_comm_t " << c.comm << " = nullptr;\nvoid *" << c.stream << " = nullptr;\n";
    s << "/// Per send or receive op k: ev_posted[k] (the compute stream reached the start op; the channel's stream\n"
         "/// waits on it) and ev_done[k] (the transfer is done; the compute stream waits on it at the op's wait).\n";
    s << "constexpr int32_t kNumTransferEvents = " << pipes.numEvents << ";\n";
    s << "void *ev_posted[kNumTransferEvents] = {};\nvoid *ev_done[kNumTransferEvents] = {};\n";
    s << "bool channels_connected = false; ///< ptrain_step_init connected the channels\n\n";
  }
  // A subgroup (ptrain.subgroup: Optimus-CC's fused embedding sync) restricts one axis to its members: the
  // ranks outside it split with no color and hold a null communicator, as on the CPU target.
  const bool subgroups = llvm::any_of(comms.groups, [](const CommGroups::Group &g) { return g.subAxis >= 0; });
  s << "/// The group of this rank over the axes with in_group[d]: the ranks equal to it on every other axis\n"
       "/// (the split's color: their row-major index over those axes), ordered by world rank (the key), as the\n"
       "/// CPU target's groups are. Collective over every rank.\n";
  if (subgroups)
    s << "/// A subgroup (sub_axis >= 0): only the ranks whose coordinate on sub_axis is one of sub_members; a rank\n"
         "/// outside it takes part in the split without a color and gets no communicator (*out = NULL).\n"
         "ptrain_status_t createGroup(const bool *in_group, ptrain_nccl_comm_t *out, int32_t sub_axis = -1,\n"
         "                            const int64_t *sub_members = nullptr, int32_t num_sub = 0) {\n"
         "  bool member = sub_axis < 0;\n"
         "  for (int32_t i = 0; i < num_sub; ++i)\n"
         "    member = member || gridCoordinate(ptrain_rank, sub_axis) == sub_members[i];\n";
  else
    s << "ptrain_status_t createGroup(const bool *in_group, ptrain_nccl_comm_t *out) {\n";
  s << "  int32_t color = 0;\n"
       "  for (int32_t d = 0; d < kGridRank; ++d)\n"
       "    if (!in_group[d])\n"
       "      color = static_cast<int32_t>(color * kGridShape[d] + gridCoordinate(ptrain_rank, d));\n"
       "  PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_nccl_comm_split) << "(nccl_world, " << (subgroups ? "member ? color : -1" : "color")
    << ", ptrain_rank, out));\n"
       "  return PTRAIN_OK;\n"
       "}\n\n";
  return worldSize;
}

void mlir::ptrain::cuda::emitCudaCommInit(const CommGroups &comms, const PipeChannels &pipes, ArrayRef<int64_t> stages,
                                          raw_ostream &s) {
  GridOp grid = comms.theGrid;
  const int64_t worldSize = worldSizeOf(grid);
  const std::string mismatch = "ptrain_step_init: the step was compiled for " + std::to_string(worldSize) +
                               " ranks (grid @" + grid.getSymName().str() + ") but ";
  s << "  if (!nccl_world) {\n";
  s << "    int32_t size = 0;\n";
  s << "    // A torchrun-style launch (RANK and WORLD_SIZE set, not under mpirun): the runtime's TCP rendezvous\n"
       "    // (MASTER_ADDR, MASTER_PORT) bootstraps NCCL, without MPI; else MPI_COMM_WORLD does.\n";
  s << "    if (std::getenv(\"RANK\") && std::getenv(\"WORLD_SIZE\") && !std::getenv(\"OMPI_COMM_WORLD_SIZE\")) {\n";
  s << "      ptrain_rendezvous_t rendezvous = nullptr;\n";
  s << "      PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_rendezvous_init_env) << "(0.0, &rendezvous));\n";
  s << "      const ptrain_status_t st = " << cpuCall(RuntimeCall::ptrain_rendezvous_rank)
    << "(rendezvous, &ptrain_rank, &size);\n";
  s << "      if (st != PTRAIN_OK || size != kWorldSize) {\n";
  s << "        " << cpuCall(RuntimeCall::ptrain_rendezvous_destroy) << "(rendezvous);\n";
  s << "        PTRAIN_STEP_CALL(st);\n";
  s << "        return stepError(\"" << mismatch << "WORLD_SIZE is %d; launch it with torchrun --nproc-per-node "
    << worldSize << " (one process per GPU)\", static_cast<int>(size));\n";
  s << "      }\n";
  s << "      ptrain_bootstrap = rendezvous;\n";
  s << "      PTRAIN_STEP_CALL(checkDevice());\n";
  s << "      // The NCCL world: rank 0's unique id broadcast over the rendezvous; the device is LOCAL_RANK's.\n";
  s << "      PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_nccl_comm_init_rendezvous)
    << "(ptrain_bootstrap, &nccl_world));\n";
  s << "    } else {\n";
  s << "      ptrain_comm_t world = nullptr;\n";
  s << "      PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_comm_init) << "(&world));\n";
  s << "      PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_comm_size) << "(world, &size));\n";
  s << "      if (size != kWorldSize) {\n";
  s << "        " << cpuCall(RuntimeCall::ptrain_comm_destroy) << "(world);\n";
  s << "        return stepError(\"" << mismatch
    << "MPI_COMM_WORLD has %d; launch it with ptrain-run (one process per GPU) or mpirun -np " << worldSize
    << "\", static_cast<int>(size));\n";
  s << "      }\n";
  s << "      PTRAIN_STEP_CALL(checkDevice());\n";
  s << "      ptrain_world = world;\n";
  s << "      PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_comm_rank) << "(ptrain_world, &ptrain_rank));\n";
  s << "      // The NCCL world: the unique id all-gathered over MPI; this process's device is chosen here.\n";
  s << "      PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_nccl_comm_init) << "(ptrain_world, &nccl_world));\n";
  s << "    }\n";
  for (const CommGroups::Group &g : comms.groups)
    emitCreateGroupCall(g, s);
  if (int64_t ppAxis = ppAxisOf(grid); ppAxis >= 0)
    s << "    ptrain_stage = static_cast<int32_t>(gridCoordinate(ptrain_rank, " << ppAxis << "));\n";
  if (!pipes.empty()) {
    const std::string split = cudaCall(CudaCall::ptrain_nccl_comm_split);
    s << "    // The pipeline's channels, split from " << pipes.ppComm
      << " (every rank of it takes part in each split; key: the stage),\n    // each with its stream, and the "
         "transfer events.\n";
    for (const PipeChannels::Channel &c : pipes.channels) {
      s << "    PTRAIN_STEP_CALL(" << split << "(" << pipes.ppComm << ", ptrain_stage == " << c.from
        << " || ptrain_stage == " << c.to << " ? 0 : -1, ptrain_stage, &" << c.comm << "));\n";
      s << "    if (" << c.comm << ")\n      PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_stream_create) << "(&"
        << c.stream << "));\n";
    }
    s << "    for (int32_t k = 0; k < kNumTransferEvents; ++k) {\n      PTRAIN_STEP_CALL("
      << cudaCall(CudaCall::ptrain_cuda_event_create) << "(&ev_posted[k]));\n      PTRAIN_STEP_CALL("
      << cudaCall(CudaCall::ptrain_cuda_event_create) << "(&ev_done[k]));\n    }\n";
  }
  if (!stages.empty()) {
    s << "    switch (ptrain_stage) {\n";
    for (int64_t stage : stages)
      s << "    case " << stage << ":\n      active_states = kStage" << stage
        << "States;\n      num_active_states = kNumStage"
        << stage << "States;\n      active_state_bytes = kStage" << stage << "StateBytes;\n      break;\n";
    s << "    }\n";
  }
  s << "  }\n";
}

void mlir::ptrain::cuda::emitCudaPipeConnect(const PipeChannels &pipes, raw_ostream &s) {
  if (pipes.empty())
    return;
  s << "  // Connect this rank's pipeline channels now (NCCL connects point-to-point peers on first use, which needs "
       "both\n  // sides): one NCCL group of 1-byte transfers on the compute stream, byte k of d_io for channel k.\n";
  s << "  if (!channels_connected) {\n";
  s << "    PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_nccl_group_start) << "());\n";
  for (auto [k, c] : llvm::enumerate(pipes.channels)) {
    s << "    if (" << c.comm << ")\n      PTRAIN_STEP_CALL(ptrain_stage == " << c.from << " ? "
      << cudaCall(CudaCall::ptrain_nccl_send) << "(" << c.comm << ", d_io + " << k << ", 1, " << (c.to < c.from ? 0 : 1)
      << ") : " << cudaCall(CudaCall::ptrain_nccl_recv) << "(" << c.comm << ", d_io + " << k << ", 1, "
      << (c.from < c.to ? 0 : 1) << "));\n";
  }
  s << "    PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_nccl_group_end) << "());\n";
  // The connecting bytes are not the step's traffic: the channels' counters start after them.
  for (const PipeChannels::Channel &c : pipes.channels)
    s << "    if (" << c.comm << ") {\n      PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_nccl_wait) << "(" << c.comm
      << "));\n      PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_nccl_reset_traffic) << "(" << c.comm
      << "));\n    }\n";
  s << "    channels_connected = true;\n  }\n";
}

void mlir::ptrain::cuda::emitCudaCommEntryPoints(const CommGroups &comms, const PipeChannels &pipes, raw_ostream &s) {
  s << "/// This process's rank in MPI_COMM_WORLD and its pipeline stage (valid after ptrain_step_init).\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_rank(int32_t *out_rank, int32_t *out_stage) {\n"
       "  if (!nccl_world)\n    return stepError(\"ptrain_step_rank: call ptrain_step_init first\");\n"
       "  *out_rank = ptrain_rank;\n  *out_stage = ptrain_stage;\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Frees the host mirrors, destroys the transfer events, the NCCL communicators, the streams, then MPI's\n"
       "/// (finalizing MPI if ptrain_step_init initialized it).\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_finalize(void) {\n";
  s << "  PTRAIN_STEP_CALL(releaseStorage()); // the host mirrors\n";
  const std::string destroy = cudaCall(CudaCall::ptrain_nccl_comm_destroy);
  if (!pipes.empty()) {
    s << "  for (int32_t k = 0; k < kNumTransferEvents; ++k) {\n    PTRAIN_STEP_CALL("
      << cudaCall(CudaCall::ptrain_cuda_event_destroy) << "(ev_posted[k]));\n    PTRAIN_STEP_CALL("
      << cudaCall(CudaCall::ptrain_cuda_event_destroy)
      << "(ev_done[k]));\n    ev_posted[k] = ev_done[k] = nullptr;\n  }\n  channels_connected = false;\n";
    for (const PipeChannels::Channel &c : llvm::reverse(pipes.channels))
      s << "  if (" << c.comm << ") {\n    PTRAIN_STEP_CALL(" << destroy << "(" << c.comm << "));\n    " << c.comm
        << " = nullptr;\n  }\n";
  }
  for (const CommGroups::Group &g : llvm::reverse(comms.groups))
    s << "  if (" << g.var << ") {\n    PTRAIN_STEP_CALL(" << destroy << "(" << g.var << "));\n    " << g.var
      << " = nullptr;\n  }\n";
  s << "  if (nccl_world) {\n    PTRAIN_STEP_CALL(" << destroy << "(nccl_world));\n    nccl_world = nullptr;\n  }\n";
  // The streams last (after every communicator that enqueued work on them): the channels', then the compute
  // stream (this thread's current one; ptrain_cuda_stream_destroy resets it). Pending work still completes.
  const std::string destroyStream = cudaCall(CudaCall::ptrain_cuda_stream_destroy);
  for (const PipeChannels::Channel &c : llvm::reverse(pipes.channels))
    s << "  PTRAIN_STEP_CALL(" << destroyStream << "(" << c.stream << "));\n  " << c.stream << " = nullptr;\n";
  s << "  PTRAIN_STEP_CALL(" << destroyStream << "(stream));\n  stream = nullptr;\n";
  s << "  if (ptrain_bootstrap) {\n    PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_rendezvous_destroy)
    << "(ptrain_bootstrap));\n    ptrain_bootstrap = nullptr;\n  }\n";
  s << "  if (ptrain_world) {\n    PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_comm_destroy)
    << "(ptrain_world));\n    ptrain_world = nullptr;\n  }\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Ends every rank of the job (MPI_Abort): the recovery after a communication error. A torchrun-style\n"
       "/// launch has no MPI: nothing to do here (the launcher stops the others when this rank exits).\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_abort(int32_t error_code) {\n"
       "  if (!ptrain_world)\n    return PTRAIN_OK;\n"
       "  PTRAIN_STEP_CALL("
    << cpuCall(RuntimeCall::ptrain_comm_abort) << "(ptrain_world, error_code));\n  return PTRAIN_OK;\n}\n\n";
}

namespace {

/// A stage's communication in program order (calls followed): a send or receive start, the wait of one, or
/// an all-reduce over pp (a collective of the stages, on the compute stream).
struct Item {
  enum Kind { Start, Wait, Collective } kind;
  Operation *op;
  Operation *start = nullptr; ///< Wait: the send or receive it waits for
};

/// A send or receive of a stage and its tag.
struct Transfer {
  Operation *op;
  int64_t tag;
};

bool spansPipeline(AllReduceStartOp op) {
  return llvm::any_of(op.getGridAxes(), [](Attribute a) { return cast<StringAttr>(a).getValue() == "pp"; });
}

/// The communication of `func` in program order, following calls into the module's functions. A start whose
/// request has no ptrain.wait in its function is an error: its buffer could be reused while the channel's
/// stream still reads or writes it.
LogicalResult collectItems(func::FuncOp func, SymbolTable &symbols, SmallVectorImpl<Item> &out, int depth = 0) {
  if (depth > 16)
    return success();
  for (Operation &op : func.getBody().front()) {
    if (isa<SendStartOp, RecvStartOp>(op)) {
      Value request = op.getResult(0);
      if (llvm::none_of(request.getUsers(), [](Operation *user) { return isa<WaitOp>(user); }))
        return op.emitError("--emit-cuda: this transfer's request is never waited on (ptrain.wait) in @")
               << func.getSymName()
               << ": its buffer could be reused while the pipeline channel's stream still reads or writes it";
      out.push_back({Item::Start, &op});
    } else if (auto wait = dyn_cast<WaitOp>(op)) {
      if (Operation *start = wait.getRequest().getDefiningOp(); isa_and_nonnull<SendStartOp, RecvStartOp>(start))
        out.push_back({Item::Wait, &op, start});
    } else if (auto reduce = dyn_cast<AllReduceStartOp>(op); reduce && spansPipeline(reduce)) {
      out.push_back({Item::Collective, &op});
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()); callee && !callee.isExternal())
        if (failed(collectItems(callee, symbols, out, depth + 1)))
          return failure();
    }
  }
  return success();
}

std::string describe(ArrayRef<Transfer> list) {
  std::string text;
  for (const Transfer &t : list)
    text += (text.empty() ? "" : ", ") + std::to_string(t.tag);
  return "[" + text + "]";
}

/// Runs the stages of one entry kind as the generated code does (see checkPointToPoint): `partner` maps each
/// send to its receive and back, `previous` each send to the channel's send before it. Fails naming what a
/// stage would wait for forever.
LogicalResult simulateStages(StringRef kind, std::map<int64_t, SmallVector<Item>> &byStage,
                             llvm::DenseMap<Operation *, Operation *> &partner,
                             llvm::DenseMap<Operation *, Operation *> &previous) {
  llvm::DenseSet<Operation *> posted, done; // start ops; done holds the sends of completed transfers
  std::map<int64_t, size_t> pos;
  auto sendOf = [&](Operation *start) { return isa<SendStartOp>(start) ? start : partner.lookup(start); };
  // A transfer is done once both sides posted it and the channel's earlier transfer is done (one stream each).
  std::function<bool(Operation *)> isDone = [&](Operation *send) {
    if (!send)
      return false;
    if (done.contains(send))
      return true;
    Operation *recv = partner.lookup(send), *before = previous.lookup(send);
    if (!recv || !posted.contains(send) || !posted.contains(recv) || (before && !isDone(before)))
      return false;
    done.insert(send);
    return true;
  };
  auto at = [&](int64_t stage) -> Item * {
    SmallVector<Item> &list = byStage[stage];
    return pos[stage] < list.size() ? &list[pos[stage]] : nullptr;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (auto &entry : byStage) {
      const int64_t stage = entry.first;
      while (Item *item = at(stage)) {
        if (item->kind == Item::Start)
          posted.insert(item->op);
        else if (item->kind == Item::Wait && !isDone(sendOf(item->start)))
          break;
        else if (item->kind == Item::Collective)
          break; // every stage must be at its next collective: below
        ++pos[stage];
        progress = true;
      }
    }
    // A collective over pp completes when every stage of its group reached the same one (their order is the
    // same on all): every stage, or a subgroup's members on pp (the fused embedding sync of the first and last).
    for (auto &entry : byStage) {
      Item *item = at(entry.first);
      if (!item || item->kind != Item::Collective)
        continue;
      std::optional<Subgroup> subgroup = getSubgroup(item->op);
      SmallVector<int64_t> members;
      for (auto &other : byStage)
        if (!subgroup || subgroup->axis != "pp" || subgroup->contains(other.first))
          members.push_back(other.first);
      if (llvm::all_of(members, [&](int64_t m) {
            Item *there = at(m);
            return there && there->kind == Item::Collective;
          })) {
        for (int64_t m : members)
          ++pos[m];
        progress = true;
        break;
      }
    }
  }
  for (auto &entry : byStage) {
    const int64_t stage = entry.first;
    Item *item = at(stage);
    if (!item)
      continue;
    // Where the others stopped, for the notes.
    auto noteOthers = [&](InFlightDiagnostic &diag) {
      for (auto &other : byStage)
        if (other.first != stage) {
          if (Item *there = at(other.first))
            diag.attachNote(there->op->getLoc()) << "stage " << other.first << " stops here";
          else
            diag.attachNote(other.second.empty() ? item->op->getLoc() : other.second.back().op->getLoc())
                << "stage " << other.first << " has finished its " << kind << " step";
        }
    };
    const char *why = "; on CUDA a transfer starts on its channel's stream only when the compute stream reached its "
                      "start op, and an all-reduce over pp holds each stage's compute stream until every stage "
                      "reaches it, so this schedule needs --target cpu";
    if (item->kind == Item::Collective) {
      InFlightDiagnostic diag = item->op->emitError("--emit-cuda: in the ")
                                << kind << " step the pipeline would stop on NCCL: stage " << stage
                                << " waits at this all-reduce over pp for stages that never reach it" << why;
      noteOthers(diag);
      return diag;
    }
    Operation *start = item->start;
    auto tag = start->getAttrOfType<IntegerAttr>("ptrain.tag");
    InFlightDiagnostic diag = start->emitError("--emit-cuda: in the ")
                              << kind << " step the pipeline would stop on NCCL: stage " << stage << " waits for this "
                              << (isa<SendStartOp>(start) ? "send" : "receive") << " (tag " << (tag ? tag.getInt() : 0)
                              << "), which never completes" << why;
    diag.attachNote(item->op->getLoc()) << "stage " << stage << " waits here";
    noteOthers(diag);
    return diag;
  }
  return success();
}

} // namespace

LogicalResult mlir::ptrain::cuda::checkPointToPoint(ModuleOp module) {
  SymbolTable symbols(module);
  // (entry kind, from stage, to stage): one channel; the tags sent / received over it, with their ops.
  using Key = std::tuple<std::string, int64_t, int64_t>;
  std::map<Key, SmallVector<Transfer>> sent, received;
  std::map<std::string, std::map<int64_t, SmallVector<Item>>> byKind;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto entry = func->getAttrOfType<StringAttr>("ptrain.entry");
    auto stage = getStage(func);
    if (!entry || !stage || func.isExternal())
      continue;
    SmallVector<Item> &items = byKind[entry.getValue().str()][stage.getIndex()];
    if (failed(collectItems(func, symbols, items)))
      return failure();
    for (const Item &item : items) {
      if (item.kind != Item::Start)
        continue;
      auto tagAttr = item.op->getAttrOfType<IntegerAttr>("ptrain.tag");
      Transfer t{item.op, tagAttr ? tagAttr.getInt() : 0};
      if (auto send = dyn_cast<SendStartOp>(item.op))
        sent[{entry.getValue().str(), stage.getIndex(), stage.getIndex() + send.getOffset()}].push_back(t);
      else if (auto recv = dyn_cast<RecvStartOp>(item.op))
        received[{entry.getValue().str(), stage.getIndex() + recv.getOffset(), stage.getIndex()}].push_back(t);
    }
  }
  llvm::DenseMap<Operation *, Operation *> partner, previous;
  for (auto &[key, sends] : sent) {
    const SmallVector<Transfer> &recvs = received[key];
    auto &[kind, from, to] = key;
    for (size_t i = 0; i < std::max(sends.size(), recvs.size()); ++i) {
      if (i < sends.size() && i < recvs.size() && sends[i].tag == recvs[i].tag) {
        partner[sends[i].op] = recvs[i].op;
        partner[recvs[i].op] = sends[i].op;
        if (i > 0)
          previous[sends[i].op] = sends[i - 1].op;
        continue;
      }
      Operation *at = i < sends.size() ? sends[i].op : recvs[i].op;
      return at->emitError("--emit-cuda: NCCL matches point-to-point transfers in posting order (it has no "
                           "tags), but in the ")
             << kind << " step stage " << from << " sends the tags " << describe(sends) << " to stage " << to
             << ", which receives " << describe(recvs) << "; reorder the transfers or compile with --target cpu";
    }
  }
  for (auto &[key, recvs] : received)
    if (!sent.count(key) && !recvs.empty())
      return recvs.front().op->emitError("--emit-cuda: in the ")
             << std::get<0>(key) << " step stage " << std::get<2>(key) << " receives from stage " << std::get<1>(key)
             << ", which sends it nothing";
  for (auto &[kind, byStage] : byKind)
    if (failed(simulateStages(kind, byStage, partner, previous)))
      return failure();
  return success();
}
