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
#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"
#include "Common/EmitTraffic.h"
#include "Common/NamedStorage.h"
#include "Common/OpGeometry.h"
#include "Common/PipelineDriver.h"
#include "Common/RuntimeCallTable.h"
#include "Common/StateStorage.h"
#include "Common/TensorParallelSlices.h"
#include "Common/VerifyPlanBeforeEmit.h"
#include "CudaCallTable.h"
#include "EmitCudaCodecs.h"
#include "EmitCudaComm.h"
#include "EmitCudaLoss.h"
#include "EmitCudaModelOps.h"
#include "EmitCudaTransformerOps.h"
#include "StageStates.h"

#include "ptrain/Analysis/BufferLiveness.h"
#include "ptrain/Analysis/GemmFusion.h"
#include "ptrain/Target/Common/BlockOutliner.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CommandLine.h"
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

/// The static-shape f32/i64 tensor type of `type` (with `codes`, also the codec codes' i32, i8, f16 and bf16; with
/// `masks`, also i1: a value inside a function, one uint8_t per element as on the CPU), or an error at `op` naming
/// `what`.
LogicalResult checkType(Operation *op, Type type, const Twine &what, bool codes = false, bool masks = false) {
  if (auto request = dyn_cast<RequestType>(type)) {
    if (!request.getValueType())
      return success(); // a send's request: no buffer of its own
    type = request.getValueType();
  }
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitError("--emit-cuda: ") << what << " has type " << type << "; only ranked tensors are supported";
  if (!tensor.hasStaticShape())
    return op->emitError("--emit-cuda: ")
           << what << " has the dynamic shape " << type << "; only static shapes are supported";
  Type elem = tensor.getElementType();
  if (!isModelElementType(elem) && !(codes && isCodeElementType(elem)) && !(masks && isMaskElementType(elem)))
    return op->emitError("--emit-cuda: ")
           << what << " has element type " << elem
           << (codes   ? "; only f32, i64 and the codec codes' i32, i8, f16 and bf16 are supported"
               : masks ? "; only f32, i64 and i1 (masks) are supported"
                       : "; only f32 and i64 are supported");
  return success();
}

bool isF32(Value v) { return tensorOf(v).getElementType().isF32(); }
const char *cType(Value v) { return elementCType(tensorOf(v).getElementType()); }

struct StateInfo {
  StateOp op;
  std::string var; ///< the host mirror (a heap block of ptrain_step_init)
  int64_t offset;  ///< in the device block of states
  int64_t index;   ///< in kStates
};

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
  int64_t constantBlockBytes = 0;
  CodecSites sites;      ///< codec telemetry (Common/CodecTelemetry.h)
  bool pipeline = false; ///< ptrain.pipeline: a rank's d_states holds its stage's states only
  StageStates stages;    ///< pipeline: each stage's states and their offsets in its d_states
};

/// Emits one function on device buffers; the CUDA target of the shared op emitters (KernelTarget.h): device
/// memory, libptrain_runtime_cuda's kernels on the step's stream (RuntimeCallsCuda.def).
class FunctionEmitter : public CudaCallWriter, public target::KernelTarget {
public:
  FunctionEmitter(func::FuncOp func, ModuleStorage &module, CommGroups &comms, PipeChannels &pipes, std::string arena)
      : func(func), module(module), comms(comms), pipes(pipes), arena(std::move(arena)) {}
  /// Plans the function's storage and emits its chunks (none for a function that runs on no pipeline rank);
  /// `arenaBytes` is its arena's size.
  LogicalResult prepare(int64_t &arenaBytes);
  /// The emitted chunks and the types of the pointers in scope, for the block outliner (BlockOutliner.h).
  target::EmittedFunction takeChunks() { return {chunks.take(), std::move(types), func->hasAttr("ptrain.entry")}; }
  /// Appends the device function to `code` with `body` (its chunks, repeated blocks replaced by calls), and
  /// sets `declaration`, `entry` and `ioBytes`.
  void write(std::string &code, const std::string &body);

  std::string declaration; ///< the device function's prototype (after run)
  std::string entry;       ///< the C entry point on host buffers (after run)
  int64_t ioBytes = 0;     ///< the entry point's arguments and results in d_io

  // CudaCallWriter (the per-op emitters of EmitCudaModelOps.cpp).
  std::string valuePtr(Value v) const override { return ptr(v); }
  LogicalResult emitCall(CudaCall callee, ArrayRef<std::string> args) override { return call(callee, args); }
  std::string scratch(int64_t bytes, StringRef type) override { return scratchPtr(bytes, type); }
  // KernelTarget (valuePtr above).
  StringRef flag() const override { return "--emit-cuda"; }
  LogicalResult callKernel(target::Kernel kernel, ArrayRef<std::string> args) override {
    return call(cudaKernel(kernel), args);
  }
  std::string scratchPtr(int64_t bytes, StringRef type) override { return arenaPtr(scratch(bytes), type); }
  /// A `static const` host array in the current op's block (dims, offsets); "nullptr" when empty.
  std::string hostArray(ArrayRef<int64_t> values, StringRef name, StringRef type = "int64_t") override;
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

private:
  LogicalResult checkOps();
  void planStorage();
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
  std::string arenaPtr(int64_t buffer, StringRef type) const {
    return "reinterpret_cast<" + type.str() + " *>(" + arena + " + " +
           std::to_string(liveness->buffers()[buffer].offset) + ")";
  }
  LogicalResult call(CudaCall callee, ArrayRef<std::string> args);
  /// A send or receive on the pipeline axis, on the stream of its channel (EmitCudaComm.h, PipeChannels): the
  /// peer is this function's stage (ptrain.stage) + offset.
  LogicalResult pointToPoint(Operation *op, bool isSend, Value buffer, Value request, StringRef grid, StringRef axis,
                             int64_t offset);

