//===- MultiRankExecutor.h - every rank of a plan in one process --*- C++ -*-===//
//
// The in-process, deterministic multi-rank executor of DESIGN.md ("IR levels"): the reference interpreter run
// once per rank of the module's `ptrain.grid`, with in-memory communication. It executes L1-L3 plans (the
// lowered `@stage<s>_train_step` functions of --ptrain-lower-to-runtime with their calls, state, point-to-point
// transfers and collectives) and is the oracle of the plan-level tests. In abstract mode it runs the same
// ranks with types instead of values, which is --ptrain-verify-plan. docs/Plan.md describes both.
//
// Semantics (rendezvous, like MPI's rendezvous protocol for large messages and NCCL):
//  * `ptrain.send_start` / `recv_start` match by (grid, axis, source rank, destination rank, `ptrain.tag`
//    attribute or 0) in posting order; the wait of either side completes once both sides have posted. The
//    send's tensor is copied when it is posted; the received value must have the type the receive expects.
//  * A collective matches the k-th collective that each member of its group posts on the same communicator
//    (grid + set of axes + the group's coordinates on the other axes); its wait completes once every member
//    has posted. All members must post the same op kind, types, reduction, dimension and root.
//  * Reductions run in group-rank order (group rank = row-major over the op's axes in the order listed), in
//    double, rounded once to the element type: the result is the same on every member and on every run.
//  * Ranks run round-robin in rank order, each until it blocks on a `ptrain.wait` or returns. When no rank can
//    move, the executor reports a deadlock naming every blocked rank's wait and the operation it waits for.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_MULTIRANKEXECUTOR_H
#define PTRAIN_INTERPRETER_MULTIRANKEXECUTOR_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Interpreter/Interpreter.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir::ptrain::interp {

/// What the executor computes.
enum class ExecutionMode {
  /// Values: every op is evaluated, state is kept per rank across runs.
  Concrete,
  /// Types only: calls, communication matching and waits are followed, nothing is computed, no state is read.
  /// Used by --ptrain-verify-plan.
  Abstract,
};

/// Part `index` of `parts` of `global` in the layout of --ptrain-shard-tp's `ptrain.tp_slice`: dimension `dim`
/// viewed as groups x parts x chunk, entry [:, index, :] (a fused Q|K|V weight has groups = 3: each part holds
/// its heads of Q, of K and of V). An error when the dimension is not divisible by groups x parts.
llvm::Expected<Tensor> tensorParallelSlice(const Tensor &global, int64_t dim, int64_t groups, int64_t parts,
                                           int64_t index);

/// `global` padded with zeros along `dim` to `padded` entries (a vocabulary-parallel table whose vocabulary
/// --ptrain-shard-tp padded to a multiple of tp: `#ptrain.tp_slice<..., padded = Vp>`); an error when
/// `padded` is smaller than the dimension.
llvm::Expected<Tensor> padTensorParallel(const Tensor &global, int64_t dim, int64_t padded);

class MultiRankExecutor {
public:
  /// Runs the ranks of `module`'s `ptrain.grid` (one rank when the module has none; an error when it has more
  /// than one grid). In concrete mode, a parameter state is loaded on a rank's first read of it from `initial`
  /// and every other state (moments, gradient accumulators, the step counter) starts at zero, as the runtime's
  /// ptrain_state_init_onnx does.
  static llvm::Expected<std::unique_ptr<MultiRankExecutor>> create(ModuleOp module, StateProvider initial,
                                                                   ExecutionMode mode = ExecutionMode::Concrete);
  ~MultiRankExecutor();

  /// Number of ranks (the product of the grid's axis sizes).
  int64_t getNumRanks() const;
  /// The grid's axis names in order (empty without a grid).
  llvm::ArrayRef<std::string> getAxisNames() const;
  /// Size of axis `axis` (1 when the grid has no such axis).
  int64_t getAxisSize(llvm::StringRef axis) const;
  /// Coordinate of `rank` on axis `axis` (0 when the grid has no such axis).
  int64_t getCoordinate(int64_t rank, llvm::StringRef axis) const;
  /// `rank 3 (dp=1, pp=1)`, for messages.
  std::string describeRank(int64_t rank) const;

  /// Abstract mode: treats every axis of `axes` as symmetric and runs only the ranks whose coordinate on each
  /// is 0. Sound when the ranks that differ only on those axes run the same function and no transfer uses
  /// them (the caller checks; --ptrain-verify-plan does): without values, such replicas post the same
  /// operations in the same order, so every collective over a symmetric axis matches on all its members iff
  /// it matches on the representative, and a deadlock or mismatch of a replica is one of its representative.
  /// A collective's group then holds the representatives only; a transfer on a symmetric axis is an error.
  /// An empty list runs every rank again. An error in concrete mode or for an axis the grid does not have.
  llvm::Error setSymmetricAxes(llvm::ArrayRef<std::string> axes);
  /// The ranks run() executes: all of them, or the representatives after setSymmetricAxes.
  int64_t getNumActiveRanks() const;

  /// Runs the function `entryOf(rank)` on `argumentsOf(rank)` on every rank at once, and returns each rank's
  /// results (indexed by rank; empty for ranks setSymmetricAxes skips). Errors: an op the interpreter cannot evaluate,
  /// a transfer or collective whose sides disagree (naming both ops), a peer outside the grid, a deadlock (naming each
  /// blocked rank's wait). After an error the executor's communication state is undefined: make a new executor.
  llvm::Expected<std::vector<std::vector<Tensor>>> run(std::function<std::string(int64_t rank)> entryOf,
                                                       std::function<std::vector<Tensor>(int64_t rank)> argumentsOf);

  /// The name of the function with attribute `ptrain.entry = kind` ("train", "eval") whose `ptrain.stage` is
  /// `rank`'s coordinate on `pp` (the lowered steps of --ptrain-lower-to-runtime); without a pipeline, `@fallback`
  /// when given. An error when there is none.
  llvm::Expected<std::string> entryForRank(int64_t rank, llvm::StringRef kind, llvm::StringRef fallback = "") const;

  /// Called with (rank, the `ptrain.send_start`, the tensor it sends) each time a rank posts a point-to-point
  /// send in concrete mode, before the transfer is matched; an error it returns ends run() with it. Used by
  /// ptrain-interpret --codec-errors to measure candidate codecs on the tensors a plan really sends
  /// (CodecErrorProbe.h). Null: none (the default).
  using SendObserver = std::function<llvm::Error(int64_t rank, SendStartOp send, const Tensor &value)>;
  void setSendObserver(SendObserver observer);

  /// The states of `rank` loaded or written so far, by key (concrete mode).
  const llvm::StringMap<Tensor> &getStates(int64_t rank) const;
  /// The value of state `key` on `rank`, loading it as a read would; an error if the module has no such key.
  llvm::Expected<Tensor> readState(int64_t rank, llvm::StringRef key);

  class Impl;

private:
  explicit MultiRankExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_MULTIRANKEXECUTOR_H
