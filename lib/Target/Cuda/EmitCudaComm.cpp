//===- EmitCudaComm.cpp - NCCL communicators of --emit-cuda ---------------===//
//
// See EmitCudaComm.h.
//
//===----------------------------------------------------------------------===//

#include "EmitCudaComm.h"

#include "CudaCallTable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseSet.h"

#include <map>

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

int64_t mlir::ptrain::cuda::emitCudaCommunicators(const CommGroups &comms, raw_ostream &s) {
  GridOp grid = comms.theGrid;
  const int64_t worldSize = worldSizeOf(grid);
  s << "//===--- Communicators: MPI_COMM_WORLD (the bootstrap), the NCCL world over it and one NCCL group per "
       "(grid, axes), created by ptrain_step_init ---===//\n\n";
  s << "ptrain_comm_t ptrain_world = nullptr;\nptrain_nccl_comm_t nccl_world = nullptr;\nint32_t ptrain_rank = 0;\n";
  emitGridDeclarations(comms, worldSize, "ptrain_nccl_comm_t", s);
  s << "/// The group of this rank over the axes with in_group[d]: the ranks equal to it on every other axis\n"
       "/// (the split's color: their row-major index over those axes), ordered by world rank (the key), as the\n"
       "/// CPU target's groups are. Collective over every rank.\n"
       "ptrain_status_t createGroup(const bool *in_group, ptrain_nccl_comm_t *out) {\n"
       "  int32_t color = 0;\n"
       "  for (int32_t d = 0; d < kGridRank; ++d)\n"
       "    if (!in_group[d])\n"
       "      color = static_cast<int32_t>(color * kGridShape[d] + gridCoordinate(ptrain_rank, d));\n"
       "  PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_nccl_comm_split)
    << "(nccl_world, color, ptrain_rank, out));\n"
       "  return PTRAIN_OK;\n"
       "}\n\n";
  return worldSize;
}

void mlir::ptrain::cuda::emitCudaCommInit(const CommGroups &comms, ArrayRef<int64_t> stages, raw_ostream &s) {
  GridOp grid = comms.theGrid;
  const int64_t worldSize = worldSizeOf(grid);
  s << "  if (!ptrain_world) {\n";
  s << "    ptrain_comm_t world = nullptr;\n";
  s << "    PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_comm_init) << "(&world));\n";
  s << "    int32_t size = 0;\n";
  s << "    PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_comm_size) << "(world, &size));\n";
  s << "    if (size != kWorldSize) {\n";
  s << "      " << cpuCall(RuntimeCall::ptrain_comm_destroy) << "(world);\n";
  s << "      return stepError(\"ptrain_step_init: the step was compiled for " << worldSize << " ranks (grid @"
    << grid.getSymName() << ") but MPI_COMM_WORLD has %d; launch it with ptrain-run (one process per GPU) or "
    << "mpirun -np " << worldSize << "\", static_cast<int>(size));\n";
  s << "    }\n";
  s << "    PTRAIN_STEP_CALL(checkDevice());\n";
  s << "    ptrain_world = world;\n";
  s << "    PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_comm_rank) << "(ptrain_world, &ptrain_rank));\n";
  s << "    // The NCCL world: the unique id all-gathered over MPI; this process's device is chosen here.\n";
  s << "    PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_nccl_comm_init) << "(ptrain_world, &nccl_world));\n";
  for (const CommGroups::Group &g : comms.groups) {
    s << "    {\n      static const bool in_group[kGridRank] = {";
    llvm::interleave(
        g.inGroup, s, [&](bool b) { s << (b ? "true" : "false"); }, ", ");
    s << "};\n      PTRAIN_STEP_CALL(createGroup(in_group, &" << g.var << "));\n    }\n";
  }
  if (int64_t ppAxis = ppAxisOf(grid); ppAxis >= 0)
    s << "    ptrain_stage = static_cast<int32_t>(gridCoordinate(ptrain_rank, " << ppAxis << "));\n";
  if (!stages.empty()) {
    s << "    switch (ptrain_stage) {\n";
    for (int64_t stage : stages)
      s << "    case " << stage << ":\n      active_states = kStage" << stage
        << "States;\n      active_offsets = kStage" << stage << "StatesOffsets;\n      num_active_states = kNumStage"
        << stage << "States;\n      break;\n";
    s << "    }\n";
  }
  s << "  }\n";
}