  func::FuncOp func;
  ModuleStorage &module;
  CommGroups &comms;
  PipeChannels &pipes;
  std::string arena;                              ///< the device block this function's buffers live in
  llvm::DenseMap<Value, std::string> requestComm; ///< a started all-reduce's communicator (for its wait)
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> opIndex;
  llvm::DenseMap<Value, Storage> storage;
  /// The storage analysis (BufferLiveness.h); the dry run adds the kernels' scratch to it.
  std::optional<BufferLiveness> liveness;
  Operation *current = nullptr;
  size_t nextScratch = 0;
  bool dryRun = true;
  bool runsNowhere = false;
  std::string block;
  target::ChunkList chunks;                   ///< one per op (BlockOutliner.h)
  std::optional<target::ChunkDecl> constantDecl; ///< the current constant's pointer
  llvm::StringMap<std::string> types;         ///< the C type of every pointer declared at function scope
  int64_t arenaBytes = 0;
  int64_t valueCount = 0;
};

std::string FunctionEmitter::hostArray(ArrayRef<int64_t> values, StringRef name, StringRef type) {
  if (values.empty())
    return "nullptr";
  block += "    static const " + type.str() + " " + name.str() + "[" + std::to_string(values.size()) + "] = {" +
           joinInts(values) + "};\n";
  return name.str();
}

LogicalResult FunctionEmitter::call(CudaCall callee, ArrayRef<std::string> args) {
  return writeCheckedCall(block, current, "--emit-cuda", getCudaCallInfo(callee), args);
}

LogicalResult FunctionEmitter::pointToPoint(Operation *op, bool isSend, Value buffer, Value request, StringRef grid,
                                            StringRef axis, int64_t offset) {
  auto stage = getStage(func);
  if (!stage)
    return op->emitError("--emit-cuda: a send or receive needs its function's ptrain.stage (the pp coordinate)");
  if (axis != "pp")
    return op->emitError("--emit-cuda: point-to-point transfers are supported on the axis pp only");
  FailureOr<std::string> comm = comms.lookupAxis(op, grid, axis);
  if (failed(comm))
    return failure();
  for (auto &[callee, args] : pipes.startCalls(op, request, isSend, stage.getIndex(), stage.getIndex() + offset, *comm,
                                               ptr(buffer), bytesOf(buffer)))
    if (failed(call(callee, args)))
      return failure();
  return success();
}

