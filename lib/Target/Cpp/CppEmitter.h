//===- CppEmitter.h - The CPU code generator's emitters ----------*- C++ -*-===//
//
// The classes of --emit-cpp (docs/CodegenCpu.md), shared by its files, one
// concept each:
//   - EmitCpp.cpp: the translation unit and its entry points (CppEmitter::emit);
//   - EmitCppStorage.cpp: the module's storage, allocated per rank at init
//     (the state table, the arenas, the constants read from the constant file);
//   - EmitCppFunction.cpp: one function's storage (the analysis of
//     include/ptrain/Analysis/BufferLiveness.h), constants and entry point;
//   - EmitCppOps.cpp: the op switch (FunctionEmitter::emitOp).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_CPPEMITTER_H
#define PTRAIN_TARGET_CPP_CPPEMITTER_H

#include "ptrain/Target/Cpp/EmitCpp.h"

#include "Common/CommGroups.h"
#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"
#include "Common/FusedChains.h"
#include "Common/KernelTarget.h"
#include "Common/NamedStorage.h"
#include "Common/RuntimeCallTable.h"
#include "Common/StepFunction.h"
#include "EmitModelOps.h"
#include "EmitTelemetry.h"
#include "GeneratedAdamW.h"

#include "ptrain/Analysis/BufferLiveness.h"
#include "ptrain/Analysis/ElementwiseChains.h"
#include "ptrain/Analysis/GemmFusion.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Target/Common/BlockOutliner.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::ptrain::cpp {

/// Arena offsets and constant-file offsets are multiples of this (bytes).
constexpr int64_t kArenaAlignment = 64;

/// The CPU runtime's call of a shared kernel: ptrain_<name> (SharedKernels.def).
inline RuntimeCall cpuKernel(target::Kernel kernel) {
  switch (kernel) {
#define PTRAIN_SHARED_KERNEL(name)                                                                                 \
  case target::Kernel::name:                                                                                       \
    return RuntimeCall::ptrain_##name;
#include "Common/SharedKernels.def"
  }
  llvm_unreachable("every shared kernel has a CPU call");
}

/// The static-shape f32/i64 tensor type of `value` (with `codes`, also the codecs' i32, i8, f16 and bf16), or an
/// error at `op` (target::checkTensorType for --emit-cpp).
/// With `masks`, also i1 (a value inside a function, never a state, argument or result).
inline FailureOr<RankedTensorType> supportedType(Operation *op, Type type, const Twine &what, bool codes = false,
                                                 bool masks = false) {
  return target::checkTensorType(op, type, what, "--emit-cpp", codes, masks);
}

inline bool isF32(Value v) { return tensorOf(v).getElementType().isF32(); }
inline const char *cType(Value v) { return elementCType(tensorOf(v).getElementType()); }
inline int64_t elemBytes(Value v) { return elementBytes(tensorOf(v).getElementType()); }

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

struct StateInfo {
  StateOp op;
  int64_t index;   ///< position in the state table
  std::string var; ///< the pointer to its heap block (allocated by ptrain_step_init)
  std::string dims; ///< its dims in the flat table kStateDims ("kStateDims + offset"; empty for a scalar)
};

/// A large constant that is neither a splat nor generated (ConstantForm::File): its bytes at `offset` of the
/// module's constant file, read at init into the heap block `var` by the ranks whose functions use it.
struct FileConstant {
  std::string var, type;
  int64_t offset = 0, bytes = 0;
  std::optional<int64_t> stage; ///< the stage of its function (ptrain.stage); none: every rank
  Location loc;
};

/// One function's arena: its own (a function that calls others, `name`) or its share of the callees'
/// ptrain_arena (`name` empty).
struct FunctionArena {
  std::string name;
  int64_t bytes;
  std::optional<int64_t> stage; ///< its ptrain.stage; none: every rank's
};

/// The module's constant file (step.consts.bin): the bytes of every FileConstant, each at a 64-byte offset.
struct ConstantFile {
  std::string bytes;
  std::vector<FileConstant> constants;
};

/// Where a function's SSA value lives (BufferLiveness.h) and its pointer's name. Constant: a literal array (at
/// most kLiteralElements) or a FileConstant; Virtual: a splat only written to states, which their writes fill,
/// with no memory of its own.
using Storage = target::NamedStorage;

class CppEmitter {
public:
  CppEmitter(ModuleOp module, const EmitCppOptions &options) : module(module), options(options) {}
  LogicalResult emit(raw_ostream &os);
  /// The constant file of the emitted module (written by emitCpp to options.constantsFile).
  const ConstantFile &getConstantFile() const { return constantFile; }

private:
  LogicalResult collectStates();
  /// The heap storage of each rank (states, arenas, file constants) and its allocation and release.
  LogicalResult emitStorageAllocation(bool pipeline, ArrayRef<FunctionArena> arenas,
                                      raw_ostream &s);
  LogicalResult emitFunction(func::FuncOp func, std::string &code, int64_t &arenaBytes);

