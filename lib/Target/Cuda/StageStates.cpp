//===- StageStates.cpp - Per-stage device state blocks of --emit-cuda -----===//
//
// Each stage's states packed in table order (StageStates.h).
//
//===----------------------------------------------------------------------===//

#include "StageStates.h"

#include "Common/CommGroups.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cuda;

void StageStates::collect(ModuleOp module, int64_t alignment, llvm::function_ref<int64_t(StateOp)> bytesOf) {
  SymbolTable symbols(module);
  for (auto func : module.getOps<func::FuncOp>()) {
    auto stage = getStage(func);
    if (!stage)
      continue;
    Stage &s = byStage[stage.getIndex()];
    target::forEachStateSymbol(func, [&](StringAttr sym) {
      auto state = symbols.lookup<StateOp>(sym);
      if (!state || !s.states.insert(state))
        return;
      s.offsets[sym] = s.bytes;
      s.bytes = (s.bytes + bytesOf(state) + alignment - 1) / alignment * alignment;
    });
  }
}

const StageStates::Stage *StageStates::of(func::FuncOp func) const {
  if (auto stage = getStage(func)) {
    auto it = byStage.find(stage.getIndex());
    return it == byStage.end() ? nullptr : &it->second;
  }
  // A function of no stage (the unsplit @forward) runs on the one stage of a pp = 1 pipeline if it holds every
  // state the function uses; with several stages, no rank holds them all.
  if (byStage.size() != 1)
    return nullptr;
  const Stage &only = byStage.begin()->second;
  bool covered = true;
  target::forEachStateSymbol(func, [&](StringAttr sym) { covered &= only.offsets.contains(sym); });
  return covered ? &only : nullptr;
}