/// The ops the CUDA target handles: the step of --ptrain-build-training-step and, with a grid, the
/// communication of --ptrain-lower-to-runtime (NCCL) with the pipeline codecs (EmitCudaCodecs.h).
LogicalResult FunctionEmitter::checkOps() {
  if (!func.getBody().hasOneBlock())
    return emitError(func.getLoc(), "--emit-cuda: function @") << func.getSymName() << " has control flow (more than one block)";
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
    if (failed(checkType(func, type, "argument #" + Twine(i))))
      return failure();
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    if (failed(checkType(func, type, "result #" + Twine(i))))
      return failure();
  for (Operation &op : func.getBody().front()) {
    // ZeRO-1's collectives (--ptrain-build-training-step zero=1, docs/DistributedOptimizer.md): not mapped to NCCL
    // yet; refused by name rather than as an unknown op.
    if (isa<ReduceScatterStartOp, AllGatherStartOp>(op))
      return op.emitError("--emit-cuda: '")
             << op.getName()
             << "' (ZeRO-1, the distributed optimizer: --ptrain-build-training-step zero=1, ptrain-compile --zero 1) "
                "is not supported by the CUDA code generator yet; --target cpu runs it";
    if (!isa<StateReadOp, StateWriteOp, arith::ConstantOp, EmbeddingOp, BinaryOp, UnaryOp, MatmulOp, LayerNormOp,
             SoftmaxOp, GeluOp, ReshapeOp, TransposeOp, SplitOp, CrossEntropyOp, SliceOp, ConcatOp, SumToOp, PadOp,
             LayerNormGradOp, SoftmaxGradOp, GeluGradOp, EmbeddingGradOp, CrossEntropyGradOp, AdamWOp, AllReduceStartOp,
             SendStartOp, RecvStartOp, WaitOp, TPCopyOp, TPAllReduceOp, TPSplitOp, CompressOp, DecompressOp,
             CompressedAllReduceStartOp, func::CallOp, func::ReturnOp>(op) &&
        !isCudaModelOp(&op) && !isCudaTransformerOp(&op)) {
      return op.emitError("--emit-cuda: '")
             << op.getName() << "' is not supported by the CUDA code generator (docs/CodegenCuda.md lists the ops "
             << "it maps; --target cpu has the others)";
    }
    if (isa<CompressOp, DecompressOp, CompressedAllReduceStartOp>(op) && failed(checkCudaCodecOp(&op)))
      return failure();
    // Codes (and the transfers and waits that carry them) may have the codecs' element types; so may the mixed
    // precision casts and 16-bit GEMMs with fp32 accumulation (docs/MixedPrecision.md; a cast's element types are
    // checked where it is emitted, EmitCudaModelOps.cpp).
    auto matmul = dyn_cast<MatmulOp>(op);
    const bool transfer = isa<CompressOp, DecompressOp, SendStartOp, RecvStartOp, WaitOp>(op);
    const bool codes = transfer || isa<CastOp>(op) || (matmul && matmul.getAccumulate());

    for (auto [i, v] : llvm::enumerate(op.getOperands()))
      if (failed(checkType(&op, v.getType(), "operand #" + Twine(i), codes, /*masks=*/!transfer)))
        return failure();
    for (auto [i, v] : llvm::enumerate(op.getResults()))
      if (failed(checkType(&op, v.getType(), "result #" + Twine(i), codes, /*masks=*/!transfer)))
        return failure();
    opIndex[&op] = ops.size();
    ops.push_back(&op);
  }
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

/// Where every value lives (see the file comment): the analysis with the CUDA target's rules, every value
/// named.
void FunctionEmitter::planStorage() {
  liveness.emplace(func, StorageRules::cuda());
  liveness->run(/*place=*/false);
  target::nameStorage(func, ops, *liveness, "d_arg", valueCount, storage); // arguments: the caller's device buffers
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
  int64_t offset = module.constantBlockBytes;
  if (!dryRun && attr.isSplat() && n > kPrintedSplatElements) {
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
    module.constantBlockBytes = alignUp(offset + bytesOf(result));
  } else if (!dryRun) {
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
    module.constantBlockBytes = alignUp(offset + bytesOf(result));
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
  current = op;
  nextScratch = 0;
  block.clear();
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
    std::string type = cType(result), text;
    if (s.kind == Storage::Arena)
      text = "  " + type + " *" + s.name + " = " + arenaPtr(s.buffer, type) + ";\n";
    else if (s.kind == Storage::State)
      text = "  " + type + " *" + s.name + " = reinterpret_cast<" + type + " *>(d_states + " +
             std::to_string(stateOffset(cast<StateReadOp>(op).getStateAttr().getAttr())) + ");\n";
    else if (s.kind == Storage::Alias)
      text = "  " + type + " *" + s.name + " = const_cast<" + type + " *>(" + ptr(s.root) + ");\n";
    if (s.kind != Storage::Constant && result.use_empty())
      text += "  (void)" + s.name + ";\n";
    if (text.empty())
      continue;
    chunk.decls.push_back({s.name, text});
    types[s.name] = type + " *";
  }
  auto n = [](Value v) { return std::to_string(countOf(v)); };
  auto bytes = [](Value v) { return std::to_string(bytesOf(v)); };
  auto statePtr = [&](StringAttr sym, Value v) {
    return "reinterpret_cast<" + std::string(cType(v)) + " *>(d_states + " + std::to_string(stateOffset(sym)) + ")";
  };

  LogicalResult result =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case<arith::ConstantOp>([&](auto c) { return emitConstant(c); })
          .Case<StateReadOp>([&](StateReadOp read) -> LogicalResult {
            Value v = read.getResult();
            if (storage[v].kind != Storage::Arena)
              return success();
            return call(CudaCall::ptrain_cuda_copy_bytes,
                        {statePtr(read.getStateAttr().getAttr(), v), bytes(v), ptr(v)});
          })
          .Case<StateWriteOp>([&](StateWriteOp write) {
            Value v = write.getValue();
            return call(CudaCall::ptrain_cuda_copy_bytes,
                        {ptr(v), bytes(v), statePtr(write.getStateAttr().getAttr(), v)});
          })
          .Case<ReshapeOp>([&](ReshapeOp) { return success(); })
          // The ops both targets emit alike, up to the kernels' names (lib/Target/Common/KernelTarget.h).
          .Case<EmbeddingOp, EmbeddingGradOp, UnaryOp, LayerNormOp, LayerNormGradOp, SoftmaxOp, SoftmaxGradOp, GeluOp,
                GeluGradOp, SliceOp, SplitOp, ConcatOp, PadOp, TPSplitOp>(
              [&](Operation *o) { return emitSharedOp(o, *this); })
          .Case<BinaryOp>([&](BinaryOp b) -> LogicalResult {
            if (gemms.aliasOf(b)) {
              block += "    // an alias: the GEMM of its product started from the bias rows (GemmFusion.h)\n";
              return success();
            }
            return emitSharedOp(b, *this);
          })
          .Case<TransposeOp>([&](TransposeOp t) -> LogicalResult {
            if (gemms.isFolded(t))
              return success(); // every user reads the input with cuBLAS's transpose flag
            if (gemms.aliasOf(t)) {
              block += "    // an alias: the GEMM of its input wrote the transposed matrix (GemmFusion.h)\n";
              return success();
            }
            return emitSharedOp(t, *this);
          })
          .Case<SumToOp>([&](SumToOp sum) -> LogicalResult {
            MatmulOp m = gemms.summedMatmul(sum);
            if (!m)
              return emitSharedOp(sum, *this);
            // sum_b A_b B_b as one GEMM over the batch-long contraction (A stored transposed, GemmFusion.h).
            FailureOr<GemmGeometry> g = gemmGeometry(m, "--emit-cuda");
            if (failed(g))
              return failure();
            Value a = gemms.operand(m, 0).source, b = gemms.operand(m, 1).source;
            const bool transposed = gemms.writesTransposed(sum); // its only user transposes it: B^T A
            return call(CudaCall::ptrain_cuda_gemm_f32,
                        {"1", "0", "1", std::to_string(transposed ? g->cols : g->rows),
                         std::to_string(transposed ? g->rows : g->cols), std::to_string(g->batch * g->k), "1.0f", ptr(transposed ? b : a), "0", ptr(transposed ? a : b),
                         "0", "0.0f", ptr(sum.getResult()), "0"});
          })
          .Case<MatmulOp>([&](MatmulOp m) -> LogicalResult {
            FailureOr<GemmGeometry> g = gemmGeometry(m, "--emit-cuda");
            if (failed(g))
              return failure();
            if (gemms.isFolded(m))
              return success(); // computed by the sum_to of its result
            GemmOperand a = gemms.operand(m, 0), b = gemms.operand(m, 1);
            Value bias = gemms.biasOf(m);
            if (bias) { // C = the bias rows, then C = A B + C (the add of its only user, GemmFusion.h)
              ArrayRef<int64_t> in = shapeOf(bias), out = shapeOf(m.getResult());
              if (failed(call(CudaCall::ptrain_cuda_broadcast_to,
                              {ptr(bias), "4", std::to_string(in.size()), constArray(in, "bias_dims", "int64_t"),
                               std::to_string(out.size()), constArray(out, "out_dims", "int64_t"),
                               ptr(m.getResult())})))
                return failure();
            }
            // --precision bf16 or fp16: 16-bit operands, fp32 accumulation and result (docs/MixedPrecision.md),
            // the same arguments.
            CudaCall gemm = CudaCall::ptrain_cuda_gemm_f32;
            if (m.getAccumulate())
              gemm = m.getLhs().getType().getElementType().isBF16() ? CudaCall::ptrain_cuda_gemm_bf16
                                                                    : CudaCall::ptrain_cuda_gemm_f16;
            return call(gemm, {a.transposed ? "1" : "0", b.transposed ? "1" : "0", std::to_string(g->batch),
                               std::to_string(g->rows), std::to_string(g->cols), std::to_string(g->k), "1.0f",
                               ptr(a.source), std::to_string(g->strideA), ptr(b.source), std::to_string(g->strideB),
                               bias ? "1.0f" : "0.0f", ptr(m.getResult()), std::to_string(g->rows * g->cols)});
          })
          .Case<CrossEntropyOp, CrossEntropyGradOp>([&](Operation *ce) {
            return emitCudaCrossEntropy(ce, *this); // weights, ignore_index, reduction: EmitCudaLoss.h
          })
          .Case<AdamWOp>([&](AdamWOp a) {
            LRScheduleAttr schedule = a.getSchedule();
            double peak = schedule.getPeak().getValueAsDouble();
            return call(CudaCall::ptrain_cuda_adamw_step_f32,
                        {ptr(a.getParam()), ptr(a.getGrad()), ptr(a.getM()), ptr(a.getV()), n(a.getParam()),
                         ptr(a.getStep()), std::to_string(schedule.getWarmup()), std::to_string(schedule.getTotal()),
                         floatLiteral(peak), floatLiteral(peak * schedule.getMinRatio().getValueAsDouble()),
                         floatLiteral(a.getBeta1Attr().getValueAsDouble()),
                         floatLiteral(a.getBeta2Attr().getValueAsDouble()),
                         floatLiteral(a.getEpsilonAttr().getValueAsDouble()),
                         floatLiteral(a.getWeightDecayAttr().getValueAsDouble()), ptr(a.getNewParam()),
                         ptr(a.getNewM()), ptr(a.getNewV())});
          })
          .Case<AllReduceStartOp>([&](AllReduceStartOp a) -> LogicalResult {
            Value in = a.getInput(), req = a.getRequest();
            if (!isF32(in))
              return a.emitError("--emit-cuda: all-reduce of a non-f32 tensor is not supported");
            if (a.getReduction() != ReductionKind::Sum && a.getReduction() != ReductionKind::Avg)
              return a.emitError("--emit-cuda: only sum and avg all-reduces are supported");
            // A subgroup (Optimus-CC's fused embedding sync): its own NCCL communicator (EmitCudaComm.h).
            FailureOr<std::string> comm = comms.lookup(a, a.getGridAttr().getValue(), a.getGridAxes(), getSubgroup(a));
            if (failed(comm))
              return failure();
            requestComm[req] = *comm;
            return call(CudaCall::ptrain_nccl_all_reduce,
                        {*comm, ptr(in), ptr(req), n(in), "PTRAIN_DTYPE_F32",
                         a.getReduction() == ReductionKind::Sum ? "PTRAIN_REDUCE_SUM" : "PTRAIN_REDUCE_AVG"});
          })
          .Case<SendStartOp>([&](SendStartOp send) {
            return pointToPoint(send, /*isSend=*/true, send.getInput(), send.getRequest(),
                                send.getGridAttr().getValue(), send.getAxis(), send.getOffset());
          })
          .Case<RecvStartOp>([&](RecvStartOp recv) {
            return pointToPoint(recv, /*isSend=*/false, recv.getRequest(), recv.getRequest(),
                                recv.getGridAttr().getValue(), recv.getAxis(), recv.getOffset());
          })
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
          .Case<CompressOp, DecompressOp, CompressedAllReduceStartOp>([&](Operation *o) -> LogicalResult {
            // Codec kernels with fused error feedback, compressed all-reduces over NCCL (EmitCudaCodecs.h).
            CudaCodecWriter w{[&](Value v) { return ptr(v); },
                              [&](CudaCall c, ArrayRef<std::string> args) { return call(c, args); },
                              [&](const std::string &code) { block += "    " + code + "\n"; }};
            if (auto c = dyn_cast<CompressedAllReduceStartOp>(o)) {
              FailureOr<std::string> comm = comms.lookup(c, c.getGridAttr().getValue(), c.getGridAxes());
              if (failed(comm))
                return failure();
              requestComm[c.getRequest()] = *comm;
              return emitCudaCompressedAllReduce(c, *comm, w);
            }
            return isa<CompressOp>(o) ? emitCudaCompress(cast<CompressOp>(o), module.sites, w)
                                      : emitCudaDecompress(cast<DecompressOp>(o), w);
          })
          .Case<TPCopyOp>([&](TPCopyOp) { return success(); }) // an alias (planStorage)
          .Case<TPAllReduceOp>([&](TPAllReduceOp t) -> LogicalResult {
            if (!isF32(t.getInput()))
              return t.emitError("--emit-cuda: a tensor-parallel all-reduce of a non-f32 tensor is not supported");
            FailureOr<std::string> comm = comms.lookupAxis(t, t.getGrid(), t.getAxis());
            if (failed(comm) || failed(call(CudaCall::ptrain_nccl_all_reduce,
                                            {*comm, ptr(t.getInput()), ptr(t.getResult()), n(t.getInput()),
                                             "PTRAIN_DTYPE_F32", "PTRAIN_REDUCE_SUM"})))
              return failure();
            return call(CudaCall::ptrain_nccl_wait, {*comm});
          })
          .Case<func::CallOp>([&](func::CallOp c) -> LogicalResult {
            // Another function of the step, on device pointers: it runs in the shared arena, the caller in its
            // own.
            std::string args;
            for (Value v : llvm::concat<Value>(c.getOperands(), c.getResults()))
              args += (args.empty() ? "" : ", ") + ptr(v);
            block += "    PTRAIN_STEP_CALL(device_" + identifierFrom(c.getCallee()) + "(" + args + "));\n";
            return success();
          })
          .Case<func::ReturnOp>([&](func::ReturnOp r) -> LogicalResult {
            // Into the caller's buffers (the host entry point copies them to the host).
            for (auto [i, v] : llvm::enumerate(r.getOperands()))
              if (failed(call(CudaCall::ptrain_cuda_copy_bytes, {ptr(v), bytes(v), "d_out_" + std::to_string(i)})))
                return failure();
            return success();
          })
          .Default([&](Operation *other) -> LogicalResult {
            if (isCudaModelOp(other))
              return emitCudaModelOp(other, *this); // reductions, selection, clipping, SGD, vocab-parallel
            if (isCudaTransformerOp(other))
              return emitCudaTransformerOp(other, *this); // masks, rms_norm, rotary, dropout
            return other->emitError("--emit-cuda: '") << other->getName() << "' is not supported";
          });
  if (failed(result))
    return failure();
  if (!block.empty())
    chunk.code = "  {\n" + block + "  }\n";
  if (constantDecl)
    chunk.decls.push_back(std::move(*constantDecl));
  constantDecl.reset();
  // A transpose or batched product a GEMM reads (GemmFusion.h) has no code and no pointer: no chunk (the GEMM
  // names what it reads).
  if (gemms.isFolded(op) && chunk.decls.empty() && chunk.code.empty())
    return success();
  // A state read stays where it is: a layer's block that reads it computes its pointer from d_states and a row
  // entry (BlockOutliner.h, live-ins in a global block).
  chunks.push(std::move(chunk));
  return success();
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
  planStorage();
  for (BlockArgument arg : func.getBody().front().getArguments())
    types["d_arg" + std::to_string(arg.getArgNumber())] = "const " + std::string(cType(arg)) + " *";
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    types["d_out_" + std::to_string(i)] =
        std::string(elementCType(cast<RankedTensorType>(type).getElementType())) + " *";
  // Dry run: every op's emitter requests its scratch, planned like any buffer; its text is discarded.
  for (Operation *op : ops)
    if (failed(emitOp(op)))
      return failure();
  arenaBytes = bytes = liveness->place();
  dryRun = false;
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

LogicalResult emitModule(ModuleOp module, raw_ostream &os, const EmitCudaOptions &options) {
  ModuleStorage storage;
  for (Operation &op : module.getBody()->getOperations())
    if (!isa<func::FuncOp, StateOp, GridOp>(op))
      return emitError(op.getLoc(), "--emit-cuda: '") << op.getName() << "' at module level is not supported";
  for (auto state : module.getOps<StateOp>()) {
    if (failed(checkType(state, state.getType(), "the state")))
      return failure();
    StateInfo info{state, "state_" + std::to_string(storage.stateOrder.size()) + "_" + identifierFrom(state.getKey()),
                   storage.stateBytes, static_cast<int64_t>(storage.stateOrder.size())};
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
  int64_t arenaBytes = 0, ioBytes = 0;
  SmallVector<std::string> entryNames;
  SmallVector<std::pair<std::string, int64_t>> callerArenas;
  std::vector<std::unique_ptr<FunctionEmitter>> emitters;
  llvm::StringMap<std::string> globals{{"d_states", "unsigned char *"}, {"d_constants", "unsigned char *"},
                                       {"d_arena", "unsigned char *"}};
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      return emitError(func.getLoc(), "--emit-cuda: function @") << func.getSymName() << " has no body";
    int64_t bytes = 0;
    // A function that calls others (a lowered pipeline step) keeps its values in its own arena, since its
    // callees use the shared one.
    bool calls = !func.getOps<func::CallOp>().empty();
    std::string arena = calls ? "d_arena_" + identifierFrom(func.getSymName()) : "d_arena";
    globals[arena] = "unsigned char *";
    emitters.push_back(std::make_unique<FunctionEmitter>(func, storage, comms, pipes, arena));
    if (failed(emitters.back()->prepare(bytes)))
      return failure();
    if (calls)
      callerArenas.push_back({arena, bytes});
    else
      arenaBytes = std::max(arenaBytes, bytes);
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
    if (*slice)
      slices.push_back(std::move(**slice));
  }
  std::string onnxFile;
  if (auto file = module->getAttrOfType<StringAttr>("ptrain.onnx_file"))
    onnxFile = file.getValue().str();
  auto cpuCall = [](RuntimeCall c) { return std::string(getRuntimeCallInfo(c).name); };
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
    << (hasComm ? "#include <cstdlib>\n" : "") << "#include <vector>\n"
    << "\n"
       "#define PTRAIN_STEP_API __attribute__((visibility(\"default\")))\n"
    << kStepCallMacros << "namespace {\n\n"
       "/// Errors the step itself detects (the runtime's are in ptrain_last_error()).\n"
       "char step_error[512];\n"
       "bool step_error_own = false;\n"
       "__attribute__((format(printf, 1, 2))) ptrain_status_t stepError(const char *format, ...) {\n"
       "  va_list args;\n"
       "  va_start(args, format);\n"
       "  std::vsnprintf(step_error, sizeof(step_error), format, args);\n"
       "  va_end(args);\n"
       "  step_error_own = true;\n"
       "  return PTRAIN_ERROR_INVALID_ARGUMENT;\n"
       "}\n\n";
  s << "//===--- States (" << storage.stateOrder.size()
    << "): host mirrors (init, checkpoints) and offsets in the device block d_states ---===//\n\n";
  for (StateOp state : storage.stateOrder) {
    const StateInfo &info = storage.states[state.getSymNameAttr()];
    RankedTensorType type = state.getTensorType();
    s << "// @" << state.getSymName() << " key \"" << state.getKey() << "\" kind "
      << stringifyStateKind(state.getKind()) << " : " << type;
    if (!pipeline)
      s << ", device offset " << info.offset;
    for (auto &[stage, layout] : storage.stages.byStage)
      if (auto it = layout.offsets.find(state.getSymNameAttr()); pipeline && it != layout.offsets.end())
        s << ", stage " << stage << " device offset " << it->second;
    s << "\n";
    s << elementCType(type.getElementType()) << " *" << info.var << " = nullptr;\n";
    if (type.getRank() > 0)
      s << "const int64_t " << info.var << "_dims[" << type.getRank() << "] = {" << joinInts(type.getShape()) << "};\n";
  }
  // A table over the host mirrors and the device offsets of its states.
  auto stateTable = [&](StringRef name, ArrayRef<StateOp> list, llvm::function_ref<int64_t(StateOp)> offset) {
    s << "\nptrain_state_desc_t " << name << "[] = {\n";
    for (StateOp state : list) {
      s << "    " << stateDescriptor(state, storage.states[state.getSymNameAttr()].var, "nullptr") << ",\n";
    }
    if (list.empty())
      s << "    {nullptr, nullptr, PTRAIN_DTYPE_F32, 0, 0, nullptr, PTRAIN_STATE_INIT_NONE, 0},\n";
    s << "};\n/// Device offset of each state of " << name << " in d_states.\nconst int64_t " << name
      << "Offsets[] = {";
    for (auto [i, state] : llvm::enumerate(list))
      s << (i ? (i % 8 ? ", " : ",\n    ") : "\n    ") << offset(state);
    s << (list.empty() ? "0" : "") << "};\n";
  };
  stateTable("kStates", storage.stateOrder,
             [&](StateOp state) { return storage.states[state.getSymNameAttr()].offset; });
  s << "constexpr int64_t kNumStates = " << storage.stateOrder.size() << ";\n";
  if (pipeline) {
    s << "\n// The states each pipeline stage's functions use: a rank initializes, copies, saves and loads its "
         "stage's,\n// and its d_states holds only them (kStage<s>StatesOffsets, kStage<s>StateBytes).\n";
    for (auto &[stage, layout] : storage.stages.byStage) {
      const StageStates::Stage &l = layout;
      stateTable("kStage" + std::to_string(stage) + "States", l.states.getArrayRef(),
                 [&](StateOp state) { return l.offsets.lookup(state.getSymNameAttr()); });
      s << "constexpr int64_t kNumStage" << stage << "States = " << l.states.size() << ";\n";
      s << "constexpr int64_t kStage" << stage << "StateBytes = " << std::max<int64_t>(l.bytes, kAlignment)
        << "; ///< the device memory of stage " << stage << "'s states on its ranks\n";
    }
  }
  s << "/// The states this process owns (the stage's in a pipeline; set by ptrain_step_init).\n"
       "const ptrain_state_desc_t *active_states = kStates;\nconst int64_t *active_offsets = kStatesOffsets;\n"
       "int64_t num_active_states = kNumStates;\n\n";
  s << "//===--- Constants: host arrays, copied once into the device block d_constants ---===//\n\n"
    << storage.constants;
  s << "//===--- Device memory and the stream (ptrain_step_init) ---===//\n\n";
  s << "constexpr int64_t kStateBytes = " << std::max<int64_t>(storage.stateBytes, kAlignment)
    << (pipeline ? "; ///< every state of the module (a pipeline rank allocates its stage's: active_state_bytes)\n"
                 : ";\n");
  s << "int64_t active_state_bytes = kStateBytes; ///< d_states of this process (its stage's; ptrain_step_init)\n";
  s << "constexpr int64_t kConstantBytes = " << std::max<int64_t>(storage.constantBlockBytes, kAlignment) << ";\n";
  s << "constexpr int64_t kArenaBytes = " << std::max<int64_t>(arenaBytes, kAlignment)
    << "; ///< every intermediate tensor and kernel scratch, offsets planned by liveness\n";
  s << "constexpr int64_t kIoBytes = " << std::max<int64_t>(ioBytes, kAlignment)
    << "; ///< an entry point's arguments and results on the device\n";
  s << "unsigned char *d_states = nullptr;\nunsigned char *d_constants = nullptr;\nunsigned char *d_io = nullptr;\n";
  for (auto &[name, bytes] : callerArenas)
    s << "/// The buffers of a function that calls others (its callees use d_arena): " << bytes
      << " bytes.\nunsigned char *" << name << " = nullptr;\n";
  s << "unsigned char *d_arena = nullptr;\nvoid *stream = nullptr;\n\n";
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
       "ptrain_status_t setUpDevice() {\n"
       "  if (d_arena)\n    return PTRAIN_OK;\n"
       "  PTRAIN_STEP_CALL(checkDevice());\n"
       "  void *p = nullptr;\n";
  s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_stream_create) << "(&stream));\n";
  s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_set_stream) << "(stream));\n";
  SmallVector<std::pair<std::string, std::string>> blocks = {
      {"d_states", "active_state_bytes"}, {"d_constants", "kConstantBytes"}, {"d_io", "kIoBytes"}};
  for (auto &[name, bytes] : callerArenas)
    blocks.push_back({name, std::to_string(std::max<int64_t>(bytes, kAlignment))});
  for (auto &[block, bytes] : blocks) {
    s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_malloc) << "(" << bytes << ", &p));\n";
    s << "  " << block << " = static_cast<unsigned char *>(p);\n";
  }
  for (auto [i, copy] : llvm::enumerate(storage.constantCopies)) {
    if (!storage.constantFills[i].empty()) {
      s << "  " << storage.constantFills[i] << "\n";
      continue;
    }
    s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_copy_to_device) << "(" << copy.first << ", "
      << storage.constantBytes[i] << ", d_constants + " << copy.second << "));\n";
  }
  s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_malloc) << "(kArenaBytes, &p));\n"
    << "  d_arena = static_cast<unsigned char *>(p); // set last: the step is ready\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Every entry point's first call: the device is set up and this thread runs on the step's stream.\n"
       "ptrain_status_t enterStep(const char *name) {\n"
       "  if (!d_arena)\n    return stepError(\"%s: call ptrain_step_init first\", name);\n"
       "  PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_cuda_set_stream) << "(stream));\n  return PTRAIN_OK;\n}\n\n";
  const int64_t worldSize = hasComm ? emitCudaCommunicators(comms, pipes, s) : 1;
  // The host mirrors of this rank's states (its stage's in a pipeline), allocated by ptrain_step_init.
  emitStorageBlocks(s, {"storage_state_bytes"});
  auto stateVar = [&](StateOp st) { return storage.states[st.getSymNameAttr()].var; };
  auto stateIndex = [&](StateOp st) { return storage.states[st.getSymNameAttr()].index; };
  s << "/// The host mirrors of this process's states, once.\nptrain_status_t allocateMirrors() {\n"
       "  if (storage_stage != -2)\n    return PTRAIN_OK;\n";
  if (pipeline) {
    s << "  switch (ptrain_stage) {\n";
    for (auto &[stage, layout] : storage.stages.byStage)
      s << "  case " << stage << ":\n"
        << stateAllocations(layout.states.getArrayRef(), stateVar, stateIndex,
                            "kStage" + std::to_string(stage) + "States", layout.states.getArrayRef(),
                            "storage_state_bytes")
        << "    break;\n";
    s << "  default:\n    break;\n  }\n  storage_stage = ptrain_stage;\n";
  } else {
    s << stateAllocations(storage.stateOrder, stateVar, stateIndex, "", {}, "storage_state_bytes")
      << "  storage_stage = -1;\n";
  }
  s << "  return PTRAIN_OK;\n}\n\n";
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
  s << "} // namespace\n\n//===--- State management ---===//\n\n";
  s << "/// The message of the last failed entry point: the step's own or the runtime's (ptrain_last_error()).\n"
       "extern \"C\" PTRAIN_STEP_API const char *ptrain_step_last_error(void) {\n"
       "  return step_error_own ? step_error : ptrain_last_error();\n}\n\n";
  s << "/// The number of CUDA devices this process sees (a DEVICE error without a driver): ptrain-run's check.\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_cuda_devices(int32_t *out_count) {\n"
       "  if (!out_count)\n    return stepError(\"ptrain_step_cuda_devices: null out_count\");\n"
       "  PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_cuda_device_count) << "(out_count));\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Sets up the device, loads every parameter by key from the ONNX model at `weights_onnx_path` (NULL: "
    << (onnxFile.empty() ? std::string("none recorded") : onnxFile)
    << ")\n/// into the host mirrors, zeroes every other state, and copies them to the device.\n";
  if (hasComm)
    s << "/// First initializes MPI (ptrain_comm_init; the world must have " << worldSize
      << " ranks, checked before any device is touched), the NCCL\n/// communicators (the unique id exchanged over "
         "MPI; device LOCAL_RANK or OMPI_COMM_WORLD_LOCAL_RANK) and their groups.\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_init(const char *weights_onnx_path) {\n"
       "  const char *path = weights_onnx_path ? weights_onnx_path : "
    << (onnxFile.empty() ? std::string("nullptr") : stringLiteral(onnxFile)) << ";\n";
  if (hasComm)
    emitCudaCommInit(comms, pipes, pipeline ? stageKeys(storage.stages) : SmallVector<int64_t>(), s);
  s << "  PTRAIN_STEP_CALL(setUpDevice());\n  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_set_stream)
    << "(stream));\n";
  emitCudaPipeConnect(pipes, s);
  s << "  PTRAIN_STEP_CALL(allocateMirrors());\n";
  if (slices.empty())
    s << "  PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_state_init_onnx)
      << "(active_states, num_active_states, path));\n";
  else
    s << "  PTRAIN_STEP_CALL(initStates(path));\n";
  s << "  PTRAIN_STEP_CALL(pushStates());\n  return PTRAIN_OK;\n}\n\n";
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
  s << "/// Copies every owned state to the host and writes it by key to a checkpoint (docs/CodegenCpu.md's "
       "format).\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_save(const char *path) {\n"
       "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_save\"));\n  PTRAIN_STEP_CALL(pullStates());\n"
       "  PTRAIN_STEP_CALL("
    << cpuCall(RuntimeCall::ptrain_checkpoint_save)
    << "(active_states, num_active_states, path));\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Reads every owned state from a checkpoint (nothing changes on error) and copies it to the device.\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_load(const char *path) {\n"
       "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_load\"));\n"
       "  PTRAIN_STEP_CALL("
    << cpuCall(RuntimeCall::ptrain_checkpoint_load)
    << "(active_states, num_active_states, path));\n  PTRAIN_STEP_CALL(pushStates());\n  return PTRAIN_OK;\n}\n\n";
  s << "/// The owned state table over the host mirrors; ptrain_step_pull_states() refreshes them from the device\n"
       "/// and ptrain_step_push_states() copies edits back.\n"
       "extern \"C\" PTRAIN_STEP_API int64_t ptrain_step_num_states(void) { return num_active_states; }\n"
       "extern \"C\" PTRAIN_STEP_API const ptrain_state_desc_t *ptrain_step_states(void) { return active_states; }\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_pull_states(void) {\n"
       "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_pull_states\"));\n  return pullStates();\n}\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_push_states(void) {\n"
       "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_push_states\"));\n  return pushStates();\n}\n\n";
  emitTelemetryEntryPoints(storage.sites, hasComm, s, getRuntimeCallInfo(RuntimeCall::ptrain_rendezvous_all_gather).name);
  s << "//===--- Entry points ---===//\n\n" << entries << driverCode;
  os << out;
  return success();
}

} // namespace

LogicalResult mlir::ptrain::emitCuda(ModuleOp module, raw_ostream &os, const EmitCudaOptions &options) {
  return emitModule(module, os, options);
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
        return emitCuda(module, os, options);
      },
      [](DialectRegistry &registry) { registry.insert<PTrainDialect, func::FuncDialect, arith::ArithDialect>(); });
}
