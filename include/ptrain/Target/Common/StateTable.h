//===- StateTable.h - The state table of a step as runs of layers -*- C++ -*-===//
//
// The generated code's table of states (kStates: one ptrain_state_desc_t per
// state, docs/CodegenCpu.md "Storage") written so that it grows with the
// distinct states of a layer, not with the layers (issue 23 item 3). A state
// is a template row (its key with its first number cut out, dtype, kind, rank,
// dims, init) and that number; the states are runs: the templates [first,
// first + period) repeated `count` times, the number `number0 + c * step` in
// repeat c. The twelve gradients of a transformer layer are one template row
// each, and the gradients of all its layers one run. The code expands the runs
// into kStates and kStateDims when the library is loaded (a static
// initializer), so every other part of the step reads the table as before.
// A stage's list of state indices is written as (start, length) ranges and
// expanded the same way.
//
// The compression is run-length encoding of periodic sequences (a "repeat"
// of a period, as LZ77's length-distance pairs with distance = period; Ziv and
// Lempel, "A universal algorithm for sequential data compression", IEEE Trans.
// Inf. Theory 23(3), 1977, section II), greedy: at each state the period that
// covers the most states.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_STATETABLE_H
#define PTRAIN_TARGET_COMMON_STATETABLE_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir::ptrain::target {

/// A run of the state table: the templates [first, first + period) repeated `count` times, the key's number
/// number0 + c * step in repeat c (templates without a number ignore it).
struct StateRun {
  int64_t first = 0, period = 0, count = 0, number0 = 0, step = 0;
};

/// A state's key as a template: prefix + number + suffix when `numbered`, else prefix alone. The number is the
/// key's first run of decimal digits (at most 9, no leading zero), so that the keys of a layer's states differ
/// from another layer's only in it.
struct KeyTemplate {
  std::string prefix, suffix;
  bool numbered = false;
  int64_t number = 0;
};
KeyTemplate keyTemplate(StringRef key);

/// The runs that rebuild the sequence `items` of (template index, number) (numbers of unnumbered templates are
/// ignored: pass `numbered[t]` per template), greedily: at each position the repeated period covering the most
/// items; items no period repeats from are joined into one period where they can.
std::vector<StateRun> compressStateRuns(ArrayRef<std::pair<int64_t, int64_t>> items, ArrayRef<bool> numbered);

/// The C++ of the state table of `states` (in their order; a state's index is its position): the templates
/// and runs (data), `kNumStates`, the arrays `kStateDims` and `kStates` (descriptors with data = nullptr, the
/// dims in kStateDims in state order), and, per `indexLists` entry (name, indices), `name` as an array of the
/// indices, all filled when the library is loaded. Each index list is written as ranges.
std::string stateTable(ArrayRef<StateOp> states,
                       ArrayRef<std::pair<std::string, std::vector<int64_t>>> indexLists);

/// Where the named state pointers go in a unit (withNamedStatePointers replaces it).
inline constexpr llvm::StringLiteral kNamedStatesMark = "@@named state pointers@@\n";

/// `unit` with its named state pointers in place of kNamedStatesMark: `[[maybe_unused]] float *&<var> =
/// state_f32[<index>];` (int64_t and state_i64 for an i64 state), `index` a state's position in `states`, for
/// the states whose `var` the unit names (issue 23: the others' lines grew with the layers). Both targets write
/// their states' pointers (CPU: the heap blocks; CUDA: the host mirrors) this way.
std::string withNamedStatePointers(StringRef unit, ArrayRef<StateOp> states,
                                   llvm::function_ref<std::string(StateOp)> var);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_STATETABLE_H
