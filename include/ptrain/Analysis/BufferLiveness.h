//===- BufferLiveness.h - Where a function's values live, and when -*- C++ -*-===//
//
// The one storage analysis of a function body, shared by the code generators
// (--emit-cpp, --emit-cuda) and the memory plan (MemoryPlan.h), so that the
// bytes the plan reports are the bytes the generated code allocates
// (issue 23: planned bytes = allocated bytes).
//
// Every SSA value of the function gets a storage kind:
//   - Argument: the caller's buffer;
//   - State: a ptrain.state_read used in place on the state's storage, unless a
//     write of that state comes before one of its (alias) uses: then it is a
//     copy in the arena; or a GEMM's product accumulated into a gradient state
//     (GemmFusion::accumulatedState, StorageRules::accumulateGemmsIntoStates);
//   - Constant: a literal or a constant read at init (ConstantForm.h), or, when
//     the target generates none (StorageRules::generateConstants false), any
//     constant (the CUDA target's device block);
//   - Arena: a buffer of the function's arena, live over an interval of op
//     indices [first, last]: from its defining op (a generated constant: its
//     first use) to its last use, extended over its aliases;
//   - Alias: the memory of another value (reshapes and tp_copy alias their
//     input; GEMM-fused transposes and bias adds their producer, GemmFusion.h;
//     a send's request its input; a wait the buffer of its start op);
//   - Virtual: a splat only written to states, which the writes fill.
// Beside the values, the arena holds the kernels' scratch: each target
// declares what its kernels need per op (cpuKernelScratch), or adds it while
// it emits (addScratch). Offsets come from greedy by size (Pisarchyk and Lee,
// "Efficient Memory Management for Deep Neural Net Inference", 2020,
// arXiv:2001.03288; TensorFlow Lite's GPU delegate).
//
// What differs between targets is a StorageRules value (StorageRules::cpu(),
// StorageRules::cuda()), never a second copy of the analysis.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_BUFFERLIVENESS_H
#define PTRAIN_ANALYSIS_BUFFERLIVENESS_H

#include "ptrain/Analysis/AdamWRuns.h"
#include "ptrain/Analysis/ConstantForm.h"
#include "ptrain/Analysis/GemmFusion.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace mlir::ptrain {

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

/// The values the wait of a collective keeps live until it: an all-reduce's input (MPI reads the buffer), a
/// compressed all-reduce's input (read again in its second phase) and new states (written back after the
/// wait). Empty for other waits.
SmallVector<Value> valuesHeldUntilWait(WaitOp wait);

/// The scratch bytes the CPU runtime's kernels for `op` take, in the order --emit-cpp asks for them
/// (lib/Target/Cpp/EmitCpp.cpp checks every request against this list): int32 ids of an embedding, layer-norm
/// statistics (and zero bias / recomputed output of its backward), a cross-entropy's int32 labels and
/// log-sum-exp. Empty for other ops.
void cpuKernelScratch(Operation *op, SmallVectorImpl<int64_t> &bytes);

/// What a kernel target changes in the storage of a function (the KernelTarget's memory rules).
struct StorageRules {
  /// A collective's input stays live until its wait, and a compressed all-reduce's new states too
  /// (valuesHeldUntilWait): MPI reads the buffer asynchronously. On CUDA the NCCL call is ordered on the
  /// stream before any later kernel that could reuse the memory.
  bool holdUntilWait = true;
  /// Transposes and batch sums read by GEMMs and fused bias adds are not materialized, dead ops get nothing
  /// (GemmFusion.h).
  bool fuseGemms = true;
  /// Large splats, causal masks and iotas are generated into arena buffers (a splat only written to states:
  /// Virtual), other large constants are read at init (ConstantForm.h). Off: every constant is a Constant.
  bool generateConstants = true;
  /// Runs of AdamW updates are updated in place on the states (AdamWRuns.h): their ops take no buffer.
  bool adamWRuns = true;
  /// A weight gradient's GEMM accumulates into its gradient state (C = the state, beta = 1) instead of a buffer,
  /// an add and a copy into the state (GemmFusion.h). Needs fuseGemms.
  bool accumulateGemmsIntoStates = true;
  /// The attention's head split and merge are read and written in place by strided GEMMs, not materialized
  /// (GemmFusion.h, head permutes; ptrain_gemm_strided_f32). Needs fuseGemms.
  bool foldHeadPermutes = true;
  /// A layer norm's gradient reads the mean and rstd its forward wrote (the forward's scratch, kept live until
  /// the gradient) instead of recomputing the forward into scratch, where the forward is in the same function on
  /// the same input, scale, epsilon and axis (savedStatsOf). The same kernel on the same input: the same bits.
  bool layerNormSavedStats = true;
  /// The GemmFusion options of these rules.
  GemmFusionOptions gemmFusionOptions() const { return {accumulateGemmsIntoStates, foldHeadPermutes}; }
  /// The scratch of each op's kernels (bytes, in request order); empty: the target adds it (addScratch).
  std::function<void(Operation *, SmallVectorImpl<int64_t> &)> scratch;
  /// Offsets and sizes are multiples of this (bytes).
  int64_t alignment = 64;

