//===- MemoryPlan.h - The schedule-aware memory plan per rank ----*- C++ -*-===//
//
// What one pipeline rank holds in memory while it runs its lowered training
// step (`@stage<s>_train_step` of --ptrain-lower-to-runtime, whose op order is
// the schedule table's row): the states its functions read or write
// (parameters, gradients, optimizer moments, codec state), the step's own
// buffers (the activation stash: every micro-batch's stage input, and its
// forward output held until the send completes, from its F to its B; received
// gradients, the loss), and the temporaries of the stage functions it calls.
//
// Each function's buffers and arena come from the storage analysis the code
// generators use (BufferLiveness.h, with the CPU target's rules): intervals of
// op indices placed by greedy by size (Pisarchyk and Lee 2020). The plan's
// bytes are therefore the generated code's: allocatedBytes equals the
// runtime's allocation counter after init (CTest codegen-cpu-memory-plan).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_MEMORYPLAN_H
#define PTRAIN_ANALYSIS_MEMORYPLAN_H

#include "ptrain/Analysis/BufferLiveness.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::ptrain {

/// The buffers of one function and their arena, as the CPU target allocates them (BufferLiveness.h with
/// StorageRules::cpu(): the same analysis --emit-cpp plans its arenas with, kernel scratch included).
struct FunctionMemoryPlan {
  std::vector<ArenaBuffer> buffers;
  /// The value each buffer holds (the root of its aliases; null for kernel scratch).
  std::vector<Value> values;
  int64_t arenaBytes = 0, lowerBoundBytes = 0, sumBytes = 0;
  /// The constants the function reads from the constant file (ConstantForm::File), allocated at init.
  int64_t fileConstantBytes = 0;
};

FunctionMemoryPlan planFunctionMemory(func::FuncOp func, int64_t alignment = 64);
/// The most bytes of `func`'s buffers live at one op (the lower bound of its arena), without placing them:
/// the critical-path model's working set of a stage function (ModuleCosts.cpp).
int64_t functionLiveBytes(func::FuncOp func, int64_t alignment = 64);

/// The memory of one rank (one pipeline stage) at the peak of its training step.
struct RankMemoryPlan {
  int64_t stage = 0;
  /// The states its step functions read or write, by kind: parameters, gradient accumulators, optimizer
  /// moments, codec residuals / warm starts / seeds, others (the step counter).
  int64_t parameterBytes = 0, gradientBytes = 0, optimizerBytes = 0, codecBytes = 0, otherStateBytes = 0;
  /// The arena of @stage<s>_train_step: the activation stash and the step's own buffers.
  int64_t stashBytes = 0;
  /// Of stashBytes: the 16-bit parameter copies the step casts once at its start and its stage functions read
  /// (bf16 and fp16 pipelines, ParameterCasts.h): live for the whole step, 2 bytes an element of every weight a GEMM
  /// reads, per orientation it is read in. 0 in fp32 and with parameter-casts=per-call.
  int64_t parameterCopyBytes = 0;
  /// The most micro-batches (of any chunk) whose stash is live at once: F<i> done, B<i> not yet.
  int64_t maxStashed = 0;
  /// The largest arena of a function the train step calls (its temporaries), and that function.
  int64_t temporariesBytes = 0;
  std::string temporariesFunction;
  /// The arena of @stage<s>_eval_step (0 without one): in the generated code a separate heap block.
  int64_t evalBytes = 0;
  /// Everything the generated CPU step allocates at init on this rank (the runtime's ptrain_allocated_bytes
  /// after ptrain_step_init): its states, the arena of each of its functions that calls others, the arena
  /// the others share (the largest of theirs) and its constants read from the constant file. It differs from
  /// peakBytes() by the arenas of functions the train step does not call and by those constants.
  int64_t allocatedBytes = 0;

  int64_t stateBytes() const { return parameterBytes + gradientBytes + optimizerBytes + codecBytes + otherStateBytes; }
  /// The training step's peak: states + stash + the largest callee's temporaries.
  int64_t peakBytes() const { return stateBytes() + stashBytes + temporariesBytes; }
};

/// The plan of every lowered stage of `module` (functions `@stage<s>_train_step` with `ptrain.entry =
/// "train"`), in stage order. Fails, with an error on the module, when it has none (run
/// --ptrain-lower-to-runtime first).
FailureOr<std::vector<RankMemoryPlan>> buildMemoryPlan(ModuleOp module, int64_t alignment = 64);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_MEMORYPLAN_H
