//===- StepFunction.h - One function of the step, for both targets -*- C++ -*-===//
//
// The function level of both code generators (issue 23 item 1: one step
// emitter). A target's function emitter (lib/Target/Cpp/CppEmitter.h,
// lib/Target/Cuda/EmitCuda.cpp) derives from StepFunction, which owns what
// both do alike:
//   - the op walk and its checks (checkOps: one block; static-shape tensors of
//     the model's, the codecs' and the masks' element types), with the
//     target's set of ops and its own refusals as the hook checkOp;
//   - the storage from the one liveness analysis (planStorage:
//     include/ptrain/Analysis/BufferLiveness.h with the target's
//     StorageRules, every value named as NamedStorage.h names it), arena
//     pointers and the pointer types of the signature;
//   - the current op's block, its host arrays and notes (the KernelTarget
//     context of the shared op emitters, KernelTarget.h);
//   - the chunks per op handed to the block outliner (BlockOutliner.h);
//   - the pipeline peer of a send or receive (pointToPointStage).
// What only one target has stays in its class: the memory kind of a state
// pointer, the collectives (MPI requests, NCCL streams and events), the AdamW
// table, constants (file, generated or device block) and the entry point's C
// ABI shape.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_STEPFUNCTION_H
#define PTRAIN_TARGET_COMMON_STEPFUNCTION_H

#include "Common/FusedChains.h"
#include "Common/KernelTarget.h"
#include "Common/NamedStorage.h"

#include "ptrain/Analysis/BufferLiveness.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Target/Common/BlockOutliner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>

namespace mlir::ptrain::target {

class CommGroups;
struct CodecKernelCall;
struct CompressedAllReduceArgs;

/// The static-shape tensor type of `type` (a request: its value's type; a send's request: a null type) whose
/// element type is f32 or i64, with `codes` also the codec codes' i32, i8, f16 and bf16, with `masks` also i1
/// (one uint8_t per element); else an error at `op` naming `what`, prefixed by the target's `flag`.
FailureOr<RankedTensorType> checkTensorType(Operation *op, Type type, const Twine &what, StringRef flag,
                                            bool codes = false, bool masks = false);

/// An optimizer kernel both runtimes call under their own names and parameters (OptimizerOps.cpp): the CPU's
/// take the learning rate computed on the host and update in place (ptrain_<name>), CUDA's the schedule and the
/// device step counter and update out of place (ptrain_cuda_<name>). lr_warmup_cosine is the CPU's only,
/// clip_scale_f32 CUDA's only (the CPU computes the scale inline).
enum class OptimizerKernel { adamw_step_f32, sgd_step_f32, sum_squares_f32, clip_scale_f32, lr_warmup_cosine };

/// The collectives both targets start through StepFunction::startCollective (StepOps.cpp): the data-parallel
/// all-reduce and ZeRO-1's reduce-scatter of the gradients and all-gather of the updated shards
/// (docs/DistributedOptimizer.md; Rajbhandari et al. 2020, ZeRO, section 5.1).
enum class Collective { AllReduce, ReduceScatter, AllGather };

/// One function of the step on one target (see the file comment).
class StepFunction : public KernelTarget {
public:
  /// The emitted chunks and the types of the pointers in scope, for the block outliner (BlockOutliner.h).
  EmittedFunction takeChunks() { return {chunks.take(), std::move(types), func->hasAttr("ptrain.entry")}; }

  // KernelTarget: the parts every target writes alike.
  std::string valuePtr(Value v) const override { return storage.lookup(v).name; }
  std::string hostArray(ArrayRef<int64_t> values, StringRef name, StringRef type = "int64_t") override;
  void note(StringRef text) override { block += "    // " + text.str() + "\n"; }

protected:
  /// `arena`: the C variable (a byte pointer or array) this function's buffers live in.
  StepFunction(func::FuncOp func, std::string arena) : func(func), arena(std::move(arena)) {}

  /// The target's check of one op before any code is written: an error at the op (naming the target's flag)
  /// for an op it does not emit, or one of its own limits (a codec it has no kernel for).
  virtual LogicalResult checkOp(Operation &op) = 0;
  /// Whether `op`'s operands and results may be i1 masks.
  virtual bool allowsMasks(Operation &op) const { return true; }