  ModuleOp module;
  const EmitCppOptions &options;
  llvm::DenseMap<StringAttr, StateInfo> states;
  SmallVector<StateOp> stateOrder;
  /// Pipeline modules: the states each stage's functions (attribute ptrain.stage) use, in table order.
  std::map<int64_t, llvm::SetVector<StateOp>> stageStates;
  CommGroups comms;
  CodecSites sites; ///< codec telemetry (EmitTelemetry.h)
  std::string constants; ///< static constant arrays of every function
  int64_t numConstants = 0;
  ConstantFile constantFile;
  /// The type of every namespace-scope variable a function body may name: states, their dims, constants,
  /// arenas, communicators (the block outliner passes those that differ between occurrences).
  llvm::StringMap<std::string> globals;
};

//===----------------------------------------------------------------------===//
// One function
//===----------------------------------------------------------------------===//

/// Emits one function: plans its memory, then writes its body op by op. The CPU target of the shared function
/// walk (StepFunction.h) and op emitters (KernelTarget.h): host memory, the runtime's kernels (RuntimeCalls.def).
class FunctionEmitter final : public CallWriter, public target::StepFunction {
public:
  FunctionEmitter(func::FuncOp func, llvm::DenseMap<StringAttr, StateInfo> &states, CommGroups &comms,
                  const CodecSites &sites, std::string &constants, int64_t &numConstants, ConstantFile &file,
                  llvm::StringMap<std::string> &globals, std::string arena)
      : StepFunction(func, std::move(arena)), states(states), comms(comms), sites(sites), constants(constants),
        numConstants(numConstants), file(file), globals(globals) {}

  /// Plans the function's storage and emits its chunks (nothing for a function that runs on no rank);
  /// `arenaBytes` is its arena's size.
  LogicalResult prepare(int64_t &arenaBytes);
  /// Calls the generated kernel of each chain --ptrain-outline-elementwise marked (docs/GeneratedKernels.md)
  /// instead of the runtime's kernel per op; false (the default) emits every op with the runtime's kernels.
  void setUseKernels(bool use) { useKernels = use; }
  /// EmitCppOptions::accumulateGemmsIntoStates.
  void setAccumulateGemms(bool accumulate) { accumulateGemms = accumulate; }
  /// EmitCppOptions::foldHeadPermutes.
  void setFoldHeadPermutes(bool fold) { foldHeadPermutes = fold; }
  /// EmitCppOptions::layerNormSavedStats.
  void setLayerNormSavedStats(bool saved) { layerNormSavedStats = saved; }
  /// Appends the documented entry point to `code` with `body` (its chunks, repeated blocks replaced by calls;
  /// only its refusal when it runs on no rank).
  LogicalResult writeFunction(std::string &code, const std::string &body);
  /// The entry point's declaration (set by writeFunction): the repeated blocks, written before the entry points,
  /// may call it (a pipeline step's calls of its stage functions).
  const std::string &getDeclaration() const { return declaration; }

private:
  /// Plans the function's storage and writes its body; `arenaBytes` is its arena's size.
  LogicalResult planAndEmitBody(int64_t &arenaBytes);
  LogicalResult checkOp(Operation &op) override;
  LogicalResult deferCompressedStateWrites();
  /// The next scratch buffer of the current op (cpuKernelScratch declares them); -1 and an internal error at
  /// the end of the op when `bytes` is not what it declared.
  int64_t scratch(int64_t bytes);
  LogicalResult emitOp(Operation *op);
  /// The marked chains of this function whose kernel it calls (EmitKernelCalls.cpp): every chain whose inputs
  /// are all still intact where its last op runs and whose outputs are arena buffers that overlap no input
  /// (or one input exactly, read at the same index); the others stay per-op calls.
  LogicalResult planFusedChains();
  /// The arena byte range [begin, end) of `v` (through aliases), or nullopt for memory outside the arena
  /// (states, arguments, literal constants).
  std::optional<std::pair<int64_t, int64_t>> arenaRangeOf(Value v);
  /// The AdamW updates --ptrain-outline-adamw marked whose kernel this function calls (EmitKernelCalls.cpp):
  /// those of an AdamW table (in place on the states), and the others where the clip scale's mul they fold in
  /// is the op before them (state reads between) and its inputs share no arena bytes with the update's results,
  /// which the copies of p, m and v write before the kernel runs; the others keep ptrain_adamw_step_f32.
  LogicalResult planAdamWKernels();
  /// The call of a fused chain's kernel (StepFunction::emitFusedChainOp at its last op): the object's C function.
  LogicalResult generatedChainCall(const target::FusedChain &chain) override;
  LogicalResult emitConstant(arith::ConstantOp op);
  /// Writes the generated constant `v` (a large splat, causal mask or iota) into `out` (its arena buffer, or
  /// the state a Virtual splat is written to).
  LogicalResult generateConstant(Value v, const std::string &out);