void mlir::ptrain::cuda::emitCudaCommEntryPoints(const CommGroups &comms, raw_ostream &s) {
  s << "/// This process's rank in MPI_COMM_WORLD and its pipeline stage (valid after ptrain_step_init).\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_rank(int32_t *out_rank, int32_t *out_stage) {\n"
       "  if (!ptrain_world)\n    return stepError(\"ptrain_step_rank: call ptrain_step_init first\");\n"
       "  *out_rank = ptrain_rank;\n  *out_stage = ptrain_stage;\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Destroys the NCCL communicators, then MPI's (finalizing MPI if ptrain_step_init initialized it).\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_finalize(void) {\n";
  const std::string destroy = cudaCall(CudaCall::ptrain_nccl_comm_destroy);
  for (const CommGroups::Group &g : llvm::reverse(comms.groups))
    s << "  if (" << g.var << ") {\n    PTRAIN_STEP_CALL(" << destroy << "(" << g.var << "));\n    " << g.var
      << " = nullptr;\n  }\n";
  s << "  if (nccl_world) {\n    PTRAIN_STEP_CALL(" << destroy << "(nccl_world));\n    nccl_world = nullptr;\n  }\n";
  s << "  if (ptrain_world) {\n    PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_comm_destroy)
    << "(ptrain_world));\n    ptrain_world = nullptr;\n  }\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Ends every rank of the job (MPI_Abort): the recovery after a communication error.\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_abort(int32_t error_code) {\n"
       "  if (!ptrain_world)\n    return PTRAIN_OK;\n"
       "  PTRAIN_STEP_CALL("
    << cpuCall(RuntimeCall::ptrain_comm_abort) << "(ptrain_world, error_code));\n  return PTRAIN_OK;\n}\n\n";
}

namespace {

/// A send or receive of a stage, in program order, and the NCCL group the emitter posts it in (a run of
/// consecutive starts in one function, FunctionEmitter::closeGroup).
struct Transfer {
  Operation *op;
  int64_t tag;
  int64_t group;
};

/// The sends and receives of `func` in program order, following calls into the module's functions.
void collectTransfers(func::FuncOp func, SymbolTable &symbols, SmallVectorImpl<Transfer> &out, int64_t &groups,
                      int depth = 0) {
  if (depth > 16)
    return;
  bool open = false;
  for (Operation &op : func.getBody().front()) {
    if (isa<SendStartOp, RecvStartOp>(op)) {
      if (!open)
        ++groups;
      open = true;
      auto tag = op.getAttrOfType<IntegerAttr>("ptrain.tag");
      out.push_back({&op, tag ? tag.getInt() : 0, groups - 1});
      continue;
    }
    open = false;
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()); callee && !callee.isExternal())
        collectTransfers(callee, symbols, out, groups, depth + 1);
  }
}

std::string describe(ArrayRef<Transfer> list) {
  std::string text;
  for (const Transfer &t : list)
    text += (text.empty() ? "" : ", ") + std::to_string(t.tag);
  return "[" + text + "]";
}

