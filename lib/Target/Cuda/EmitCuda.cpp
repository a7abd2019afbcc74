//===- EmitCuda.cpp - The CUDA code generator (--emit-cuda) ---------------===//
//
// One CUDA translation unit per module, single-rank or lowered per rank (docs/CodegenCuda.md):
//   1. a host mirror of every ptrain.state (the keyed table that
//      ptrain_state_init_onnx and the checkpoints read and write) and its
//      offset in ONE device block of states; constants in one device block;
//   2. per function, the storage analysis shared with --emit-cpp and the
//      memory plan (include/ptrain/Analysis/BufferLiveness.h,
//      StorageRules::cuda()) over one device arena: state reads use the
//      device state in place, reshapes alias their input, every other tensor
//      and kernel scratch gets an arena offset reused by liveness;
//   3. per op, calls of libptrain_runtime_cuda's call table (CudaCallTable.h:
//      the model kernels, cuBLAS GEMM) on the step's compute stream (a
//      pipeline's sends and receives on their channels' streams,
//      EmitCudaComm.h), under a comment with the op's location, each status
//      checked and returned;
//   4. the C ABI of --emit-cpp (host pointers in and out), so plan.json,
//      ptrain-run and the tests treat both targets alike;
//   5. the ops' chunks of every function go through the block outliner of
//      --emit-cpp (include/ptrain/Target/Common/BlockOutliner.h): identical
//      layers are written once as host functions on device pointers, called
//      with a row of what differs (arena, state and constant offsets).
// The unit is built in memory and written only when every op was emitted.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Cuda/EmitCuda.h"

#include "Common/CommGroups.h"
#include "Common/ConstantFile.h"
#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"
#include "Common/EmitTraffic.h"
#include "Common/FusedChains.h"
#include "Common/GemmOps.h"
#include "Common/NamedStorage.h"
#include "Common/OpGeometry.h"
#include "Common/PipelineDriver.h"
#include "Common/RuntimeCallTable.h"
#include "Common/StateStorage.h"
#include "Common/StepFunction.h"
#include "Common/TensorParallelSlices.h"
#include "Common/VerifyPlanBeforeEmit.h"
#include "CudaCallTable.h"
#include "EmitCudaCodecs.h"
#include "EmitCudaComm.h"
#include "EmitCudaModelOps.h"
#include "EmitCudaTransformerOps.h"
#include "StageStates.h"
#include "ptrain/Target/Common/StateTable.h"

#include "ptrain/Analysis/BufferLiveness.h"
#include "ptrain/Analysis/ConstantForm.h"
#include "ptrain/Analysis/ElementwiseChains.h"
#include "ptrain/Analysis/GemmFusion.h"
#include "ptrain/Target/Common/BlockOutliner.h"
#include "ptrain/Target/Cuda/KernelPtx.h"
#include "ptrain/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>
#include <set>
#include <type_traits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;
using namespace mlir::ptrain::cuda;

