//===- StageStates.h - Per-stage device state blocks of --emit-cuda -*- C++ -*-===//
//
// A pipeline rank holds only its stage's states on the device
// (docs/CodegenCuda.md, "Memory plan"): per stage (ptrain.stage, the pp
// coordinate; a rank's virtual stages are functions of the same stage), the
// states its functions read or write, in the order of the stage's state table
// (lib/Target/Common/CommGroups.h's forEachStateSymbol, the CPU target's order),
// packed at the device alignment into that stage's d_states. The host
// mirrors, the tables' descriptors and so the checkpoints are the CPU
// target's: only the device offsets are per stage.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_STAGESTATES_H
#define PTRAIN_TARGET_CUDA_STAGESTATES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace mlir::ptrain::cuda {

class StageStates {
public:
  struct Stage {
    llvm::SetVector<StateOp> states;             ///< the stage's state table, in order
    llvm::DenseMap<StringAttr, int64_t> offsets; ///< by state symbol, in the stage's d_states
    int64_t bytes = 0;                           ///< the stage's d_states (aligned)
  };

  /// Collects the states of every function with ptrain.stage and lays out each stage's block; `bytesOf` is a
  /// state's size in bytes.
  void collect(ModuleOp module, int64_t alignment, llvm::function_ref<int64_t(StateOp)> bytesOf);
  /// The layout of `func`'s stage; for a function without ptrain.stage, the only stage's if it holds every state
  /// the function uses (pp = 1), else null (no rank holds them: its entry point is an error).
  const Stage *of(func::FuncOp func) const;

  std::map<int64_t, Stage> byStage;
};

} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_CUDA_STAGESTATES_H