  /// The op families both targets write with the same code up to the hooks below (StepOps.cpp, CodecOps.cpp):
  /// state reads and writes, reshape and tp_copy aliases, calls and returns, the cross-entropy and its gradient,
  /// the all-reduce, ZeRO-1's reduce-scatter and all-gather, send, receive and tensor-parallel all-reduce (their
  /// checks and communicators), the codecs
  /// (compress, decompress, compressed all-reduce: the old states copied into the new ones, the codec kernel's
  /// arguments of CodecKernels.h, the telemetry record), the optimizers (AdamW, SGD, clipping: emitOptimizerOp).
  /// None: `op` is not one of them (the target's own switch: waits, constants, the CPU's compressed
  /// reduce-scatter).
  std::optional<LogicalResult> emitStepOp(Operation *op);
  /// ptrain.compress, decompress or compressed_all_reduce_start (CodecOps.cpp), through the codec hooks below.
  LogicalResult emitCodecOp(Operation *op);
  /// ptrain.adamw, sgd, sum_squares or clip_scale (OptimizerOps.cpp) with the step's scalars where
  /// scalarsOnHost says; none: `op` is none of them.
  std::optional<LogicalResult> emitOptimizerOp(Operation *op);
  /// `const int64_t t` (the 1-based step read from the host counter `step`) and `float lr`, the learning rate of
  /// `schedule` at t (ptrain_lr_warmup_cosine), in the current op's block: the scalars-on-host optimizers' (the
  /// CPU's AdamW table too).
  LogicalResult hostLearningRate(LRScheduleAttr schedule, Value step);

  // Hooks of emitStepOp: what differs between the targets inside the shared families.
  /// State `sym`'s storage as an expression of `v`'s C pointer type (the CPU: its heap block's named pointer;
  /// CUDA: its offset in d_states).
  virtual std::string statePtr(StringAttr sym, Value v) const = 0;
  /// A state write the target writes otherwise (the CPU: a codec state completed at its all-reduce's wait, a
  /// virtual splat filled into the state); none: the copy of the value into the state.
  virtual std::optional<LogicalResult> writeStateHook(StateWriteOp write) { return std::nullopt; }
  /// The C function of the step's function `callee` (a func.call): ptrain_step_<name> / device_<name>.
  virtual std::string calleeFunction(StringRef callee) const = 0;
  /// A one-element f32 tensor a kernel takes by value (the CPU: `p[0]`, a host read) or by pointer (CUDA).
  virtual std::string scalarArg(Value v) const = 0;
  /// Where the optimizer's scalars live (OptimizerOps.cpp): true on the host (the CPU: the learning rate and the
  /// clip scale computed there, the step counter a host value), false on the device (CUDA: the kernels compute
  /// them from the device step counter, so the step reads nothing back).
  virtual bool scalarsOnHost() const = 0;
  /// One optimizer kernel's checked call on the target's runtime (ptrain_<name> / ptrain_cuda_<name>); an error
  /// (an emitter bug) for a kernel the target does not have.
  virtual LogicalResult optimizerCall(OptimizerKernel kernel, ArrayRef<std::string> args) = 0;
  /// The communicator groups of the module (CommGroups.h).
  virtual CommGroups &communicators() = 0;
  /// The start of an f32 collective of `in` into `request`'s buffer on `comm` (the CPU: an MPI request,
  /// ptrain_<kind>_start; CUDA: NCCL on the stream, ptrain_nccl_<kind>, the communicator remembered for the
  /// wait): an all-reduce or a reduce-scatter (`reduction`: PTRAIN_REDUCE_SUM or _AVG) or an all-gather (no
  /// reduction); `count` is the runtime's count, in elements (the input's for an all-reduce and an all-gather,
  /// a rank's block of the output for a reduce-scatter, as MPI_Ireduce_scatter_block and ncclReduceScatter).
  virtual LogicalResult startCollective(Collective kind, const std::string &comm, Value in, Value request,
                                        int64_t count, StringRef reduction) = 0;
  /// A send (or receive) of `buffer` on the pipeline axis; the peer is this function's stage + `offset`.
  virtual LogicalResult pointToPoint(Operation *op, bool isSend, Value buffer, Value request, StringRef grid,
                                     StringRef axis, int64_t offset) = 0;
  /// A blocking f32 sum all-reduce of `op`'s input into its result on `comm` (Megatron's g).
  virtual LogicalResult tpAllReduce(TPAllReduceOp op, const std::string &comm) = 0;
  /// One codec kernel's call (CodecKernels.h) on the target's runtime.
  virtual LogicalResult codecCall(const CodecKernelCall &call) = 0;
  /// The start of a compressed all-reduce with `args` on `comm` (the static codec and the new states' copies are
  /// written already).
  virtual LogicalResult startCompressedAllReduce(CompressedAllReduceStartOp op, const std::string &comm,
                                                 const CompressedAllReduceArgs &args) = 0;
  /// The codec telemetry's record after a compress (CodecTelemetry.h): nothing for an op without a site.
  virtual void compressTelemetry(CompressOp op) = 0;
  /// A compress op's own encoder where the target has one for it (the CPU: the kernel --ptrain-outline-codecs
  /// generated for the site, docs/GeneratedKernels.md), written instead of the codec kernel's call; none: the
  /// runtime's kernel (codecCall).
  virtual std::optional<LogicalResult> generatedEncoder(CompressOp op) { return std::nullopt; }
  /// An AdamW update through the kernel the compiler generated for it, where the target has one (the CPU: the
  /// kernel --ptrain-outline-adamw generated, docs/GeneratedKernels.md "AdamW over a bucket"), written after the
  /// host's learning rate and the copies of p, m and v instead of the runtime's kernel; none: the runtime's.
  virtual std::optional<LogicalResult> generatedAdamWUpdate(AdamWOp op) { return std::nullopt; }
  /// The op of a fused chain (an op of `fused.chainOf`): a note for all but the chain's last op (nothing else: the
  /// kernel computes it); at the last op, where every input is still intact, the target's call of the kernel
  /// (generatedChainCall). Each target's op switch calls it instead of the op's runtime kernel.
  LogicalResult emitFusedChainOp(Operation *op);
  /// The call of `chain`'s generated kernel at its last op (the CPU: the object's C function on the pointers;
  /// CUDA: ptrain_cuda_kernel_launch of its PTX kernel with the pointers' addresses, on the step's stream).
  virtual LogicalResult generatedChainCall(const FusedChain &chain) = 0;
  /// Whether `result` is an intermediate of a fused chain that nothing after the chain reads: the kernel never
  /// writes it, and neither target declares its pointer (an unused variable for the host compilers and nvcc).
  bool isUnwrittenIntermediate(Value result) const;
  /// One line of C++ in the current op's block (indented, without its newline).
  void blockLine(const std::string &code) { block += "    " + code + "\n"; }