namespace {

constexpr int64_t kAlignment = 256; ///< device buffers: cudaMalloc's alignment

int64_t alignUp(int64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

/// A state's place in a device state block: its bytes rounded up to the alignment (kStateBytes,
/// kStage<s>StateBytes and getCudaStateBytes all add these).
int64_t stateBlockBytes(StateOp state) {
  return alignUp(numElements(state.getTensorType().getShape()) * elementBytes(state.getTensorType().getElementType()));
}

/// The static-shape tensor type check of both targets (StepFunction.h) for --emit-cuda.
LogicalResult checkType(Operation *op, Type type, const Twine &what, bool codes = false, bool masks = false) {
  return failure(failed(target::checkTensorType(op, type, what, "--emit-cuda", codes, masks)));
}

bool isF32(Value v) { return tensorOf(v).getElementType().isF32(); }
const char *cType(Value v) { return elementCType(tensorOf(v).getElementType()); }

struct StateInfo {
  StateOp op;
  std::string var;  ///< the host mirror (a heap block of ptrain_step_init), a name for state_f32/i64[index]
  int64_t offset;   ///< in the device block of states
  int64_t index;    ///< in kStates
  std::string dims; ///< its dims in kStateDims ("kStateDims + offset"; empty for a scalar)
};

/// The step's handle of generated kernel `kernel` (a `void *` at namespace scope, set at set-up).
std::string generatedKernelHandle(StringRef kernel) { return "generated_" + kernel.str(); }

/// Whether `op` is the nested module of generated kernels (--ptrain-outline-elementwise).
bool isKernelModule(Operation &op) {
  auto module = dyn_cast<ModuleOp>(op);
  return module && module.getSymName() == kKernelModuleName;
}

/// Where a function's SSA value lives, always on the device (BufferLiveness.h), and its pointer's name.
using Storage = target::NamedStorage;

/// The module-wide storage the functions share.
struct ModuleStorage {
  llvm::DenseMap<StringAttr, StateInfo> states;
  SmallVector<StateOp> stateOrder;
  int64_t stateBytes = 0;
  std::string constants;                                       ///< host arrays of every constant
  SmallVector<std::pair<std::string, int64_t>> constantCopies; ///< (host array, device offset) and bytes below
  SmallVector<int64_t> constantBytes;
  /// Per constant: empty for a host array copied to the device, else the statement that writes a splat into its
  /// device range at set-up (issue 23: a splat, e.g. the zeros that reset a gradient, is never printed).
  SmallVector<std::string> constantFills;
  /// Per constant: the block it lies in (blockOf: its pipeline stage, kNoStage without a pipeline). A pipeline
  /// rank allocates and sets up only its own stage's block of constants, at offsets within that block, as the
  /// CPU target's allocateStage<s>Storage does (issue 23); a constant two stages use is in both blocks.
  SmallVector<int64_t> constantStage;
  static constexpr int64_t kNoStage = -1;
  /// The bytes of each block of constants (d_constants of the ranks of its stage), by blockOf.
  std::map<int64_t, int64_t> constantBlockBytes;
  /// The device offset of each constant value already in its block of d_constants, by block and (uniqued)
  /// attribute and type: the same constant of every layer is one copy, so that an outlined layer's row does
  /// not carry its offset and the constants do not grow with the layers (issue 23). Constants are read-only.
  llvm::DenseMap<std::tuple<int64_t, Attribute, Type>, int64_t> constantOffsets;
  /// The constant file (EmitCudaOptions::constantsFile): the bytes of every large constant that is neither a
  /// splat nor generated, each at a 64-byte offset, read at set-up into its range of d_constants; and its name
  /// beside libstep.so (empty: no file, such a constant is an error).
  std::string constantFile;
  std::string constantFileName;
  /// The offset in constantFile of each value written there: a constant in two stages' blocks is one copy.
  llvm::DenseMap<std::pair<Attribute, Type>, int64_t> fileOffsets;
  CodecSites sites;      ///< codec telemetry (Common/CodecTelemetry.h)
  bool pipeline = false; ///< ptrain.pipeline: a rank's d_states holds its stage's states only
  StageStates stages;    ///< pipeline: each stage's states and their offsets in its d_states

  /// The per-rank block of device storage (constants, the shared arena) `func` uses: its pipeline stage (the
  /// one stage for a function of no stage that runs on it, StageStates::of), kNoStage without a pipeline or
  /// for a function that runs on no rank.
  int64_t blockOf(func::FuncOp func) const {
    if (!pipeline)
      return kNoStage;
    if (StageAttr stage = getStage(func))
      return stage.getIndex();
    return stages.of(func) ? stages.byStage.begin()->first : kNoStage;
  }
};

/// Emits one function on device buffers; the CUDA target of the shared function walk (StepFunction.h) and op
/// emitters (KernelTarget.h): device memory, libptrain_runtime_cuda's kernels on the step's stream
/// (RuntimeCallsCuda.def), NCCL on streams and events.
class FunctionEmitter : public CudaCallWriter, public target::StepFunction {
public:
  FunctionEmitter(func::FuncOp func, ModuleStorage &module, CommGroups &comms, PipeChannels &pipes, std::string arena,
                  const KernelPtx *ptx)
      : StepFunction(func, std::move(arena)), module(module), comms(comms), pipes(pipes), ptx(ptx) {}
  /// Plans the function's storage and emits its chunks (none for a function that runs on no pipeline rank);
  /// `arenaBytes` is its arena's size.
  LogicalResult prepare(int64_t &arenaBytes);
  /// Appends the device function to `code` with `body` (its chunks, repeated blocks replaced by calls), and
  /// sets `declaration`, `entry` and `ioBytes`.
  void write(std::string &code, const std::string &body);

  std::string declaration; ///< the device function's prototype (after run)
  std::string entry;       ///< the C entry point on host buffers (after run)
  int64_t ioBytes = 0;     ///< the entry point's arguments and results in d_io

  // CudaCallWriter (the per-op emitters of EmitCudaModelOps.cpp).
  std::string valuePtr(Value v) const override { return StepFunction::valuePtr(v); }
  LogicalResult emitCall(CudaCall callee, ArrayRef<std::string> args) override { return call(callee, args); }
  std::string scratch(int64_t bytes, StringRef type) override { return scratchPtr(bytes, type); }
  // KernelTarget (valuePtr above).
  StringRef flag() const override { return "--emit-cuda"; }
  LogicalResult callKernel(target::Kernel kernel, ArrayRef<std::string> args) override {
    return call(cudaKernel(kernel), args);
  }
  std::string scratchPtr(int64_t bytes, StringRef type) override { return bufferPtr(scratch(bytes), type); }
  std::string constArray(ArrayRef<int64_t> values, StringRef name, StringRef type) override {
    return hostArray(values, name, type);
  }
  FailureOr<std::string> rankOffsetsArray(TPSplitOp op, StringRef name) override {
    return writeTpSplitOffsets(op, comms, name, block);
  }
  FailureOr<std::string> axisCommunicator(Operation *op, StringRef grid, StringRef axis) override {
    return comms.lookupAxis(op, grid, axis);
  }
  GridOp theGrid() const override { return comms.theGrid; }

  // Hooks of the op families both targets share (StepFunction::emitStepOp): device states, NCCL on streams.
  std::string statePtr(StringAttr sym, Value v) const override {
    return "reinterpret_cast<" + std::string(cType(v)) + " *>(d_states + " + std::to_string(stateOffset(sym)) + ")";
  }
  std::string calleeFunction(StringRef callee) const override { return "device_" + identifierFrom(callee); }
  std::string scalarArg(Value v) const override { return valuePtr(v); } // dloss: a device pointer
  /// The learning rate and the clip scale are computed on the device from the device step counter.
  bool scalarsOnHost() const override { return false; }
  LogicalResult optimizerCall(target::OptimizerKernel kernel, ArrayRef<std::string> args) override {
    using target::OptimizerKernel;
    switch (kernel) {
    case OptimizerKernel::adamw_step_f32:
      return call(CudaCall::ptrain_cuda_adamw_step_f32, args);
    case OptimizerKernel::sgd_step_f32:
      return call(CudaCall::ptrain_cuda_sgd_step_f32, args);
    case OptimizerKernel::sum_squares_f32:
      return call(CudaCall::ptrain_cuda_sum_squares_f32, args);
    case OptimizerKernel::clip_scale_f32:
      return call(CudaCall::ptrain_cuda_clip_scale_f32, args);
    case OptimizerKernel::lr_warmup_cosine:
      break; // on the device, inside the optimizer kernels
    }
    return current->emitError("--emit-cuda internal error: the learning rate is computed on the device");
  }
  CommGroups &communicators() override { return comms; }
  /// ncclAllReduce, ncclReduceScatter, ncclAllGather on the compute stream (lib/Runtime/cuda/Nccl.cpp; the
  /// counts are NCCL's: a reduce-scatter's is the block each rank receives, an all-gather's the block it sends).
  LogicalResult startCollective(target::Collective kind, const std::string &comm, Value in, Value request,
                                int64_t count, StringRef reduction) override {
    requestComm[request] = comm; // its wait: ptrain_nccl_wait of the communicator
    switch (kind) {
    case target::Collective::AllReduce:
      return call(CudaCall::ptrain_nccl_all_reduce,
                  {comm, ptr(in), ptr(request), std::to_string(count), "PTRAIN_DTYPE_F32", reduction.str()});
    case target::Collective::ReduceScatter:
      return call(CudaCall::ptrain_nccl_reduce_scatter,
                  {comm, ptr(in), ptr(request), std::to_string(count), "PTRAIN_DTYPE_F32", reduction.str()});
    case target::Collective::AllGather:
      break;
    }
    return call(CudaCall::ptrain_nccl_all_gather,
                {comm, ptr(in), ptr(request), std::to_string(count), "PTRAIN_DTYPE_F32"});
  }
  LogicalResult tpAllReduce(TPAllReduceOp t, const std::string &comm) override {
    // A 16-bit sum ({accumulate = f32}, C3) is ncclAllReduce on ncclBfloat16 / ncclHalf: NCCL widens each pair,
    // adds in fp32 and rounds, so with tp = 2 it is the CPU's sum bit for bit; beyond, NCCL's ring rounds each
    // hop's partial sum to 16 bits (the CUDA target is compared within a bound; docs/MixedPrecision.md).
    const char *dtype = "PTRAIN_DTYPE_F32";
    if (t.getAccumulate())
      dtype = t.getType().getElementType().isBF16() ? "PTRAIN_DTYPE_BF16" : "PTRAIN_DTYPE_F16";
    if (failed(call(CudaCall::ptrain_nccl_all_reduce, {comm, ptr(t.getInput()), ptr(t.getResult()),
                                                       std::to_string(countOf(t.getInput())), dtype,
                                                       "PTRAIN_REDUCE_SUM"})))
      return failure();
    return call(CudaCall::ptrain_nccl_wait, {comm});
  }
  LogicalResult codecCall(const target::CodecKernelCall &k) override { return emitCudaCodecKernel(k, codecWriter()); }
  LogicalResult startCompressedAllReduce(CompressedAllReduceStartOp op, const std::string &comm,
                                         const target::CompressedAllReduceArgs &a) override {
    requestComm[op.getRequest()] = comm;
    return call(CudaCall::ptrain_nccl_compressed_all_reduce,
                {comm, "&codec", a.input, a.residual, a.state, ptr(op.getRequest()), a.reduction});
  }
  void compressTelemetry(CompressOp op) override {
    CudaCodecWriter w = codecWriter();
    target::emitCompressTelemetry(op, module.sites, w.ptr, w.line);
  }

private:
  CudaCodecWriter codecWriter() {
    return CudaCodecWriter{[this](Value v) { return ptr(v); },
                           [this](CudaCall c, ArrayRef<std::string> args) { return call(c, args); },
                           [this](const std::string &code) { blockLine(code); }};
  }
  LogicalResult checkOp(Operation &op) override;
  /// A transfer's codes are never masks (and a mask is never sent).
  bool allowsMasks(Operation &op) const override { return !isa<CompressOp, DecompressOp, SendStartOp, RecvStartOp, WaitOp>(op); }
  int64_t scratch(int64_t bytes);
  LogicalResult emitOp(Operation *op);
  LogicalResult emitConstant(arith::ConstantOp op);

  std::string ptr(Value v) const { return storage.lookup(v).name; }
  /// The offset of a state in this function's d_states: its stage's block in a pipeline, else the module's.
  int64_t stateOffset(StringAttr sym) const {
    if (const StageStates::Stage *stage = module.pipeline ? module.stages.of(func) : nullptr)
      return stage->offsets.lookup(sym);
    return module.states.lookup(sym).offset;
  }
  LogicalResult call(CudaCall callee, ArrayRef<std::string> args);
  /// A send or receive on the pipeline axis, on the stream of its channel (EmitCudaComm.h, PipeChannels): the
  /// peer is this function's stage (ptrain.stage) + offset.
  LogicalResult pointToPoint(Operation *op, bool isSend, Value buffer, Value request, StringRef grid, StringRef axis,
                             int64_t offset) override;

  ModuleStorage &module;
  CommGroups &comms;
  PipeChannels &pipes;
  llvm::DenseMap<Value, std::string> requestComm; ///< a started all-reduce's communicator (for its wait)
  /// The generated kernels' PTX (--emit-cuda-kernels; null: none), launched for the chains of `fused`.
  const KernelPtx *ptx;
  /// The launch of a fused chain's kernel (StepFunction::emitFusedChainOp at its last op) on the step's stream.
  LogicalResult generatedChainCall(const target::FusedChain &chain) override;
  bool dryRun = true; ///< the first walk: the kernels' scratch is added to the analysis, the text discarded
};

LogicalResult FunctionEmitter::call(CudaCall callee, ArrayRef<std::string> args) {
  return writeCheckedCall(block, current, "--emit-cuda", getCudaCallInfo(callee), args);
}

LogicalResult FunctionEmitter::pointToPoint(Operation *op, bool isSend, Value buffer, Value request, StringRef grid,
                                            StringRef axis, int64_t offset) {
  FailureOr<int64_t> stage = pointToPointStage(op, axis);
  if (failed(stage))
    return failure();
  FailureOr<std::string> comm = comms.lookupAxis(op, grid, axis);
  if (failed(comm))
    return failure();
  for (auto &[callee, args] : pipes.startCalls(op, request, isSend, *stage, *stage + offset, *comm,
                                               ptr(buffer), bytesOf(buffer)))
    if (failed(call(callee, args)))
      return failure();
  return success();
}

/// The ops the CUDA target handles: the step of --ptrain-build-training-step and, with a grid, the
/// communication of --ptrain-lower-to-runtime (NCCL) with the pipeline codecs (EmitCudaCodecs.h).
LogicalResult FunctionEmitter::checkOp(Operation &op) {
  // ZeRO-1's compressed buckets (docs/DistributedOptimizer.md, "Compression"): the CPU runtime's chunked
  // all-to-all has no NCCL counterpart yet; refused by name rather than as an unknown op.
  if (isa<CompressedReduceScatterStartOp>(op))
    return op.emitError("--emit-cuda: '")
           << op.getName()
           << "' (ZeRO-1's compressed buckets: ptrain-compile --zero 1 with a dp-codec) is not supported by the CUDA "
              "code generator; --target cpu runs it";
  if (!isa<StateReadOp, StateWriteOp, arith::ConstantOp, EmbeddingOp, BinaryOp, UnaryOp, MatmulOp, LayerNormOp,
           SoftmaxOp, GeluOp, ReshapeOp, TransposeOp, SplitOp, CrossEntropyOp, SliceOp, ConcatOp, SumToOp, PadOp,
           LayerNormGradOp, SoftmaxGradOp, GeluGradOp, EmbeddingGradOp, CrossEntropyGradOp, AdamWOp, AllReduceStartOp,
           SendStartOp, RecvStartOp, WaitOp, TPCopyOp, TPAllReduceOp, TPSplitOp, CompressOp, DecompressOp,
           CompressedAllReduceStartOp, ReduceScatterStartOp, AllGatherStartOp, SGDOp, SumSquaresOp, ClipScaleOp,
           func::CallOp, func::ReturnOp>(op) &&
      !target::isSharedOp(&op) && !isCudaModelOp(&op) && !isCudaTransformerOp(&op)) {
    return op.emitError("--emit-cuda: '")
           << op.getName() << "' is not supported by the CUDA code generator (docs/CodegenCuda.md lists the ops "
           << "it maps; --target cpu has the others)";
  }
  if (isa<CompressOp, DecompressOp, CompressedAllReduceStartOp>(op))
    return checkCudaCodecOp(&op);
  return success();
}

int64_t FunctionEmitter::scratch(int64_t bytes) {
  // Called in emission order; the dry run added the same requests to the analysis.
  ArrayRef<int64_t> list = liveness->scratchOf(current);
  if (nextScratch < list.size())
    return list[nextScratch++];
  ++nextScratch;
  return liveness->addScratch(current, bytes);
}

/// Splat constants up to this many elements are printed (a host array copied at set-up); larger ones are
/// zeroed or filled on the device at set-up (the CPU target's bound, lib/Target/Cpp/ConstantForm.cpp).
constexpr int64_t kPrintedSplatElements = 64;

LogicalResult FunctionEmitter::emitConstant(arith::ConstantOp op) {
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!attr)
    return op.emitError("--emit-cuda: only dense tensor constants are supported");
  Value result = op.getResult();
  const int64_t n = countOf(result);
  const int64_t index = module.constantCopies.size();
  const std::string name = "constant_" + std::to_string(index);
  // Its offset in its block: this function's stage's (issue 23: a pipeline rank holds its stage's constants).
  const int64_t block = module.blockOf(func);
  int64_t &blockBytes = module.constantBlockBytes[block];
  int64_t offset = blockBytes;
  auto known = module.constantOffsets.find({block, attr, result.getType()});
  const bool written = known != module.constantOffsets.end();
  if (written)
    offset = known->second;
  else if (!dryRun) {
    module.constantOffsets[{block, attr, result.getType()}] = offset;
    module.constantStage.push_back(block);
  }
  const ConstantForm form = n > kPrintedSplatElements ? classifyConstant(attr) : ConstantForm();
  if (written || dryRun) {
    // Written already (another layer's), or the dry run: nothing to add to the block.
  } else if (form.kind == ConstantForm::CausalMask || form.kind == ConstantForm::Iota) {
    // A causal mask or an iota (ConstantForm.h): generated by its kernel into its device range at set-up, as the
    // CPU target generates it (issue 23: a [S, S] mask is never printed).
    Type elem = tensorOf(result).getElementType();
    const std::string range = "d_constants + " + std::to_string(offset);
    std::string fill;
    if (form.kind == ConstantForm::CausalMask) {
      fill = "{\n    static const " + std::string(cType(result)) + " keep = " + elementLiteral(elem, form.keep) +
             ", masked = " + elementLiteral(elem, form.masked) + ";\n    PTRAIN_STEP_CALL(" +
             getCudaCallInfo(CudaCall::ptrain_cuda_causal_mask).name + "(" + range + ", " +
             std::to_string(form.elemBytes) + ", " + std::to_string(form.batch) + ", " + std::to_string(form.rows) +
             ", " + std::to_string(form.cols) + ", " + std::to_string(form.diagonal) + ", &keep, &masked));\n  }";
    } else {
      fill = "PTRAIN_STEP_CALL(" + std::string(getCudaCallInfo(CudaCall::ptrain_cuda_iota_i64).name) +
             "(reinterpret_cast<int64_t *>(" + range + "), " + std::to_string(form.count) + ", " +
             std::to_string(form.period) + ", " + int64Literal(form.start) + ", " + int64Literal(form.step) + "));";
    }
    module.constants += "// " + locationComment(op.getLoc()) + ": " + std::to_string(n) + " x " + cType(result) +
                        ", device offset " + std::to_string(offset) +
                        (form.kind == ConstantForm::CausalMask
                             ? ": a causal mask [" + std::to_string(form.batch) + ", " + std::to_string(form.rows) +
                                   ", " + std::to_string(form.cols) + "], generated at set-up\n\n"
                             : ": an iota, generated at set-up\n\n");
    module.constantCopies.push_back({"", offset});
    module.constantBytes.push_back(bytesOf(result));
    module.constantFills.push_back(std::move(fill));
    blockBytes = alignUp(offset + bytesOf(result));
  } else if (attr.isSplat() && n > kPrintedSplatElements) {
    // A splat: zeroed (all bits zero) or filled from a host vector of its value when the device is set up.
    const bool mask = isMaskElementType(tensorOf(result).getElementType());
    std::string value;
    bool zero = false;
    if (isF32(result)) {
      const float v = attr.getSplatValue<float>();
      value = floatLiteral(v);
      zero = v == 0.0f && !std::signbit(v);
    } else if (mask) {
      zero = !attr.getSplatValue<bool>();
      value = zero ? "0" : "1";
    } else {
      const int64_t v = attr.getSplatValue<int64_t>();
      value = int64Literal(v);
      zero = v == 0;
    }
    const std::string range = "d_constants + " + std::to_string(offset);
    const std::string bytes = std::to_string(bytesOf(result));
    module.constants += "// " + locationComment(op.getLoc()) + ": " + std::to_string(n) + " x " + cType(result) +
                        ", device offset " + std::to_string(offset) + ": a splat of " + value +
                        (zero ? ", zeroed" : ", filled") + " at set-up\n\n";
    module.constantCopies.push_back({"", offset});
    module.constantBytes.push_back(bytesOf(result));
    module.constantFills.push_back(
        zero ? "PTRAIN_STEP_CALL(" + std::string(getCudaCallInfo(CudaCall::ptrain_cuda_zero_bytes).name) + "(" +
                   range + ", " + bytes + "));"
             : "{\n    std::vector<" + std::string(cType(result)) + "> fill(" + std::to_string(n) + ", " + value +
                   ");\n    PTRAIN_STEP_CALL(" +
                   std::string(getCudaCallInfo(CudaCall::ptrain_cuda_copy_to_device).name) + "(fill.data(), " +
                   bytes + ", " + range + "));\n  }");
    blockBytes = alignUp(offset + bytesOf(result));
  } else if (n > kPrintedSplatElements) {
    // Anything else large (ConstantForm::File): its bytes go to the constant file beside libstep.so and are read
    // into its device range at set-up, never printed (issue 23; the CPU target's step.consts.bin, at 64-byte
    // offsets). ptrain_read_beside fails naming the file when it is missing or shorter than this build's.
    if (module.constantFileName.empty())
      return op.emitError("--emit-cuda: a constant of ")
             << bytesOf(result) << " bytes is neither small (at most " << kPrintedSplatElements
             << " elements), a splat, a causal mask nor an iota: it is read from a constant file at set-up; pass "
                "--emit-cuda-constants=FILE (FILE lies beside libstep.so)";
    auto [it, isNew] = module.fileOffsets.try_emplace({attr, result.getType()}, 0);
    if (isNew)
      it->second = target::appendToConstantFile(module.constantFile, constantBytes(attr));
    const int64_t fileOffset = it->second;
    const std::string bytes = std::to_string(bytesOf(result));
    module.constants += "// " + locationComment(op.getLoc()) + ": " + std::to_string(n) + " x " + cType(result) +
                        ", device offset " + std::to_string(offset) + ": bytes [" + std::to_string(fileOffset) +
                        ", " + std::to_string(fileOffset + bytesOf(result)) + ") of " + module.constantFileName +
                        ", read at set-up\n\n";
    module.constantCopies.push_back({"", offset});
    module.constantBytes.push_back(bytesOf(result));
    module.constantFills.push_back(
        "{\n    std::vector<unsigned char> bytes(" + bytes + ");\n    PTRAIN_STEP_CALL(" +
        std::string(getRuntimeCallInfo(RuntimeCall::ptrain_read_beside).name) + "(step_error, " +
        stringLiteral(module.constantFileName) + ", " + std::to_string(fileOffset) + ", " + bytes +
        ", bytes.data()));\n    PTRAIN_STEP_CALL(" +
        std::string(getCudaCallInfo(CudaCall::ptrain_cuda_copy_to_device).name) + "(bytes.data(), " + bytes +
        ", d_constants + " + std::to_string(offset) + "));\n  }");
    blockBytes = alignUp(offset + bytesOf(result));
  } else {
    std::string values;
    const bool mask = isMaskElementType(tensorOf(result).getElementType()); // uint8_t 0 / 1
    for (int64_t i = 0; i < n; ++i)
      values += (i ? (i % 8 ? ", " : ",\n    ") : "") +
                (isF32(result) ? floatLiteral(attr.getValues<float>()[attr.isSplat() ? 0 : i])
                 : mask        ? std::string(attr.getValues<bool>()[attr.isSplat() ? 0 : i] ? "1" : "0")
                               : int64Literal(attr.getValues<int64_t>()[attr.isSplat() ? 0 : i]));
    module.constants += "// " + locationComment(op.getLoc()) + ": " + std::to_string(n) + " x " + cType(result) +
                        ", device offset " + std::to_string(offset) + "\n";
    module.constants += "alignas(64) const " + std::string(cType(result)) + " " + name + "[" +
                        std::to_string(std::max<int64_t>(n, 1)) + "] = {\n    " + values + "};\n\n";
    module.constantCopies.push_back({name, offset});
    module.constantBytes.push_back(bytesOf(result));
    module.constantFills.push_back("");
    blockBytes = alignUp(offset + bytesOf(result));
  }
  // The constant's name is not in the declaration: the same constant op of two layers differs only in its
  // offset, a row entry of an outlined block (BlockOutliner.h).
  std::string text = "  const " + std::string(cType(result)) + " *" + ptr(result) + " = reinterpret_cast<const " +
                     cType(result) + " *>(d_constants + " + std::to_string(offset) + ");\n";
  if (result.use_empty())
    text += "  (void)" + ptr(result) + ";\n";
  constantDecl = target::ChunkDecl{ptr(result), text};
  types[ptr(result)] = "const " + std::string(cType(result)) + " *";
  return success();
}

LogicalResult FunctionEmitter::emitOp(Operation *op) {
  beginOp(op);
  target::EmittedChunk chunk;
  chunk.location = locationComment(op->getLoc());
  chunk.header = "  // " + op->getName().getStringRef().str() + "\n";
  // GEMM fusion (GemmFusion.h), as on the CPU: dead ops write nothing; transposes and batch sums a GEMM reads
  // and bias adds a GEMM starts from are not materialized.
  const GemmFusion &gemms = liveness->gemms();
  if (gemms.isDead(op)) {
    chunk.code = "  // not emitted: nothing reads its results (DeadOps.h)\n";
    chunks.push(std::move(chunk));
    return success();
  }
  for (Value result : op->getResults()) {
    if (gemms.isFolded(op))
      break;
    const Storage &s = storage[result];
    if (auto request = dyn_cast<RequestType>(result.getType()); request && !request.getValueType())
      continue; // a send's request: nothing on the device
    if (s.kind == Storage::Alias && result.use_empty())
      continue; // e.g. a reshape the lowering left unused: nvcc's "set but never used" ignores a (void) cast
    // A fused chain's intermediate that nothing after the chain reads: the generated kernel never writes it, so
    // no pointer (nvcc's "set but never used" again).
    if (isUnwrittenIntermediate(result))
      continue;
    std::string type = cType(result), text;
    if (s.kind == Storage::Arena)
      text = "  " + type + " *" + s.name + " = " + bufferPtr(s.buffer, type) + ";\n";
    else if (s.kind == Storage::State)
      text = "  " + type + " *" + s.name + " = " +
             statePtr(s.state ? s.state : cast<StateReadOp>(op).getStateAttr().getAttr(), result) + ";\n";
    else if (s.kind == Storage::Alias)
      text = "  " + type + " *" + s.name + " = const_cast<" + type + " *>(" + ptr(s.root) + ");\n";
    // An arena result nothing reads is still written by its op's call (the dead tail of a stage's last layer,
    // DeadOps.h, computed so that the layer is a call of the same block): no (void), which would differ there.
    if (s.kind == Storage::State && result.use_empty())
      text += "  (void)" + s.name + ";\n";
    if (text.empty())
      continue;
    chunk.decls.push_back({s.name, text});
    types[s.name] = type + " *";
  }

  // The GEMMs and what their fusion folded or made aliases, then the op families both targets write with one
  // emitter over this target's hooks (StepFunction::emitStepOp: states, calls, the loss, collectives, codecs).
  std::optional<LogicalResult> shared;
  if (fused.chainOf.count(op))
    shared = emitFusedChainOp(op);
  else if (!target::isGemmOp(op, gemms))
    shared = emitStepOp(op);
  LogicalResult result =
      target::isGemmOp(op, gemms) ? target::emitGemmOp(op, gemms, *this) :
      shared ? *shared :
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case<arith::ConstantOp>([&](auto c) { return emitConstant(c); })
          // The ops both targets emit alike, up to the kernels' names (lib/Target/Common/KernelTarget.h).
          .Case<EmbeddingOp, EmbeddingGradOp, BinaryOp, UnaryOp, LayerNormOp, LayerNormGradOp, SoftmaxOp,
                SoftmaxGradOp, GeluOp, GeluGradOp, TransposeOp, SliceOp, SplitOp, ConcatOp, PadOp, SumToOp, TPSplitOp,
                LossScaleOp, GradUnscaleOp, GradScalerUpdateOp>([&](Operation *o) { return emitSharedOp(o, *this); })
          .Case<WaitOp>([&](WaitOp w) -> LogicalResult {
            // A send or receive: the watchdog over its transfer, then the compute stream waits on its event.
            if (SmallVector<PipeChannels::Call> calls = pipes.waitCalls(w.getRequest()); !calls.empty()) {
              for (auto &[callee, args] : calls)
                if (failed(call(callee, args)))
                  return failure();
              return success();
            }
            // An all-reduce: the stream orders the kernels after it; the wait is the watchdog (deadline, NCCL's
            // asynchronous errors) over what the communicator has pending.
            auto comm = requestComm.find(w.getRequest());
            if (comm == requestComm.end())
              return w.emitError("--emit-cuda: the request is not started by a send, receive or all-reduce of "
                                 "this function");
            return call(CudaCall::ptrain_nccl_wait, {comm->second});
          })
          .Default([&](Operation *other) -> LogicalResult {
            if (isCudaModelOp(other))
              return emitCudaModelOp(other, *this); // reductions, selection, vocab-parallel
            if (isCudaTransformerOp(other))
              return emitCudaTransformerOp(other, *this); // masks, rms_norm, rotary, dropout
            return other->emitError("--emit-cuda: '") << other->getName() << "' is not supported";
          });
  if (failed(result))
    return failure();
  finishChunk(op, std::move(chunk));
  return success();
}

LogicalResult FunctionEmitter::generatedChainCall(const target::FusedChain &chain) {
  const GpuKernelLaunch &launch = ptx->kernels.find(chain.kernel)->second;
  std::string params;
  for (Value v : llvm::concat<const Value>(chain.chain.inputs, chain.chain.outputs))
    params += (params.empty() ? "" : ", ") + std::string("&") + ptr(v);
  note(std::to_string(chain.chain.ops.size()) + " ops in one generated kernel (--ptrain-outline-elementwise), " +
       std::to_string(launch.elements) + (launch.rows ? " rows or row groups" : " elements") + ", one per thread");
  blockLine("void *params[] = {" + params + "};");
  return call(CudaCall::ptrain_cuda_kernel_launch, {generatedKernelHandle(chain.kernel), std::to_string(launch.blocks),
                                                    std::to_string(launch.threads), "params"});
}

LogicalResult FunctionEmitter::prepare(int64_t &bytes) {
  if (failed(checkOps()))
    return failure();
  // A function of no stage (the unsplit @forward) reads every stage's states, which no pipeline rank holds: its
  // entry point is only an error (write), and its body is not emitted.
  runsNowhere = module.pipeline && !module.stages.of(func);
  arenaBytes = bytes = 0;
  if (runsNowhere)
    return success();
  // Where every value lives (see the file comment): arguments are the caller's device buffers.
  planStorage(StorageRules::cuda(), /*place=*/false, "d_arg", "d_out_");
  // Dry run: every op's emitter requests its scratch, planned like any buffer; its text is discarded.
  for (Operation *op : ops)
    if (failed(emitOp(op)))
      return failure();
  arenaBytes = bytes = liveness->place();
  dryRun = false;
  // The chains with a generated GPU kernel whose memory plan allows one pass (FusedChains.h, as on the CPU):
  // planned on the placed buffers, so the dry run above wrote the runtime's calls.
  if (ptx && failed(fused.plan(func, ops, storage, *liveness, "--emit-cuda",
                               [&](func::FuncOp kernel) { return ptx->kernels.count(kernel.getSymName()) != 0; })))
    return failure();
  chunks.take();
  for (Operation *op : ops)
    if (failed(emitOp(op)))
      return failure();
  return success();
}

void FunctionEmitter::write(std::string &code, const std::string &body) {
  // The device function (device buffers in and out), then the C entry point (host buffers): its arguments
  // and results go through the block d_io, shared by the entry points (they are not reentrant).
  const std::string name = func.getSymName().str(), device = "device_" + identifierFrom(name);
  std::string params, hostParams, doc = "/// @" + name + " (host buffers in and out):\n", unused;
  std::string copyIn, copyOut, deviceArgs;
  int64_t io = 0;
  auto ioPtr = [&](StringRef type, int64_t bytes) {
    std::string p = "reinterpret_cast<" + type.str() + " *>(d_io + " + std::to_string(io) + ")";
    io = alignUp(io + bytes);
    return p;
  };
  const char *toDevice = getCudaCallInfo(CudaCall::ptrain_cuda_copy_to_device).name;
  const char *toHost = getCudaCallInfo(CudaCall::ptrain_cuda_copy_to_host).name;
  for (BlockArgument arg : func.getBody().front().getArguments()) {
    std::string i = std::to_string(arg.getArgNumber()), type = cType(arg);
    params += (params.empty() ? "" : ", ") + std::string("const ") + type + " *d_arg" + i;
    hostParams += (hostParams.empty() ? "" : ", ") + std::string("const ") + type + " *arg" + i;
    if (arg.use_empty())
      unused += "  (void)d_arg" + i + ";\n";
    std::string t;
    llvm::raw_string_ostream ts(t);
    ts << arg.getType();
    doc += "///   arg" + i + ": " + t + "\n";
    copyIn += "  " + type + " *d_arg" + i + " = " + ioPtr(type, bytesOf(arg)) + ";\n";
    copyIn += "  PTRAIN_STEP_CALL(" + std::string(toDevice) + "(arg" + i + ", " + std::to_string(bytesOf(arg)) +
              ", d_arg" + i + "));\n";
    deviceArgs += (deviceArgs.empty() ? "" : ", ") + std::string("d_arg") + i;
  }
  for (auto [k, type] : llvm::enumerate(func.getResultTypes())) {
    auto tensor = cast<RankedTensorType>(type);
    std::string i = std::to_string(k), c = elementCType(tensor.getElementType());
    int64_t bytes = numElements(tensor.getShape()) * elementBytes(tensor.getElementType());
    params += (params.empty() ? "" : ", ") + c + " *d_out_" + i;
    hostParams += (hostParams.empty() ? "" : ", ") + c + " *out_" + i;
    std::string t;
    llvm::raw_string_ostream ts(t);
    ts << type;
    if (auto key = func.getResultAttrOfType<StringAttr>(k, "ptrain.grad_of"))
      t += ", the gradient of state '" + key.getValue().str() + "'";
    doc += "///   out_" + i + ": " + t + "\n";
    copyIn += "  " + c + " *d_out_" + i + " = " + ioPtr(c, bytes) + ";\n";
    // Each copy to the host waits for the stream.
    copyOut += "  PTRAIN_STEP_CALL(" + std::string(toHost) + "(d_out_" + i + ", " + std::to_string(bytes) + ", out_" +
               i + "));\n";
    deviceArgs += (deviceArgs.empty() ? "" : ", ") + std::string("d_out_") + i;
  }
  const std::string hostSignature = "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_" + name + "(" +
                                    (hostParams.empty() ? "void" : hostParams) + ")";
  if (runsNowhere) {
    // A function of no stage (the unsplit @forward) reads every stage's states, which no pipeline rank holds on
    // its device: no device function, and its entry point is an error naming what to run instead.
    entry = doc +
            "/// Not on a pipeline rank: it needs every stage's states (this rank's d_states holds its stage's).\n" +
            hostSignature + " {\n";
    for (BlockArgument arg : func.getBody().front().getArguments())
      entry += "  (void)arg" + std::to_string(arg.getArgNumber()) + ";\n";
    for (unsigned k = 0; k < func.getNumResults(); ++k)
      entry += "  (void)out_" + std::to_string(k) + ";\n";
    entry += "  return stepError(\"ptrain_step_" + name + ": @" + name +
             " uses the states of every pipeline stage, but a rank of this pipeline holds only its stage's on the "
             "device; run ptrain_step_train / ptrain_step_eval, or export the weights (ptrain-export) for the whole "
             "model\");\n}\n\n";
    return;
  }
  ioBytes = io;
  const std::string signature = "ptrain_status_t " + device + "(" + (params.empty() ? "void" : params) + ")";
  declaration = signature + ";\n";
  code += "/// @" + name + " on device buffers. Arena " + arena + ": " + std::to_string(arenaBytes) + " bytes for " +
          std::to_string(liveness->buffers().size()) + " buffers (tensors and kernel scratch) planned by liveness.\n" + signature +
          " {\n" + unused + body + "  return PTRAIN_OK;\n}\n\n";
  entry = doc + hostSignature + " {\n  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_" + name + "\"));\n" + copyIn +
          "  PTRAIN_STEP_CALL(" + device + "(" + deviceArgs + "));\n" + copyOut +
          "  // Any id or target outside the vocabulary that a kernel met (they skip it).\n  PTRAIN_STEP_CALL(" +
          getCudaCallInfo(CudaCall::ptrain_cuda_check_indices).name + "());\n  return PTRAIN_OK;\n}\n\n";
}

//===----------------------------------------------------------------------===//
// The translation unit
//===----------------------------------------------------------------------===//

SmallVector<int64_t> stageKeys(const StageStates &stages) {
  SmallVector<int64_t> keys;
  for (auto &entry : stages.byStage)
    keys.push_back(entry.first);
  return keys;
}

/// The generated kernels' PTX images as C++ raw string literals, their handles, and their loading at set-up.
struct GeneratedKernelCode {
  std::string globals; ///< the images, the module and the kernels' handles (namespace scope)
  std::string load;    ///< the statements of setUpDevice that load them
};

GeneratedKernelCode generatedKernelCode(const KernelPtx &ptx) {
  GeneratedKernelCode code;
  if (ptx.kernels.empty())
    return code;
  std::string images, versions;
  code.globals =
      "//===--- Generated kernels (--emit-cuda-kernels; docs/GeneratedKernels.md, \"The CUDA route\") ---===//\n\n"
      "// The elementwise chains --ptrain-outline-elementwise outlined, lowered in-process through MLIR's NVVM\n"
      "// route to PTX (include/ptrain/Target/Cuda/KernelPtx.h), one image per architecture: the driver\n"
      "// JIT-compiles the newest one the device runs at ptrain_step_init.\n";
  for (const PtxImage &image : ptx.images) {
    const std::string name = "kGeneratedPtx_" + image.arch;
    code.globals += "const char " + name + "[] = R\"ptx(" + image.ptx + ")ptx\";\n";
    images += (images.empty() ? "" : ", ") + name;
    versions += (versions.empty() ? "" : ", ") + std::to_string(image.smVersion);
  }
  code.globals += "const char *const kGeneratedPtx[] = {" + images + "};\nconst int32_t kGeneratedPtxSm[] = {" +
                  versions + "};\nvoid *generated_module = nullptr;\n";
  SmallVector<StringRef> names;
  for (auto &entry : ptx.kernels)
    names.push_back(entry.getKey());
  llvm::sort(names);
  code.load = "  PTRAIN_STEP_CALL(" + std::string(getCudaCallInfo(CudaCall::ptrain_cuda_kernels_load).name) +
              "(kGeneratedPtx, kGeneratedPtxSm, " + std::to_string(ptx.images.size()) + ", &generated_module));\n";
  for (StringRef name : names) {
    const GpuKernelLaunch &launch = ptx.kernels.find(name)->second;
    code.globals += "void *" + generatedKernelHandle(name) + " = nullptr; ///< " + std::to_string(launch.numInputs) +
                    " inputs, " + std::to_string(launch.numParams - launch.numInputs) + " outputs, " +
                    std::to_string(launch.elements) + (launch.rows ? " rows or row groups\n" : " elements\n");
    code.load += "  PTRAIN_STEP_CALL(" + std::string(getCudaCallInfo(CudaCall::ptrain_cuda_kernel_function).name) +
                 "(generated_module, \"" + name.str() + "\", &" + generatedKernelHandle(name) + "));\n";
  }
  code.globals += "\n";
  return code;
}

LogicalResult emitModule(ModuleOp module, raw_ostream &os, const EmitCudaOptions &options, std::string &constantFile,
                         const KernelPtx *ptx) {
  ModuleStorage storage;
  if (!options.constantsFile.empty())
    storage.constantFileName = llvm::sys::path::filename(options.constantsFile).str();
  for (Operation &op : module.getBody()->getOperations())
    if (!isa<func::FuncOp, StateOp, GridOp>(op) && !isKernelModule(op))
      return emitError(op.getLoc(), "--emit-cuda: '") << op.getName() << "' at module level is not supported";
  int64_t dimsOffset = 0;
  for (auto state : module.getOps<StateOp>()) {
    if (failed(checkType(state, state.getType(), "the state")))
      return failure();
    const int64_t rank = state.getTensorType().getRank();
    StateInfo info{state, "state_" + std::to_string(storage.stateOrder.size()) + "_" + identifierFrom(state.getKey()),
                   storage.stateBytes, static_cast<int64_t>(storage.stateOrder.size()),
                   rank ? "kStateDims + " + std::to_string(dimsOffset) : std::string()};
    dimsOffset += rank;
    storage.stateBytes += stateBlockBytes(state);
    storage.states[state.getSymNameAttr()] = info;
    storage.stateOrder.push_back(state);
  }
  storage.sites.collect(module);
  storage.pipeline = static_cast<bool>(getPipeline(module));
  storage.stages.collect(module, kAlignment, stateBlockBytes);
  CommGroups comms("--emit-cuda");
  PipeChannels pipes;
  std::string functions, declarations, entries;
  int64_t ioBytes = 0;
  /// The shared arena d_arena of the callees by block (ModuleStorage::blockOf): a pipeline rank allocates its
  /// stage's largest (issue 23), else the largest of every function.
  std::map<int64_t, int64_t> arenaBytes;
  SmallVector<std::string> entryNames;
  SmallVector<std::pair<std::string, int64_t>> callerArenas;
  /// The pipeline stage of each caller arena's function (-1: none; every rank allocates it).
  SmallVector<int64_t> callerArenaStages;
  std::vector<std::unique_ptr<FunctionEmitter>> emitters;
  llvm::StringMap<std::string> globals{{"d_states", "unsigned char *"}, {"d_constants", "unsigned char *"},
                                       {"d_arena", "unsigned char *"}};
  if (ptx)
    for (auto &entry : ptx->kernels)
      globals[generatedKernelHandle(entry.getKey())] = "void *";
  const GeneratedKernelCode generated = ptx ? generatedKernelCode(*ptx) : GeneratedKernelCode();
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      return emitError(func.getLoc(), "--emit-cuda: function @") << func.getSymName() << " has no body";
    int64_t bytes = 0;
    // A function that calls others (a lowered pipeline step) keeps its values in its own arena, since its
    // callees use the shared one.
    bool calls = !func.getOps<func::CallOp>().empty();
    std::string arena = calls ? "d_arena_" + identifierFrom(func.getSymName()) : "d_arena";
    globals[arena] = "unsigned char *";
    emitters.push_back(std::make_unique<FunctionEmitter>(func, storage, comms, pipes, arena, ptx));
    if (failed(emitters.back()->prepare(bytes)))
      return failure();
    if (calls) {
      callerArenas.push_back({arena, bytes});
      StageAttr stage = getStage(func);
      callerArenaStages.push_back(storage.pipeline && stage ? stage.getIndex() : -1);
    }
    else
      arenaBytes[storage.blockOf(func)] = std::max(arenaBytes[storage.blockOf(func)], bytes);
    entryNames.push_back("ptrain_step_" + func.getSymName().str());
  }
  // Identical layers (and any other repeated run of ops) are written once and called (BlockOutliner.h): the
  // blocks are host functions on device pointers, as the device functions are.
  std::vector<target::EmittedFunction> bodies;
  for (auto &emitter : emitters)
    bodies.push_back(emitter->takeChunks());
  auto globalType = [&](StringRef name) { return globals.lookup(name); };
  target::OutlineOptions outline;
  outline.globalType = globalType;
  target::OutlineResult outlined = target::outlineRepeatedBlocks(bodies, outline, options.outlineBlocks);
  for (auto [emitter, body] : llvm::zip_equal(emitters, outlined.bodies)) {
    emitter->write(functions, body);
    declarations += emitter->declaration;
    entries += emitter->entry;
    ioBytes = std::max(ioBytes, emitter->ioBytes);
  }
  const bool pipeline = storage.pipeline;
  std::string driverCode;
  if (pipeline) {
    std::set<int64_t> stages;
    for (auto &entry : storage.stages.byStage)
      stages.insert(entry.first);
    if (failed(emitPipelineDriver(module, comms, stages, driverCode, entryNames, "nccl_world")) ||
        failed(checkPointToPoint(module)))
      return failure();
  } else if (static_cast<bool>(getSchedule(module))) {
    return emitError(module.getLoc(), "--emit-cuda: ptrain.schedule without ptrain.pipeline");
  }
  const bool hasComm = !comms.groups.empty();
  SmallVector<TPSlice> slices;
  for (StateOp state : storage.stateOrder) {
    FailureOr<std::optional<TPSlice>> slice =
        readTPSlice(state, hasComm ? comms.theGrid : GridOp(), storage.states[state.getSymNameAttr()].var);
    if (failed(slice))
      return failure();
    if (*slice) {
      (*slice)->dims = storage.states[state.getSymNameAttr()].dims;
      slices.push_back(std::move(**slice));
    }
  }
  std::string onnxFile;
  if (auto file = module->getAttrOfType<StringAttr>("ptrain.onnx_file"))
    onnxFile = file.getValue().str();
  auto cudaCall = [](CudaCall c) { return std::string(getCudaCallInfo(c).name); };