  /// The CPU target: host memory, MPI, OpenBLAS GEMMs with fusion (accumulating into gradient states, head
  /// permutes read and written in place),
  /// generated constants, AdamW tables, cpuKernelScratch, 64-byte alignment.
  static StorageRules cpu();
  /// The CUDA target: device memory, NCCL on streams, cuBLAS GEMMs with fusion (as the CPU's, but writing each
  /// gradient into a buffer that is added to its state and materializing the head permutes), layer-norm
  /// gradients recomputing their statistics, every constant
  /// in a device block, scratch added by the emitter, 256-byte alignment (cudaMalloc's).
  static StorageRules cuda();
};

/// Where one SSA value lives.
struct ValueStorage {
  enum Kind { Argument, State, Constant, Arena, Alias, Virtual } kind = Arena;
  Value root;           ///< Alias: the value whose memory this is
  StringAttr state;     ///< State of a value no state_read defines (a GEMM's accumulated product): its state
  int64_t buffer = -1;  ///< Arena: index into buffers()
  bool isConst = false; ///< argument or literal constant (or an alias of one): read-only memory
};

/// The storage and liveness of one single-block function body (its top-level ops, in order).
///
///   BufferLiveness liveness(func, StorageRules::cpu());
///   liveness.run();                     // kinds, buffers (values, then declared scratch) and offsets
///   liveness.lookup(v).kind, liveness.buffers()[liveness.lookup(v).buffer].offset, liveness.arenaBytes()
///
/// A target without declared scratch calls run(/*place=*/false), addScratch per request, then place().
class BufferLiveness {
public:
  BufferLiveness(func::FuncOp func, StorageRules rules);

  /// Decides every value's storage and its buffer; with `place`, also the offsets (place()).
  void run(bool place = true);
  /// A scratch buffer of `bytes` live at `op` only (before place()); its index into buffers().
  int64_t addScratch(Operation *op, int64_t bytes);
  /// Greedy by size over every buffer; returns the arena's bytes.
  int64_t place();

  /// The storage of `v` (an argument or result of an op of the body).
  const ValueStorage &lookup(Value v) const;
  /// The scratch buffers of `op`, in request order.
  ArrayRef<int64_t> scratchOf(Operation *op) const;
  /// With layerNormSavedStats: the ptrain.layer_norm whose mean and rstd (its last two scratch buffers, live
  /// until `grad`) the ptrain.layer_norm_grad `grad` reads, or null (it recomputes them).
  Operation *savedStatsOf(Operation *grad) const { return savedStats.lookup(grad); }
  const std::vector<ArenaBuffer> &buffers() const { return bufferList; }
  /// The value each buffer holds (null for scratch).
  ArrayRef<Value> bufferValues() const { return valueOfBuffer; }
  int64_t arenaBytes() const { return arena; }
  /// The largest sum of aligned buffer sizes live at one op (the lower bound of any arena).
  int64_t lowerBoundBytes() const { return liveBytesLowerBound(bufferList, rules.alignment); }

  /// The body's ops in order and the index of each.
  ArrayRef<Operation *> ops() const { return opList; }
  int64_t indexOf(Operation *op) const { return opIndex.lookup(op); }
  /// With fuseGemms: what GEMMs read in place (GemmFusion.h).
  const GemmFusion &gemms() const { return *gemmFusion; }
  bool fusesGemms() const { return gemmFusion.has_value(); }
  /// With generateConstants: the form of a dense constant (ConstantForm.h), and where a generated one is
  /// filled: its first user's index, or its definition's when several ops read it.
  const ConstantForm *formOf(Value v) const;
  std::optional<int64_t> fillIndexOf(Value v) const;
  /// With adamWRuns: the runs, and the run `op` belongs to (null if none).
  ArrayRef<AdamWRun> adamRuns() const { return runs; }
  const AdamWRun *adamRunOf(Operation *op) const { return runOf.lookup(op); }
  /// State writes of a compressed all-reduce's new state: the state is complete only at the request's wait.
  bool isDeferredWrite(Operation *op) const { return deferredWrites.contains(op); }
  /// With generateConstants: the bytes of the constants read from the constant file (ConstantForm::File), which
  /// the target allocates at init.
  int64_t fileConstantBytes() const { return fileBytes; }

  /// One line per buffer: index, interval, bytes, offset and the value (or "scratch of <op>").
  void print(llvm::raw_ostream &os) const;

private:
  /// The ptrain.layer_norm before `g` in the body on the same input, scale, epsilon and rows whose scratch is
  /// declared, or null.
  Operation *findSavedStats(LayerNormGradOp g) const;

  func::FuncOp func;
  StorageRules rules;
  SmallVector<Operation *> opList;
  llvm::DenseMap<Operation *, int64_t> opIndex;
  std::optional<GemmFusion> gemmFusion;
  std::vector<AdamWRun> runs;
  llvm::DenseMap<Operation *, const AdamWRun *> runOf;
  llvm::DenseSet<Operation *> deferredWrites;
  llvm::DenseMap<Value, ConstantForm> forms;
  llvm::DenseMap<Value, int64_t> fillIndex;
  llvm::DenseMap<Value, ValueStorage> storage;
  std::vector<ArenaBuffer> bufferList;
  std::vector<Value> valueOfBuffer;
  llvm::DenseMap<Operation *, SmallVector<int64_t>> scratch;
  llvm::DenseMap<Operation *, Operation *> savedStats;
  int64_t arena = 0;
  int64_t fileBytes = 0;
};

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_BUFFERLIVENESS_H