  // Helpers writing into `body`.
  std::string ptr(Value v) const override { return valuePtr(v); }
  void line(const std::string &code) override { block += "    " + code + "\n"; }
  /// A `static const int64_t` array declared in the current op's block; its name, or "nullptr" when empty.
  std::string dims(ArrayRef<int64_t> values, StringRef name) { return hostArray(values, name); }

  // KernelTarget (the shared op emitters, KernelTarget.h).
  StringRef flag() const override { return "--emit-cpp"; }
  LogicalResult callKernel(target::Kernel kernel, ArrayRef<std::string> args) override {
    return call(cpuKernel(kernel), args);
  }
  std::optional<std::pair<std::string, std::string>> savedLayerNormStats(Operation *op) override {
    Operation *fwd = liveness->savedStatsOf(op);
    if (!fwd)
      return std::nullopt;
    ArrayRef<int64_t> s = liveness->scratchOf(fwd);
    return std::pair(bufferPtr(s[s.size() - 2], "float"), bufferPtr(s.back(), "float"));
  }
  LogicalResult callStridedGemm(ArrayRef<std::string> args) override {
    return call(RuntimeCall::ptrain_gemm_strided_f32, args);
  }
  bool hasTransposedGemm() const override { return true; }
  LogicalResult callTransposedGemm(ArrayRef<std::string> args) override {
    return call(RuntimeCall::ptrain_gemm_transposed_f32, args);
  }
  std::string scratchPtr(int64_t bytes, StringRef type) override { return bufferPtr(scratch(bytes), type); }
  FailureOr<std::string> rankOffsetsArray(TPSplitOp op, StringRef name) override {
    return writeTpSplitOffsets(op, comms, name, block);
  }
  /// One runtime call, its status checked; fails (an emitter bug) on a parameter-count mismatch.
  LogicalResult call(RuntimeCall callee, ArrayRef<std::string> args) override;
  // Hooks of the op families both targets share (StepFunction::emitStepOp, EmitCppOps.cpp): host heap states,
  // MPI requests.
  std::string statePtr(StringAttr sym, Value) const override { return states[sym].var; }
  std::optional<LogicalResult> writeStateHook(StateWriteOp write) override;
  std::string calleeFunction(StringRef callee) const override { return "ptrain_step_" + callee.str(); }
  std::string scalarArg(Value v) const override { return valuePtr(v) + "[0]"; }
  bool scalarsOnHost() const override { return true; }
  LogicalResult optimizerCall(target::OptimizerKernel kernel, ArrayRef<std::string> args) override;
  target::CommGroups &communicators() override { return comms; }
  LogicalResult startCollective(target::Collective kind, const std::string &comm, Value in, Value request,
                                int64_t count, StringRef reduction) override;
  /// A send or receive on the pipeline axis: the peer is this function's stage (ptrain.stage) + offset.
  LogicalResult pointToPoint(Operation *op, bool isSend, Value buffer, Value request, StringRef grid,
                             StringRef axis, int64_t offset) override;
  LogicalResult tpAllReduce(TPAllReduceOp op, const std::string &comm) override;
  LogicalResult codecCall(const target::CodecKernelCall &k) override;
  LogicalResult startCompressedAllReduce(CompressedAllReduceStartOp op, const std::string &comm,
                                         const target::CompressedAllReduceArgs &args) override;
  void compressTelemetry(CompressOp op) override;
  std::optional<LogicalResult> generatedEncoder(CompressOp op) override;
  std::optional<LogicalResult> generatedAdamWUpdate(AdamWOp op) override;

  llvm::DenseMap<StringAttr, StateInfo> &states;
  CommGroups &comms;
  const CodecSites &sites;
  std::string &constants;
  int64_t &numConstants;
  ConstantFile &file;
  llvm::StringMap<std::string> &globals; ///< the type of each namespace-scope constant (BlockOutliner.h)
  int64_t fillCount = 0; ///< names of the fill values of the current op

  const GemmFusion *gemms = nullptr; ///< transposes and batch sums read by GEMMs (GemmFusion.h)
  bool scratchMismatch = false;
  /// State writes of a compressed all-reduce's new state: the runtime completes the state at the request's
  /// wait, so the copy into the state's storage is emitted after that wait instead of at the write.
  llvm::DenseMap<Operation *, SmallVector<StateWriteOp>> writesAfterWait;
  llvm::DenseSet<Operation *> deferredWrites;
  bool useKernels = false;
  bool accumulateGemms = true;
  bool foldHeadPermutes = true;
  bool layerNormSavedStats = true;
  llvm::DenseMap<Operation *, GeneratedAdamW> generatedAdamW; ///< the AdamW updates calling their kernel
  llvm::DenseMap<Operation *, Operation *> foldedClipMuls;    ///< a folded clip mul -> its AdamW update
  std::string declaration;
};

/// Whether `func` reads or writes a state.
bool usesStates(func::FuncOp func);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_CPPEMITTER_H