  std::string out;
  llvm::raw_string_ostream s(out);
  s << "// Generated by ptrain-translate --emit-cuda. Do not edit.\n"
       "//\n"
       "// A compiled ptrain training step for CUDA devices (docs/CodegenCuda.md): every state, constant and\n"
       "// intermediate tensor lives in device memory (cudaMalloc blocks, at ptrain_step_init); every op runs on\n"
       "// one CUDA stream through libptrain_runtime_cuda (include/ptrain/Runtime/RuntimeCallsCuda.def; matmuls\n"
       "// through cuBLAS";
  if (hasComm)
    s << "; communication through NCCL, bootstrapped over MPI";
  s << "). Arguments and results are host buffers. Every call's\n"
       "// status is checked and returned; the cause is in ptrain_step_last_error(). Not reentrant.\n"
       "//\n"
       "// Entry points: ";
  llvm::interleave(entryNames, s, ", ");
  s << "\n\n"
       "#include \"ptrain/Runtime/ptrain_runtime.h\"\n"
       "#include \"ptrain/Runtime/ptrain_runtime_cuda.h\"\n\n"
       "#include <cstdarg>\n"
       "#include <cstdint>\n"
       "#include <cstdio>\n"
    << (hasComm ? "#include <cstdlib>\n" : "") << "#include <string>\n#include <vector>\n"
    << "\n"
       "#define PTRAIN_STEP_API __attribute__((visibility(\"default\")))\n"
    << kStepCallMacros << "namespace {\n\n" << kStepErrorDefinitions;
  s << "//===--- States (" << storage.stateOrder.size()
    << "): host mirrors (init, checkpoints) and offsets in the device block d_states ---===//\n\n";
  // As on the CPU (EmitCpp.cpp): a state is its named pointer (only those the code names), a reference to its
  // entry of the pointer arrays, and its row of kStates written as runs of a layer's rows (StateTable.h), so
  // that the table grows with a layer's distinct states, not the layers (issue 23). Its device offset is
  // computed when the states are allocated (layOutStates), as the code generator laid them out.
  const size_t numSlots = std::max<size_t>(storage.stateOrder.size(), 1);
  s << "/// The host mirror of each state by its index in kStates, f32 states in state_f32, i64 states in\n"
       "/// state_i64 (allocateStates), and each state's name for it.\n"
    << "float *state_f32[" << numSlots << "] = {};\nint64_t *state_i64[" << numSlots << "] = {};\n"
    << target::kNamedStatesMark;
  std::vector<std::pair<std::string, std::vector<int64_t>>> stageLists;
  if (pipeline)
    for (auto &[stage, layout] : storage.stages.byStage) {
      std::vector<int64_t> indices;
      for (StateOp state : layout.states)
        indices.push_back(storage.states[state.getSymNameAttr()].index);
      stageLists.push_back({"kStage" + std::to_string(stage) + "StateIndices", std::move(indices)});
    }
  s << "\n" << target::stateTable(storage.stateOrder, stageLists);
  if (pipeline) {
    s << "\n// The states each pipeline stage's functions use: a rank initializes, copies, saves and loads its "
         "stage's,\n// and its d_states holds only them (kStage<s>StateIndices, kStage<s>StateBytes).\n";
    for (auto &[stage, layout] : storage.stages.byStage) {
      s << "constexpr int64_t kNumStage" << stage << "States = " << layout.states.size()
        << ";\nptrain_state_desc_t kStage" << stage << "States[" << std::max<size_t>(layout.states.size(), 1)
        << "] = {};\n";
      s << "constexpr int64_t kStage" << stage << "StateBytes = " << std::max<int64_t>(layout.bytes, kAlignment)
        << "; ///< the device memory of stage " << stage << "'s states on its ranks\n";
    }
  }
  s << "/// The states this process owns (the stage's in a pipeline; set by ptrain_step_init) and their offsets in\n"
       "/// d_states (layOutStates).\n"
       "const ptrain_state_desc_t *active_states = kStates;\nstd::vector<int64_t> active_offsets;\n"
       "int64_t num_active_states = kNumStates;\n\n";
  s << "//===--- Constants: host arrays, copied once into the device block d_constants ---===//\n\n"
    << storage.constants;
  s << "//===--- Device memory and the stream (ptrain_step_init) ---===//\n\n";
  s << "constexpr int64_t kStateBytes = " << std::max<int64_t>(storage.stateBytes, kAlignment)
    << (pipeline ? "; ///< every state of the module (a pipeline rank allocates its stage's: active_state_bytes)\n"
                 : ";\n");
  s << "int64_t active_state_bytes = kStateBytes; ///< d_states of this process (its stage's; ptrain_step_init)\n";
  // d_constants and d_arena: a pipeline rank's are its own stage's blocks, sized per stage (issue 23: a rank
  // allocates its own stage's storage, as the CPU target's allocateStage<s>Storage).
  std::string constantSize = "kConstantBytes", arenaSize = "kArenaBytes", stageSizes;
  auto sizeOf = [](const std::map<int64_t, int64_t> &blocks, int64_t block) {
    auto it = blocks.find(block);
    return std::to_string(std::max<int64_t>(it == blocks.end() ? 0 : it->second, kAlignment));
  };
  if (pipeline) {
    constantSize = "stage_constant_bytes";
    arenaSize = "stage_arena_bytes";
    stageSizes = "  int64_t stage_constant_bytes = 0, stage_arena_bytes = 0; // this rank's stage's\n"
                 "  switch (stage) {\n";
    for (auto &entry : storage.stages.byStage) {
      const std::string stage = std::to_string(entry.first);
      s << "constexpr int64_t kStage" << stage << "ConstantBytes = " << sizeOf(storage.constantBlockBytes, entry.first)
        << "; ///< stage " << stage << "'s constants (d_constants of its ranks)\n";
      s << "constexpr int64_t kStage" << stage << "ArenaBytes = " << sizeOf(arenaBytes, entry.first) << "; ///< stage "
        << stage << "'s intermediate tensors and kernel scratch (d_arena of its ranks), planned by liveness\n";
      stageSizes += "  case " + stage + ":\n    stage_constant_bytes = kStage" + stage +
                    "ConstantBytes;\n    stage_arena_bytes = kStage" + stage + "ArenaBytes;\n    break;\n";
    }
    stageSizes += "  default:\n    return stepError(\"ptrain_step_init: this rank's pipeline stage %d has no storage\", "
                  "static_cast<int>(stage));\n  }\n";
  } else {
    s << "constexpr int64_t kConstantBytes = " << sizeOf(storage.constantBlockBytes, ModuleStorage::kNoStage) << ";\n";
    s << "constexpr int64_t kArenaBytes = " << sizeOf(arenaBytes, ModuleStorage::kNoStage)
      << "; ///< every intermediate tensor and kernel scratch, offsets planned by liveness\n";
  }
  s << "constexpr int64_t kIoBytes = " << std::max<int64_t>(ioBytes, kAlignment)
    << "; ///< an entry point's arguments and results on the device\n";
  s << "unsigned char *d_states = nullptr;\nunsigned char *d_constants = nullptr;\nunsigned char *d_io = nullptr;\n";
  for (auto &[name, bytes] : callerArenas)
    s << "/// The buffers of a function that calls others (its callees use d_arena): " << bytes
      << " bytes.\nunsigned char *" << name << " = nullptr;\n";
  s << "unsigned char *d_arena = nullptr;\nvoid *stream = nullptr;\n\n" << generated.globals;
  s << "/// The offset of each owned state in d_states: the states packed in table order, each at a multiple of " << kAlignment
    << "\n/// bytes, as the code generator laid them out for the device pointers of the functions; an internal error\n"
       "/// when the total is not the compiled one (kStateBytes or the stage's).\n"
       "ptrain_status_t layOutStates() {\n"
       "  active_offsets.assign(num_active_states, 0);\n"
       "  int64_t offset = 0;\n"
       "  for (int64_t i = 0; i < num_active_states; ++i) {\n"
       "    const ptrain_state_desc_t &d = active_states[i];\n"
       "    int64_t bytes = d.dtype == PTRAIN_DTYPE_I64 ? 8 : 4;\n"
       "    for (int32_t k = 0; k < d.rank; ++k)\n      bytes *= d.dims[k];\n"
       "    active_offsets[i] = offset;\n"
       "    offset = (offset + bytes + " << kAlignment - 1 << ") / " << kAlignment << " * " << kAlignment << ";\n"
       "  }\n"
       "  if ((offset > " << kAlignment << " ? offset : " << kAlignment << ") != active_state_bytes)\n"
       "    return stepError(\"ptrain_step_init internal error: the states take %lld bytes of d_states, compiled for "
       "%lld\", static_cast<long long>(offset), static_cast<long long>(active_state_bytes));\n"
       "  return PTRAIN_OK;\n"
       "}\n\n";
  for (StringRef direction : {"push", "pull"}) {
    bool push = direction == "push";
    s << (push ? "/// Every owned state's host mirror into device memory.\nptrain_status_t pushStates() {\n"
               : "/// Every owned state's device memory into its host mirror (waits for the stream).\n"
                 "ptrain_status_t pullStates() {\n")
      << "  for (int64_t i = 0; i < num_active_states; ++i) {\n"
         "    const ptrain_state_desc_t &d = active_states[i];\n"
         "    int64_t bytes = d.dtype == PTRAIN_DTYPE_I64 ? 8 : 4;\n"
         "    for (int32_t k = 0; k < d.rank; ++k)\n      bytes *= d.dims[k];\n"
         "    PTRAIN_STEP_CALL("
      << (push ? cudaCall(CudaCall::ptrain_cuda_copy_to_device) + "(d.data, bytes, d_states + active_offsets[i])"
               : cudaCall(CudaCall::ptrain_cuda_copy_to_host) + "(d_states + active_offsets[i], bytes, d.data)")
      << ");\n  }\n  return PTRAIN_OK;\n}\n\n";
  }
  s << "/// At least one CUDA device: else a DEVICE error naming the driver's error, or saying there is none.\n"
       "ptrain_status_t checkDevice() {\n"
       "  int32_t devices = 0;\n"
       "  PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_cuda_device_count)
    << "(&devices));\n"
       "  if (devices < 1) {\n"
       "    stepError(\"ptrain_step_init: no CUDA device (cudaGetDeviceCount = 0): this step was compiled with "
       "--target cuda\");\n"
       "    return PTRAIN_ERROR_DEVICE;\n"
       "  }\n"
       "  return PTRAIN_OK;\n"
       "}\n\n";
  s << "/// The device, the blocks, the stream and the constants, once. Without a driver or a device: a\n"
       "/// DEVICE error naming cudaGetDeviceCount's error (cudaErrorInsufficientDriver, cudaErrorNoDevice).\n"
    << (pipeline ? "/// A pipeline rank's d_constants and d_arena are its `stage`'s (ptrain_stage); setUpStage sets up its\n"
                   "/// constants.\n"
                   "ptrain_status_t setUpDevice(int32_t stage) {\n"
                 : "ptrain_status_t setUpDevice() {\n")
    << "  if (d_arena)\n    return PTRAIN_OK;\n"
       "  PTRAIN_STEP_CALL(checkDevice());\n"
       "  void *p = nullptr;\n"
    << stageSizes;
  s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_stream_create) << "(&stream));\n";
  s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_set_stream) << "(stream));\n" << generated.load;
  SmallVector<std::pair<std::string, std::string>> blocks = {
      {"d_states", "active_state_bytes"}, {"d_constants", constantSize}, {"d_io", "kIoBytes"}};
  // A pipeline stage's own arenas (its train and eval steps') are allocated on its ranks only, by
  // setUpStage (issue 23: a rank allocates its own stage's storage).
  std::map<int64_t, std::string> stageSetUp; // per stage: its arenas' allocations and file constants' reads
  for (auto [i, arena] : llvm::enumerate(callerArenas)) {
    const std::string bytes = std::to_string(std::max<int64_t>(arena.second, kAlignment));
    if (callerArenaStages[i] < 0) {
      blocks.push_back({arena.first, bytes});
      continue;
    }
    stageSetUp[callerArenaStages[i]] += "    PTRAIN_STEP_CALL(" + cudaCall(CudaCall::ptrain_cuda_malloc) + "(" + bytes +
                                        ", &p));\n    " + arena.first + " = static_cast<unsigned char *>(p);\n";
  }
  for (auto &[block, bytes] : blocks) {
    s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_malloc) << "(" << bytes << ", &p));\n";
    s << "  " << block << " = static_cast<unsigned char *>(p);\n";
  }
  for (auto [i, copy] : llvm::enumerate(storage.constantCopies)) {
    std::string fill = storage.constantFills[i];
    if (fill.empty())
      fill = "PTRAIN_STEP_CALL(" + cudaCall(CudaCall::ptrain_cuda_copy_to_device) + "(" + copy.first + ", " +
             std::to_string(storage.constantBytes[i]) + ", d_constants + " + std::to_string(copy.second) + "));";
    if (pipeline && storage.constantStage[i] != ModuleStorage::kNoStage) {
      // Set up by setUpStage on its stage's ranks only, in their block (issue 23).
      stageSetUp[storage.constantStage[i]] += "    " + llvm::join(llvm::split(fill, '\n'), "\n  ") + "\n";
      continue;
    }
    s << "  " << fill << "\n";
  }
  s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_malloc) << "(" << arenaSize << ", &p));\n"
    << "  d_arena = static_cast<unsigned char *>(p); // set last: the step is ready\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Every entry point's first call: the device is set up and this thread runs on the step's stream.\n"
       "ptrain_status_t enterStep(const char *name) {\n"
       "  if (!d_arena)\n    return stepError(\"%s: call ptrain_step_init first\", name);\n"
       "  PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_cuda_set_stream) << "(stream));\n  return PTRAIN_OK;\n}\n\n";
  const int64_t worldSize = hasComm ? emitCudaCommunicators(comms, pipes, s) : 1;
  // The host mirrors of this rank's states (its stage's in a pipeline), allocated by ptrain_step_init.
  emitStorageBlocks(s, {"storage_state_bytes"}, StateAllocation::Indexed);
  if (!stageSetUp.empty()) {
    // A pipeline rank allocates only its own stage's arenas and sets up only its own stage's constants (its
    // block of d_constants, with the stage's bytes of the constant file), as the CPU target's
    // allocateStage<s>Storage (issue 23); a constant of several stages is in each of their blocks.
    s << "bool stage_set_up = false;\n\n"
         "/// This rank's stage's own device blocks (its steps' arenas) and its constants (generated, copied or read\n"
         "/// from the constant file into its block of d_constants), once.\n"
         "ptrain_status_t setUpStage() {\n"
         "  if (stage_set_up)\n    return PTRAIN_OK;\n"
         "  void *p = nullptr;\n"
         "  switch (ptrain_stage) {\n";
    for (auto &[stage, code] : stageSetUp)
      s << "  case " << stage << ":\n" << code << "    break;\n";
    s << "  default:\n    break;\n  }\n  (void)p;\n  stage_set_up = true;\n  return PTRAIN_OK;\n}\n\n";
  }
  s << "/// The host mirrors of this process's states and their device offsets, once.\n"
       "ptrain_status_t allocateMirrors() {\n"
       "  if (storage_stage != -2)\n    return PTRAIN_OK;\n";
  if (pipeline) {
    s << "  switch (ptrain_stage) {\n";
    for (auto &[stage, layout] : storage.stages.byStage)
      if (!layout.states.empty())
        s << "  case " << stage << ":\n    PTRAIN_STEP_CALL(allocateStates(kStage" << stage << "StateIndices, kNumStage"
          << stage << "States, kStage" << stage << "States, storage_state_bytes));\n    break;\n";
    s << "  default:\n    break;\n  }\n  storage_stage = ptrain_stage;\n";
  } else {
    s << "  PTRAIN_STEP_CALL(allocateStates(nullptr, kNumStates, nullptr, storage_state_bytes));\n"
         "  storage_stage = -1;\n";
  }
  s << "  return layOutStates();\n}\n\n";
  if (!slices.empty())
    emitTPStateInit(slices, s);
  emitCudaTelemetryState(storage.sites, s);
  s << "//===--- The functions on device buffers ---===//\n\n" << declarations << "\n";
  // A block declares the values it defines that later code reads; when only code after its call reads one (a
  // state read the next layer uses), the block's (void) does not count as a use for nvcc's front end (#550).
  if (!outlined.definitions.empty())
    s << "//===--- Repeated blocks (" << outlined.numBlocks << " functions for " << outlined.numOccurrences
      << " calls): identical layers written once (BlockOutliner.h) ---===//\n\n"
      << "#ifdef __NVCC__\n#pragma nv_diag_suppress 550 // set but never used: a live-out read after the call\n"
         "#endif\n\n"
      << outlined.definitions << "#ifdef __NVCC__\n#pragma nv_diag_default 550\n#endif\n\n";
  s << functions;
  s << "} // namespace\n\n";
  target::emitLastErrorEntryPoint(s);
  s << "/// The number of CUDA devices this process sees (a DEVICE error without a driver): ptrain-run's check.\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_cuda_devices(int32_t *out_count) {\n"
       "  if (!out_count)\n    return stepError(\"ptrain_step_cuda_devices: null out_count\");\n"
       "  PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_cuda_device_count) << "(out_count));\n  return PTRAIN_OK;\n}\n\n";
  // ptrain_step_init (StateStorage.h, the writer both targets share): this target's parts.
  target::StepInitEntryPoint init;
  llvm::raw_string_ostream doc(init.doc), comm(init.communicators), setUp(init.storage);
  doc << "/// Sets up the device, loads every parameter by key from the ONNX model at `weights_onnx_path` (NULL: "
      << (onnxFile.empty() ? std::string("none recorded") : onnxFile)
      << ")\n/// into the host mirrors, zeroes every other state, and copies them to the device.\n";
  if (hasComm)
    doc << "/// First initializes MPI (ptrain_comm_init; the world must have " << worldSize
        << " ranks, checked before any device is touched), the NCCL\n/// communicators (the unique id exchanged over "
           "MPI; device LOCAL_RANK or OMPI_COMM_WORLD_LOCAL_RANK) and their groups.\n";
  init.onnxFile = onnxFile;
  if (hasComm)
    emitCudaCommInit(comms, pipes, pipeline ? stageKeys(storage.stages) : SmallVector<int64_t>(), comm);
  setUp << "  PTRAIN_STEP_CALL(setUpDevice(" << (pipeline ? "ptrain_stage" : "") << "));\n  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_set_stream)
        << "(stream));\n";
  emitCudaPipeConnect(pipes, setUp);
  if (!stageSetUp.empty())
    setUp << "  PTRAIN_STEP_CALL(setUpStage());\n";
  setUp << "  PTRAIN_STEP_CALL(allocateMirrors());\n";
  init.tpSlices = !slices.empty();
  init.last = "  PTRAIN_STEP_CALL(pushStates());\n";
  target::emitStepInitEntryPoint(s, init);
  if (hasComm) {
    emitCudaCommEntryPoints(comms, pipes, s);
    // Bytes per link from the NCCL communicators' counters (the pipeline channels' sends count on the pp
    // links), gathered over MPI (ptrain-run's traffic table).
    SmallVector<target::TrafficGroup> traffic = trafficGroups(comms);
    for (target::TrafficGroup &g : traffic)
      if (g.var == pipes.ppComm)
        for (const PipeChannels::Channel &c : pipes.channels)
          g.p2pChannels.push_back({c.comm, c.from, c.to});
    emitTrafficEntryPoints(traffic, s,
                           {getCudaCallInfo(CudaCall::ptrain_nccl_comm_size).name,
                            getCudaCallInfo(CudaCall::ptrain_nccl_p2p_traffic).name,
                            getCudaCallInfo(CudaCall::ptrain_nccl_collective_traffic).name,
                            getCudaCallInfo(CudaCall::ptrain_nccl_reset_traffic).name,
                            getRuntimeCallInfo(RuntimeCall::ptrain_rendezvous_all_gather).name});
  }
  emitStorageEntryPoints(s);
  // The states' host mirrors are checkpointed: pulled from the device before a save, pushed after a load.
  target::CheckpointEntryPoints checkpoints;
  checkpoints.saveDoc = "/// Copies every owned state to the host and writes it by key to a checkpoint (docs/CodegenCpu.md's "
                        "format).\n";
  checkpoints.saveFirst = "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_save\"));\n  PTRAIN_STEP_CALL(pullStates());\n";
  checkpoints.loadDoc =
      "/// Reads every owned state from a checkpoint (nothing changes on error) and copies it to the device.\n";
  checkpoints.loadFirst = "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_load\"));\n";
  checkpoints.loadLast = "  PTRAIN_STEP_CALL(pushStates());\n";
  checkpoints.tableDoc =
      "/// The owned state table over the host mirrors; ptrain_step_pull_states() refreshes them from the device\n"
      "/// and ptrain_step_push_states() copies edits back.\n";
  checkpoints.tableMore = "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_pull_states(void) {\n"
                          "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_pull_states\"));\n  return pullStates();\n}\n"
                          "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_push_states(void) {\n"
                          "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_push_states\"));\n  return pushStates();\n}\n";
  target::emitCheckpointEntryPoints(s, checkpoints);
  emitTelemetryEntryPoints(storage.sites, hasComm, s, getRuntimeCallInfo(RuntimeCall::ptrain_rendezvous_all_gather).name);
  s << "//===--- Entry points ---===//\n\n" << entries << driverCode;
  os << target::withNamedStatePointers(out, storage.stateOrder,
                                       [&](StateOp state) { return storage.states[state.getSymNameAttr()].var; });
  constantFile = std::move(storage.constantFile);
  return success();
}

} // namespace