  /// The walk: the function has one block, its arguments and results are supported tensors (checkTensorType),
  /// and so is every op (checkOp) and its operands and results (codes for codec ops, transfers, waits, casts
  /// and bf16 GEMMs; masks where allowsMasks); fills `ops` and `opIndex`.
  LogicalResult checkOps();
  /// The storage of every value from the liveness analysis with `rules` (with `place`, the offsets too; else
  /// the target adds its kernels' scratch, then places), named `argPrefix`<N> and v<N> (NamedStorage.h); the
  /// pointer types of the arguments (`const T *argPrefix<N>`) and results (`T *outPrefix<N>`).
  void planStorage(StorageRules rules, bool place, StringRef argPrefix, StringRef outPrefix);
  /// The start of `op`'s emission: no block, no scratch taken.
  void beginOp(Operation *op) {
    current = op;
    nextScratch = 0;
    block.clear();
  }
  /// Ends `op`'s chunk (BlockOutliner.h): the op's block as its code, the constant's pointer among its
  /// declarations. A chunk with nothing (an op a GEMM folded, GemmOps.h) is dropped; a state read used in place
  /// (nothing in its block) and a transpose a GEMM wrote (an alias) are only their pointers, declared where
  /// first named (ChunkList::defer), so that each layer's reads fall into the layer's block instead of a run of
  /// reads at the function's top, and a layer's weight gradients leave no alias-only chunks between the layers.
  void finishChunk(Operation *op, EmittedChunk chunk);
  /// Arena buffer `buffer` as a `type *` expression ("nullptr" for -1).
  std::string bufferPtr(int64_t buffer, StringRef type) const;
  /// The function's pipeline stage for a send or receive on `axis`: an error at `op` without ptrain.stage or
  /// on another axis than pp (the peer is the stage + the op's offset).
  FailureOr<int64_t> pointToPointStage(Operation *op, StringRef axis) const;

  func::FuncOp func;
  std::string arena; ///< the C variable this function's buffers live in
  std::string outPrefix; ///< the results' pointer names (planStorage): out_<i> / d_out_<i>
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> opIndex;
  llvm::DenseMap<Value, NamedStorage> storage;
  /// The storage analysis (BufferLiveness.h): kinds, buffers and offsets, GEMM fusion, the kernels' scratch.
  std::optional<BufferLiveness> liveness;
  Operation *current = nullptr;
  size_t nextScratch = 0;
  std::string block;                      ///< the current op's declarations and calls
  ChunkList chunks;                       ///< one per op (BlockOutliner.h)
  std::optional<ChunkDecl> constantDecl;  ///< the current constant's pointer, declared at function scope
  llvm::StringMap<std::string> types;     ///< the C type of every pointer declared at function scope
  int64_t valueCount = 0;
  int64_t arenaBytes = 0;
  bool runsNowhere = false; ///< a pipeline module's function of no stage: its entry point only refuses
  /// The chains whose generated kernel this function calls (FusedChains.h), planned by the target on its placed
  /// buffers: the CPU's for every kernel, CUDA's for those with a GPU version (KernelPtx.h).
  FusedChains fused;
};

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_STEPFUNCTION_H