/// Runs the stages' NCCL groups of one entry kind as one stream each would: a group ends when each of its
/// transfers has met its match (the same position in the other stage's order) posted in the peer's current
/// group, the strict rule (NCCL may finish a small send early, but does not promise to). Fails at the first
/// stage whose group can never end.
LogicalResult simulateGroups(StringRef kind, std::map<int64_t, SmallVector<Transfer>> &byStage,
                             llvm::DenseMap<Operation *, Operation *> &partner) {
  llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> where; // op -> (stage, group)
  for (auto &[stage, list] : byStage)
    for (const Transfer &t : list)
      where[t.op] = {stage, t.group};
  std::map<int64_t, size_t> next; // stage -> index of its first unfinished transfer
  llvm::DenseSet<Operation *> done;
  auto current = [&](int64_t stage) -> int64_t {
    SmallVector<Transfer> &list = byStage[stage];
    return next[stage] < list.size() ? list[next[stage]].group : -1;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (auto &[stage, list] : byStage) {
      for (size_t i = next[stage]; i < list.size() && list[i].group == current(stage); ++i) {
        Operation *op = list[i].op, *match = partner.lookup(op);
        if (done.contains(op) || !match)
          continue;
        auto [peer, group] = where[match];
        if (current(peer) == group) {
          done.insert(op);
          done.insert(match);
          progress = true;
        }
      }
      // The group ends when every transfer in it is done; the stream moves to the next.
      int64_t group = current(stage);
      size_t i = next[stage];
      while (i < list.size() && list[i].group == group && done.contains(list[i].op))
        ++i;
      if (group >= 0 && (i == list.size() || list[i].group != group)) {
        next[stage] = i;
        progress = true;
      }
    }
  }
  for (auto &[stage, list] : byStage) {
    if (next[stage] == list.size())
      continue;
    Operation *stuck = list[next[stage]].op;
    for (size_t i = next[stage]; i < list.size() && list[i].group == current(stage); ++i)
      if (!done.contains(list[i].op)) {
        stuck = list[i].op;
        break;
      }
    return stuck->emitError("--emit-cuda: in the ")
           << kind << " step the NCCL groups of the stages wait on each other: stage " << stage
           << " cannot finish this group (its match is posted in a later group of the peer, which waits for this "
              "stage); on one CUDA stream NCCL completes a transfer only when its match is posted, so this "
              "schedule needs --target cpu";
  }
  return success();
}

} // namespace

LogicalResult mlir::ptrain::cuda::checkPointToPoint(ModuleOp module) {
  SymbolTable symbols(module);
  // (entry kind, from stage, to stage) -> the tags sent / received, with their ops.
  using Key = std::tuple<std::string, int64_t, int64_t>;
  std::map<Key, SmallVector<Transfer>> sent, received;
  std::map<std::string, std::map<int64_t, SmallVector<Transfer>>> byKind;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto entry = func->getAttrOfType<StringAttr>("ptrain.entry");
    auto stage = func->getAttrOfType<IntegerAttr>("ptrain.stage");
    if (!entry || !stage || func.isExternal())
      continue;
    SmallVector<Transfer> &transfers = byKind[entry.getValue().str()][stage.getInt()];
    int64_t groups = 0;
    collectTransfers(func, symbols, transfers, groups);
    for (const Transfer &t : transfers) {
      if (auto send = dyn_cast<SendStartOp>(t.op))
        sent[{entry.getValue().str(), stage.getInt(), stage.getInt() + send.getOffset()}].push_back(t);
      else if (auto recv = dyn_cast<RecvStartOp>(t.op))
        received[{entry.getValue().str(), stage.getInt() + recv.getOffset(), stage.getInt()}].push_back(t);
    }
  }
  llvm::DenseMap<Operation *, Operation *> partner;
  for (auto &[key, sends] : sent) {
    const SmallVector<Transfer> &recvs = received[key];
    auto &[kind, from, to] = key;
    for (size_t i = 0; i < std::max(sends.size(), recvs.size()); ++i) {
      if (i < sends.size() && i < recvs.size() && sends[i].tag == recvs[i].tag) {
        partner[sends[i].op] = recvs[i].op;
        partner[recvs[i].op] = sends[i].op;
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
    if (failed(simulateGroups(kind, byStage, partner)))
      return failure();
  return success();
}
