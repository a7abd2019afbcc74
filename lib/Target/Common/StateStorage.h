//===- StateStorage.h - Heap storage of a step, allocated at init -*- C++ -*-===//
//
// A compiled step holds no static storage sized by the model (issue 23): its
// states (on CUDA: their host mirrors), arenas and read constants are heap
// blocks (ptrain_alloc) that ptrain_step_init allocates for this rank only
// (its pipeline stage's) and ptrain_step_finalize frees. The CPU and CUDA code
// generators write the same blocks with these helpers (docs/CodegenCpu.md,
// "Storage").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_STATESTORAGE_H
#define PTRAIN_TARGET_COMMON_STATESTORAGE_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::ptrain::target {

/// How the generated code allocates its states' blocks:
/// - Rows: a table of one row per state (`StateBlockRow`, walked by `allocateStateBlocks`; stateAllocations
///   writes the table and the call);
/// - Indexed: by their indices in the state table `kStates` (kNumStates ptrain_state_desc_t, their dims in the
///   table, f32 or i64, declared before), whose pointers are the arrays `state_f32` and `state_i64` at the same
///   indices: `allocateStates(indices, n, stage_table, total)` allocates the states `indices` of kStates (all n
///   from 0 when nullptr), their bytes from the descriptors' dims and dtype, each block named
///   `state_<index>_<key as an identifier>` (identifierFrom, the name of the state's pointer in the code), sets
///   the state's pointer and descriptor and copies descriptor indices[i] into stage_table[i] (when given). A
///   stage is then its list of indices (stateIndexList): what grows with the states is a row of kStates and an
///   index, not a row per table.
enum class StateAllocation { Rows, Indexed };

/// Writes the block list of the generated code: `StorageBlock`, `storage_blocks`, `storage_stage` (the stage
/// whose storage is allocated; -1 the whole module's, -2 none), one int64_t counter per name of `totals`,
/// `allocateBlock(T *&out, bytes, total, name)` (ptrain_alloc, counted in `total`), the states' allocation
/// (`states`) and `releaseStorage()` (frees every block, resets storage_stage and the counters).
void emitStorageBlocks(llvm::raw_ostream &os, ArrayRef<std::string> totals,
                       StateAllocation states = StateAllocation::Rows);

/// `const int64_t name[n] = {...};`, the indices `indices` as data, several to a line (wrapInts).
std::string stateIndexList(StringRef name, ArrayRef<int64_t> indices);

/// `PTRAIN_STEP_CALL(allocateBlock(var, bytes, total, "var"));`: one block of `bytes` pointed to by `var`.
std::string allocateBlockCall(StringRef var, int64_t bytes, StringRef total);

/// ptrain_step_num_storage_blocks and ptrain_step_storage_block, the exported view of the blocks (outside the
/// generated code's anonymous namespace).
void emitStorageEntryPoints(llvm::raw_ostream &os);

/// What a target adds to the checkpoint and state-table entry points (emitCheckpointEntryPoints): each doc is
/// `/// ...` lines with their newlines; each statement list is indented lines with their newlines.
struct CheckpointEntryPoints {
  std::string saveDoc, loadDoc, tableDoc;
  std::string saveFirst; ///< before the checkpoint is written (CUDA: the stream bound, the mirrors pulled)
  std::string loadFirst; ///< before it is read (CUDA: the stream bound)
  std::string loadLast;  ///< after it is read (CUDA: the mirrors pushed to the device)
  std::string tableMore; ///< entry points after the table's two (CUDA: ptrain_step_pull_states / _push_states)
};

/// The "State management" section's start (outside the anonymous namespace) and ptrain_step_last_error: the
/// step's own message (stepError) or the runtime's (ptrain_last_error()). Both targets.
void emitLastErrorEntryPoint(llvm::raw_ostream &os);

/// ptrain_step_save / ptrain_step_load (ptrain_checkpoint_save / _load of the states this process owns,
/// active_states: docs/CodegenCpu.md's checkpoint format on both targets, so checkpoints move between them) and
/// ptrain_step_num_states / ptrain_step_states (that table), with `target`'s statements and docs.
void emitCheckpointEntryPoints(llvm::raw_ostream &os, const CheckpointEntryPoints &target);

/// What a target puts into ptrain_step_init (emitStepInitEntryPoint), in this order: its doc (`/// ...` lines),
/// `first` (the CPU: the generated kernels' CPU-feature check), the weights' path (`onnxFile` when NULL),
/// `communicators` (MPI on the CPU; MPI or a TCP rendezvous and NCCL on CUDA; the rank's stage and its states),
/// `storage` (the CPU: its stage's heap blocks and file constants, allocateStorage; CUDA: the device blocks and
/// stream, the pipeline channels, its stage's file constants and the host mirrors), the states' init (the
/// parameters by key from the ONNX file, tensor-parallel slices through initStates when `tpSlices`), then
/// `last` (CUDA: the mirrors pushed to the device). Statement lists are indented lines with their newlines.
struct StepInitEntryPoint {
  std::string doc, first, onnxFile, communicators, storage, last;
  bool tpSlices = false;
};

/// The ptrain_step_init entry point both targets write (issue 23: one writer, the target's parts as above).
void emitStepInitEntryPoint(llvm::raw_ostream &os, const StepInitEntryPoint &target);

/// The statements that allocate the storage of each state of `list` (`var` of a state names its pointer,
/// `index` its entry of kStates), counted in `total`, and point its descriptors at it: kStates[index] and,
/// with a `stageTable`, that table's entry at the state's position in `stageList`. A table of StateBlockRow
/// (one row per state) walked by allocateStateBlocks (emitStorageBlocks): the code does not grow with the
/// states. One braced statement (it may follow a `case` label).
std::string stateAllocations(ArrayRef<StateOp> list, llvm::function_ref<std::string(StateOp)> var,
                             llvm::function_ref<int64_t(StateOp)> index, StringRef stageTable,
                             ArrayRef<StateOp> stageList, StringRef total);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_STATESTORAGE_H