LogicalResult mlir::ptrain::emitCuda(ModuleOp module, raw_ostream &os, const EmitCudaOptions &options) {
  std::string code;
  llvm::raw_string_ostream codeOs(code);
  std::string constantFile;
  // The generated kernels (KernelPtx.h): the elementwise chains outlined as for the CPU, those with a GPU version
  // lowered to PTX; the codec and AdamW kernels of the CPU step have none on CUDA (the runtime's kernels run).
  std::optional<KernelPtx> ptx;
  if (!options.kernelArchs.empty()) {
    PassManager pm(module.getContext());
    pm.addPass(createOutlineElementwisePass());
    if (failed(pm.run(module)))
      return failure();
    KernelPtxOptions ptxOptions;
    ptxOptions.archs = options.kernelArchs;
    ptx.emplace();
    if (auto kernels = dyn_cast_or_null<ModuleOp>(SymbolTable::lookupSymbolIn(module, kKernelModuleName))) {
      FailureOr<KernelPtx> lowered = lowerKernelsToPtx(kernels, ptxOptions);
      if (failed(lowered))
        return failure();
      ptx = std::move(*lowered);
    }
  }
  if (failed(emitModule(module, codeOs, options, constantFile, ptx ? &*ptx : nullptr)))
    return failure();
  if (!options.constantsFile.empty() &&
      failed(target::writeConstantFile(module.getLoc(), "--emit-cuda", options.constantsFile, constantFile)))
    return failure();
  os << code;
  return success();
}

