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
// Buffers are intervals of op indices (from the op that defines a value to
// its last use, extended over its aliases) with a size; offsets into one
// arena per function come from the greedy-by-size heuristic of Pisarchyk and
// Lee, "Efficient Memory Management for Deep Neural Net Inference" (2020,
// arXiv:2001.03288; TensorFlow Lite's GPU delegate), also used by the C++
// and CUDA emitters for their static arenas.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_MEMORYPLAN_H
#define PTRAIN_ANALYSIS_MEMORYPLAN_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::ptrain {

/// The values the wait of a collective keeps live until it: an all-reduce's input (MPI reads the buffer), a
/// compressed all-reduce's input (read again in its second phase) and new states (written back after the
/// wait). Empty for other waits. The emitters' liveness uses it too.
SmallVector<Value> valuesHeldUntilWait(WaitOp wait);

/// A buffer that is live over the op indices [first, last] (inclusive) and takes `bytes`.
struct ArenaBuffer {
  int64_t first = 0, last = 0;
  int64_t bytes = 0;
  int64_t offset = -1; ///< set by planArenaGreedyBySize
};

/// Greedy by size (Pisarchyk and Lee 2020, "Greedy by Size for offset calculation"): the buffers in order of
/// decreasing size (ties: earlier first use, then input order); each goes into the smallest gap between the
/// already placed buffers whose intervals overlap its own that fits it, else after the highest of them.
/// Offsets and sizes are rounded up to `alignment` (a buffer of 0 bytes takes `alignment`). Sets every
/// `offset`, and returns the arena size in bytes. Buffers whose intervals overlap never overlap in memory.
int64_t planArenaGreedyBySize(std::vector<ArenaBuffer> &buffers, int64_t alignment);

/// The lower bound of any arena for `buffers`: the largest sum of aligned sizes live at one op index.
int64_t liveBytesLowerBound(const std::vector<ArenaBuffer> &buffers, int64_t alignment);

/// The buffers of one function and their arena. The values live in the arena are the results of ops other
/// than constants (static), state reads used in place (the state's storage; a copy when a write of the state
/// comes before a use), reshapes and tp_copy (aliases of their input), sends (the request holds its input
/// until the wait) and waits (the buffer of their start op). Arguments are the caller's.
struct FunctionMemoryPlan {
  std::vector<ArenaBuffer> buffers;
  /// The value each buffer holds (the root of its aliases).
  std::vector<Value> values;
  int64_t arenaBytes = 0, lowerBoundBytes = 0, sumBytes = 0;
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
  /// The most micro-batches (of any chunk) whose stash is live at once: F<i> done, B<i> not yet.
  int64_t maxStashed = 0;
  /// The largest arena of a function the train step calls (its temporaries), and that function.
  int64_t temporariesBytes = 0;
  std::string temporariesFunction;
  /// The arena of @stage<s>_eval_step (0 without one): in the generated code a separate static buffer.
  int64_t evalBytes = 0;

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
