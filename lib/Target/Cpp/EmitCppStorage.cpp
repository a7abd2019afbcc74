//===- EmitCppStorage.cpp - The storage of --emit-cpp, per rank ---------===//
//
// The module's storage (CppEmitter.h, docs/CodegenCpu.md "Storage"): the
// state table, and per pipeline stage (or for the whole module) the function
// that ptrain_step_init calls on a rank to allocate its states, its arenas
// (one per function that calls others, one shared by the rest) and its
// constants read from the constant file. The memory plan counts the same
// blocks (include/ptrain/Analysis/MemoryPlan.h, allocatedBytes).
//
//===----------------------------------------------------------------------===//

#include "CppEmitter.h"

#include "Common/StateStorage.h"

#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

LogicalResult CppEmitter::collectStates() {
  int64_t dimsOffset = 0;
  for (auto state : module.getOps<StateOp>()) {
    FailureOr<RankedTensorType> type = supportedType(state, state.getType(), "the state");
    if (failed(type))
      return failure();
    StateInfo info{state, static_cast<int64_t>(stateOrder.size()),
                   "state_" + std::to_string(stateOrder.size()) + "_" + identifierFrom(state.getKey()),
                   type->getRank() ? "kStateDims + " + std::to_string(dimsOffset) : std::string()};
    dimsOffset += type->getRank();
    states[state.getSymNameAttr()] = info;
    stateOrder.push_back(state);
  }
  return success();
}

LogicalResult CppEmitter::emitStorageAllocation(bool pipeline, ArrayRef<FunctionArena> arenas,
                                                raw_ostream &s) {
  std::string fileName;
  if (!constantFile.constants.empty()) {
    if (options.constantsFile.empty())
      return mlir::emitError(constantFile.constants.front().loc, "--emit-cpp: a constant of ")
             << constantFile.constants.front().bytes << " bytes is neither small (at most " << kLiteralElements
             << " elements), a splat, a causal mask nor an iota: it is read from a constant file at init; pass "
                "--emit-cpp-constants=FILE (FILE lies beside libstep.so)";
    fileName = llvm::sys::path::filename(options.constantsFile).str();
  }
  emitStorageBlocks(s, {"storage_state_bytes", "storage_arena_bytes", "storage_constant_bytes"},
                    StateAllocation::Indexed);
  // The units: each stage of a pipeline (its ranks allocate only its storage) or the whole module.
  std::set<int64_t> units;
  if (pipeline) {
    for (auto &entry : stageStates)
      units.insert(entry.first);
    for (const FunctionArena &a : arenas)
      if (a.stage)
        units.insert(*a.stage);
  } else {
    units.insert(-1);
  }
  auto inUnit = [&](std::optional<int64_t> stage, int64_t unit) { return unit < 0 || !stage || *stage == unit; };
  for (int64_t unit : units) {
    std::string fn = unit < 0 ? "allocateModuleStorage" : "allocateStage" + std::to_string(unit) + "Storage";
    llvm::SetVector<StateOp> list;
    if (unit < 0) {
      list.insert(stateOrder.begin(), stateOrder.end());
    } else {
      auto it = stageStates.find(unit);
      if (it != stageStates.end())
        list.insert(it->second.begin(), it->second.end());
    }
    int64_t stateBytes = 0, calleeArena = 0, arenaBytes = 0, constantBytes = 0;
    for (StateOp state : list) {
      RankedTensorType type = state.getTensorType();
      stateBytes += numElements(type.getShape()) * elementBytes(type.getElementType());
    }
    // The states by their indices in kStates (allocateStates, StateStorage.h): a stage's list of indices and
    // table are written beside kStates (EmitCpp.cpp).
    std::string body;
    if (unit < 0)
      body = "  PTRAIN_STEP_CALL(allocateStates(nullptr, kNumStates, nullptr, storage_state_bytes));\n";
    else if (!list.empty())
      body = "  PTRAIN_STEP_CALL(allocateStates(kStage" + std::to_string(unit) + "StateIndices, kNumStage" +
             std::to_string(unit) + "States, kStage" + std::to_string(unit) + "States, storage_state_bytes));\n";
    for (const FunctionArena &a : arenas) {
      if (!inUnit(a.stage, unit))
        continue;
      if (a.name.empty()) {
        calleeArena = std::max(calleeArena, a.bytes);
        continue;
      }
      arenaBytes += a.bytes;
      body += "  " + allocateBlockCall(a.name, a.bytes, "storage_arena_bytes") + "\n";
    }
    arenaBytes += calleeArena;
    body += "  " + allocateBlockCall("ptrain_arena", calleeArena, "storage_arena_bytes") + "\n";
    for (const FileConstant &c : constantFile.constants) {
      if (!inUnit(c.stage, unit))
        continue;
      constantBytes += c.bytes;
      body += "  " + allocateBlockCall(c.var, c.bytes, "storage_constant_bytes") + "\n  PTRAIN_STEP_CALL(" +
              getRuntimeCallInfo(RuntimeCall::ptrain_read_beside).name + "(step_error, " + stringLiteral(fileName) +
              ", " + std::to_string(c.offset) + ", " + std::to_string(c.bytes) + ", " + c.var + "));\n";
    }
    s << "/// " << (unit < 0 ? std::string("The module's") : "Stage " + std::to_string(unit) + "'s") << " storage: "
      << list.size() << " states (" << stateBytes << " bytes), arenas (" << arenaBytes << " bytes), constants ("
      << constantBytes << " bytes" << (constantBytes ? " from " + fileName : std::string()) << ").\n";
    s << "ptrain_status_t " << fn << "() {\n" << body << "  return PTRAIN_OK;\n}\n\n";
  }
  s << "/// This process's storage, once: "
    << (pipeline ? "its pipeline stage's (ptrain_stage)." : "the whole module's.") << "\n";
  s << "ptrain_status_t allocateStorage() {\n  if (storage_stage != -2)\n    return PTRAIN_OK;\n";
  if (pipeline) {
    s << "  switch (ptrain_stage) {\n";
    for (int64_t unit : units)
      s << "  case " << unit << ":\n    PTRAIN_STEP_CALL(allocateStage" << unit << "Storage());\n    break;\n";
    s << "  default:\n    break;\n  }\n  storage_stage = ptrain_stage;\n";
  } else {
    s << "  PTRAIN_STEP_CALL(allocateModuleStorage());\n  storage_stage = -1;\n";
  }
  s << "  return PTRAIN_OK;\n}\n\n";
  return success();
}