CudaStateBytes mlir::ptrain::getCudaStateBytes(ModuleOp module) {
  // The emitter's kStateBytes and kStage<s>StateBytes: the same blocks, at least one alignment unit each.
  CudaStateBytes bytes;
  for (auto state : module.getOps<StateOp>())
    bytes.module += stateBlockBytes(state);
  bytes.module = std::max<int64_t>(bytes.module, kAlignment);
  StageStates stages;
  stages.collect(module, kAlignment, stateBlockBytes);
  for (auto &[stage, layout] : stages.byStage)
    bytes.perStage.push_back(std::max<int64_t>(layout.bytes, kAlignment));
  return bytes;
}

void mlir::ptrain::registerEmitCudaTranslation() {
  static llvm::cl::opt<std::string> constantsFile(
      "emit-cuda-constants", llvm::cl::value_desc("file"),
      llvm::cl::desc("--emit-cuda: write the large constants that are not generated (ConstantForm.h) to this file, "
                     "which the step reads at set-up from the directory of its libstep.so into device memory"),
      llvm::cl::init(""));
  static llvm::cl::list<std::string> kernelArchs(
      "emit-cuda-kernels", llvm::cl::value_desc("sm_NN,..."), llvm::cl::CommaSeparated,
      llvm::cl::desc("--emit-cuda: outline the step's elementwise chains (--ptrain-outline-elementwise), lower the "
                     "generated kernels to PTX for these architectures (e.g. sm_80,sm_90), embed them and launch them "
                     "(docs/GeneratedKernels.md)"));
  static llvm::cl::opt<bool> outlineBlocks(
      "emit-cuda-outline",
      llvm::cl::desc("--emit-cuda: write repeated runs of ops (identical layers) once as functions called per "
                     "occurrence (default); =false writes every op inline"),
      llvm::cl::init(true));
  TranslateFromMLIRRegistration reg(
      "emit-cuda",
      "emit a ptrain training step (single-rank, or per-rank after --ptrain-lower-to-runtime) as CUDA calling "
      "libptrain_runtime_cuda over NCCL (GPU target)",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("--emit-cuda: expected a builtin.module");
        if (shouldVerifyPlanBeforeEmit() && failed(verifyPlanBeforeEmit(module, "--emit-cuda")))
          return failure();
        EmitCudaOptions options;
        options.outlineBlocks = outlineBlocks;
        options.constantsFile = constantsFile;
        options.kernelArchs.assign(kernelArchs.begin(), kernelArchs.end());
        return emitCuda(module, os, options);
      },
      [](DialectRegistry &registry) {
        registry.insert<PTrainDialect, func::FuncDialect, arith::ArithDialect, linalg::LinalgDialect,
                        memref::MemRefDialect>();
      });
}
