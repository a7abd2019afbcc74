//===- EmitCuda.cpp - The CUDA code generator (--emit-cuda) ---------------===//
//
// One CUDA translation unit per single-rank module (docs/CodegenCuda.md):
//   1. a host mirror of every ptrain.state (the keyed table that
//      ptrain_state_init_onnx and the checkpoints read and write) and its
//      offset in ONE device block of states; constants in one device block;
//   2. per function, a memory plan over one device arena: host arguments are
//      copied into arena buffers, state reads use the device state in place,
//      reshapes alias their input, every other tensor and kernel scratch gets
//      an arena offset reused by liveness (lib/Target/Cpp/MemoryPlan.h);
//   3. per op, calls of libptrain_runtime_cuda's call table (CudaCallTable.h:
//      the model kernels, cuBLAS GEMM) on the step's one stream, under a
//      comment with the op's location, each status checked and returned;
//   4. the C ABI of --emit-cpp (host pointers in and out), so plan.json,
//      ptrain-run and the tests treat both targets alike.
// The unit is built in memory and written only when every op was emitted.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Cuda/EmitCuda.h"

#include "Cpp/CppTypes.h"
#include "Cpp/EmitHelpers.h"
#include "Cpp/MemoryPlan.h"
#include "Cpp/OpGeometry.h"
#include "Cpp/RuntimeCallTable.h"
#include "CudaCallTable.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;
using namespace mlir::ptrain::cuda;

namespace {

constexpr int64_t kAlignment = 256; ///< device buffers: cudaMalloc's alignment

int64_t alignUp(int64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

/// The static-shape f32/i64 tensor type of `type`, or an error at `op` naming `what`.
LogicalResult checkType(Operation *op, Type type, const Twine &what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitError("--emit-cuda: ") << what << " has type " << type << "; only ranked tensors are supported";
  if (!tensor.hasStaticShape())
    return op->emitError("--emit-cuda: ")
           << what << " has the dynamic shape " << type << "; only static shapes are supported";
  if (!isModelElementType(tensor.getElementType()))
    return op->emitError("--emit-cuda: ")
           << what << " has element type " << tensor.getElementType() << "; only f32 and i64 are supported";
  return success();
}

bool isF32(Value v) { return tensorOf(v).getElementType().isF32(); }
ArrayRef<int64_t> shapeOf(Value v) { return tensorOf(v).getShape(); }
const char *cType(Value v) { return elementCType(tensorOf(v).getElementType()); }

struct StateInfo {
  StateOp op;
  std::string var; ///< the host mirror
  int64_t offset;  ///< in the device block of states
};

/// Where a function's SSA value lives, always on the device.
struct Storage {
  enum Kind { Argument, State, Constant, Arena, Alias } kind = Arena;
  Value root;          ///< Alias: the value whose memory this is
  int64_t buffer = -1; ///< Arena and Argument: index into the plan
  std::string name;    ///< the local pointer variable
};

/// The module-wide storage the functions share.
struct ModuleStorage {
  llvm::DenseMap<StringAttr, StateInfo> states;
  SmallVector<StateOp> stateOrder;
  int64_t stateBytes = 0;
  std::string constants;                                       ///< host arrays of every constant
  SmallVector<std::pair<std::string, int64_t>> constantCopies; ///< (host array, device offset) and bytes below
  SmallVector<int64_t> constantBytes;
  int64_t constantBlockBytes = 0;
};

class FunctionEmitter {
public:
  FunctionEmitter(func::FuncOp func, ModuleStorage &module) : func(func), module(module) {}
  LogicalResult run(std::string &code, int64_t &arenaBytes);

private:
  LogicalResult checkOps();
  void planStorage();
  int64_t scratch(int64_t bytes);
  LogicalResult emitOp(Operation *op);
  LogicalResult emitConstant(arith::ConstantOp op);

  std::string ptr(Value v) const { return storage.lookup(v).name; }
  std::string arenaPtr(int64_t buffer, StringRef type) const {
    return "reinterpret_cast<" + type.str() + " *>(d_arena + " + std::to_string(plan[buffer].offset) + ")";
  }
  std::string scratchPtr(int64_t bytes, StringRef type) { return arenaPtr(scratch(bytes), type); }
  /// A `static const` host array in the current op's block (dims, offsets); "nullptr" when empty.
  std::string hostArray(ArrayRef<int64_t> values, StringRef name, StringRef type = "int64_t");
  LogicalResult call(CudaCall callee, ArrayRef<std::string> args);

  func::FuncOp func;
  ModuleStorage &module;
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> opIndex;
  llvm::DenseMap<Value, Storage> storage;
  std::vector<BufferInterval> plan;
  llvm::DenseMap<Operation *, SmallVector<int64_t>> scratchOf;
  Operation *current = nullptr;
  size_t nextScratch = 0;
  bool dryRun = true;
  std::string block, body;
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
  const RuntimeCallInfo &info = getCudaCallInfo(callee);
  if (args.size() != info.arity)
    return current->emitError("--emit-cuda internal error: ")
           << info.name << " takes " << info.arity << " arguments, the emitter passed " << args.size();
  block += "    PTRAIN_STEP_CALL(" + std::string(info.name) + "(";
  for (auto [i, a] : llvm::enumerate(args))
    block += (i ? ", " : "") + a;
  block += "));\n";
  return success();
}

/// The ops the CUDA target handles: the single-rank step of --ptrain-build-training-step.
LogicalResult FunctionEmitter::checkOps() {
  if (!func.getBody().hasOneBlock())
    return func.emitError("--emit-cuda: function @") << func.getSymName() << " has control flow (more than one block)";
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
    if (failed(checkType(func, type, "argument #" + Twine(i))))
      return failure();
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    if (failed(checkType(func, type, "result #" + Twine(i))))
      return failure();
  for (Operation &op : func.getBody().front()) {
    if (!isa<StateReadOp, StateWriteOp, arith::ConstantOp, EmbeddingOp, BinaryOp, UnaryOp, MatmulOp, LayerNormOp,
             SoftmaxOp, GeluOp, ReshapeOp, TransposeOp, SplitOp, CrossEntropyOp, SliceOp, ConcatOp, SumToOp, PadOp,
             LayerNormGradOp, SoftmaxGradOp, GeluGradOp, EmbeddingGradOp, CrossEntropyGradOp, AdamWOp, func::ReturnOp>(
            op))
      return op.emitError("--emit-cuda: '")
             << op.getName() << "' is not supported by the CUDA code generator (single-rank steps only: "
             << "communication, codecs and pipelines are not yet supported)";
    for (auto [i, v] : llvm::enumerate(op.getOperands()))
      if (failed(checkType(&op, v.getType(), "operand #" + Twine(i))))
        return failure();
    for (auto [i, v] : llvm::enumerate(op.getResults()))
      if (failed(checkType(&op, v.getType(), "result #" + Twine(i))))
        return failure();
    opIndex[&op] = ops.size();
    ops.push_back(&op);
  }
  return success();
}

int64_t FunctionEmitter::scratch(int64_t bytes) {
  // Called in emission order; the dry run planned the same requests.
  SmallVector<int64_t> &list = scratchOf[current];
  if (nextScratch < list.size())
    return list[nextScratch++];
  int64_t i = opIndex.lookup(current);
  plan.push_back({i, i, bytes});
  list.push_back(plan.size() - 1);
  ++nextScratch;
  return plan.size() - 1;
}

/// Where every value lives and the arena intervals (see the file comment; the rules of --emit-cpp's plan,
/// docs/CodegenCpu.md "Memory plan", with arguments copied into the arena).
void FunctionEmitter::planStorage() {
  llvm::DenseMap<Value, int64_t> lastUse;
  auto rootOf = [&](Value v) {
    while (storage.count(v) && storage[v].kind == Storage::Alias)
      v = storage[v].root;
    return v;
  };
  for (BlockArgument arg : func.getBody().front().getArguments()) {
    Storage s;
    s.kind = Storage::Argument;
    s.name = "d_arg" + std::to_string(arg.getArgNumber());
    storage[arg] = s;
    lastUse[arg] = 0;
  }
  llvm::DenseMap<StringAttr, SmallVector<int64_t>> writesOf;
  for (Operation *op : ops)
    if (auto write = dyn_cast<StateWriteOp>(op))
      writesOf[write.getStateAttr().getAttr()].push_back(opIndex[op]);
  for (Operation *op : ops) {
    int64_t i = opIndex[op];
    for (Value operand : op->getOperands()) {
      Value root = rootOf(operand);
      lastUse[root] = std::max(lastUse.lookup(root), i);
    }
    for (Value result : op->getResults()) {
      Storage s;
      s.name = "v" + std::to_string(valueCount++);
      if (isa<arith::ConstantOp>(op)) {
        s.kind = Storage::Constant;
      } else if (isa<ReshapeOp>(op)) {
        s.kind = Storage::Alias;
        s.root = op->getOperand(0);
      } else if (isa<StateReadOp>(op)) {
        s.kind = Storage::State;
      }
      storage[result] = s;
      lastUse[result] = std::max(lastUse.lookup(result), i);
    }
  }
  // A state read is used in place unless a write of that state comes before one of its (alias) uses.
  for (Operation *op : ops) {
    auto read = dyn_cast<StateReadOp>(op);
    if (!read)
      continue;
    int64_t firstWrite = INT64_MAX;
    for (int64_t w : writesOf.lookup(read.getStateAttr().getAttr()))
      if (w > opIndex[op])
        firstWrite = std::min(firstWrite, w);
    if (lastUse[read.getResult()] > firstWrite)
      storage[read.getResult()].kind = Storage::Arena;
  }
  for (BlockArgument arg : func.getBody().front().getArguments()) {
    plan.push_back({0, lastUse[arg], bytesOf(arg)});
    storage[arg].buffer = plan.size() - 1;
  }
  for (Operation *op : ops)
    for (Value result : op->getResults()) {
      Storage &s = storage[result];
      if (s.kind != Storage::Arena)
        continue;
      plan.push_back({opIndex[op], lastUse[result], bytesOf(result)});
      s.buffer = plan.size() - 1;
    }
}

LogicalResult FunctionEmitter::emitConstant(arith::ConstantOp op) {
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!attr)
    return op.emitError("--emit-cuda: only dense tensor constants are supported");
  Value result = op.getResult();
  const int64_t n = countOf(result);
  const int64_t index = module.constantCopies.size();
  const std::string name = "constant_" + std::to_string(index);
  int64_t offset = module.constantBlockBytes;
  if (!dryRun) {
    std::string values;
    for (int64_t i = 0; i < n; ++i)
      values += (i ? (i % 8 ? ", " : ",\n    ") : "") +
                (isF32(result) ? floatLiteral(attr.getValues<float>()[attr.isSplat() ? 0 : i])
                               : int64Literal(attr.getValues<int64_t>()[attr.isSplat() ? 0 : i]));
    module.constants += "// " + locationComment(op.getLoc()) + ": " + std::to_string(n) + " x " + cType(result) +
                        ", device offset " + std::to_string(offset) + "\n";
    module.constants += "alignas(64) const " + std::string(cType(result)) + " " + name + "[" +
                        std::to_string(std::max<int64_t>(n, 1)) + "] = {\n    " + values + "};\n\n";
    module.constantCopies.push_back({name, offset});
    module.constantBytes.push_back(bytesOf(result));
    module.constantBlockBytes = alignUp(offset + bytesOf(result));
  }
  body += "  const " + std::string(cType(result)) + " *" + ptr(result) + " = reinterpret_cast<const " + cType(result) +
          " *>(d_constants + " + std::to_string(offset) + "); // " + name + "\n";
  if (result.use_empty())
    body += "  (void)" + ptr(result) + ";\n";
  return success();
}

LogicalResult FunctionEmitter::emitOp(Operation *op) {
  current = op;
  nextScratch = 0;
  block.clear();
  body += "\n  // " + locationComment(op->getLoc()) + "\n  // " + op->getName().getStringRef().str() + "\n";
  for (Value result : op->getResults()) {
    const Storage &s = storage[result];
    std::string type = cType(result);
    if (s.kind == Storage::Arena)
      body += "  " + type + " *" + s.name + " = " + arenaPtr(s.buffer, type) + ";\n";
    else if (s.kind == Storage::State)
      body += "  " + type + " *" + s.name + " = reinterpret_cast<" + type + " *>(d_states + " +
              std::to_string(module.states[cast<StateReadOp>(op).getStateAttr().getAttr()].offset) + ");\n";
    else if (s.kind == Storage::Alias)
      body += "  " + type + " *" + s.name + " = const_cast<" + type + " *>(" + ptr(s.root) + ");\n";
    if (s.kind != Storage::Constant && result.use_empty())
      body += "  (void)" + s.name + ";\n";
  }
  auto n = [](Value v) { return std::to_string(countOf(v)); };
  auto bytes = [](Value v) { return std::to_string(bytesOf(v)); };
  auto statePtr = [&](StringAttr sym, Value v) {
    return "reinterpret_cast<" + std::string(cType(v)) + " *>(d_states + " + std::to_string(module.states[sym].offset) +
           ")";
  };
  auto ids32 = [&](Value ids) -> FailureOr<std::string> {
    std::string out = scratchPtr(4 * countOf(ids), "int32_t");
    if (failed(call(CudaCall::ptrain_cuda_cast_i64_i32, {ptr(ids), n(ids), out})))
      return failure();
    return out;
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
          .Case<EmbeddingOp>([&](EmbeddingOp e) -> LogicalResult {
            if (isF32(e.getIds()))
              return e.emitError("--emit-cuda: embedding ids must be i64");
            FailureOr<std::string> ids = ids32(e.getIds());
            ArrayRef<int64_t> table = shapeOf(e.getTable());
            return failed(ids) ? failure()
                               : call(CudaCall::ptrain_cuda_embedding_fwd_f32,
                                      {ptr(e.getTable()), *ids, n(e.getIds()), std::to_string(table[0]),
                                       std::to_string(table[1]), ptr(e.getResult())});
          })
          .Case<EmbeddingGradOp>([&](EmbeddingGradOp e) -> LogicalResult {
            FailureOr<std::string> ids = ids32(e.getIds());
            ArrayRef<int64_t> table = shapeOf(e.getResult());
            if (failed(ids) ||
                failed(call(CudaCall::ptrain_cuda_zero_bytes, {ptr(e.getResult()), bytes(e.getResult())})))
              return failure();
            return call(CudaCall::ptrain_cuda_embedding_bwd_f32,
                        {ptr(e.getGrad()), *ids, n(e.getIds()), std::to_string(table[0]), std::to_string(table[1]),
                         ptr(e.getResult())});
          })
          .Case<BinaryOp>([&](BinaryOp b) -> LogicalResult {
            Value lhs = b.getLhs(), rhs = b.getRhs(), out = b.getResult();
            if (!isF32(out)) {
              if (b.getKind() != BinaryKind::Add || shapeOf(lhs) != shapeOf(rhs))
                return b.emitError("--emit-cuda: i64 'ptrain.binary' supports only add of equal shapes");
              return call(CudaCall::ptrain_cuda_add_i64, {ptr(lhs), ptr(rhs), n(out), ptr(out)});
            }
            std::string ad = hostArray(shapeOf(lhs), "a_dims"), bd = hostArray(shapeOf(rhs), "b_dims"),
                        od = hostArray(shapeOf(out), "out_dims");
            return call(CudaCall::ptrain_cuda_binary_f32,
                        {binaryKindEnum(b.getKind()), ptr(lhs), std::to_string(shapeOf(lhs).size()), ad, ptr(rhs),
                         std::to_string(shapeOf(rhs).size()), bd, std::to_string(shapeOf(out).size()), od, ptr(out)});
          })
          .Case<UnaryOp>([&](UnaryOp u) {
            return call(CudaCall::ptrain_cuda_unary_f32,
                        {unaryKindEnum(u.getKind()), ptr(u.getInput()), n(u.getInput()), ptr(u.getResult())});
          })
          .Case<MatmulOp>([&](MatmulOp m) -> LogicalResult {
            FailureOr<GemmGeometry> g = gemmGeometry(m, "--emit-cuda");
            if (failed(g))
              return failure();
            return call(CudaCall::ptrain_cuda_gemm_f32,
                        {"0", "0", std::to_string(g->batch), std::to_string(g->rows), std::to_string(g->cols),
                         std::to_string(g->k), "1.0f", ptr(m.getLhs()), std::to_string(g->strideA), ptr(m.getRhs()),
                         std::to_string(g->strideB), "0.0f", ptr(m.getResult()), std::to_string(g->rows * g->cols)});
          })
          .Case<LayerNormOp>([&](LayerNormOp ln) -> LogicalResult {
            ArrayRef<int64_t> x = shapeOf(ln.getInput());
            int64_t axis = ln.getNormalizedAxis();
            int64_t rows = numElements(x.take_front(axis)), cols = numElements(x.drop_front(axis));
            std::string beta;
            if (ln.getBias()) {
              beta = ptr(ln.getBias());
            } else {
              beta = scratchPtr(4 * cols, "float");
              if (failed(call(CudaCall::ptrain_cuda_zero_bytes, {beta, std::to_string(4 * cols)})))
                return failure();
            }
            std::string mean = scratchPtr(4 * rows, "float"), rstd = scratchPtr(4 * rows, "float");
            return call(CudaCall::ptrain_cuda_layer_norm_fwd_f32,
                        {ptr(ln.getInput()), ptr(ln.getScale()), beta, std::to_string(rows), std::to_string(cols),
                         floatLiteral(ln.getEpsilonAttr().getValueAsDouble()), ptr(ln.getResult()), mean, rstd});
          })
          .Case<LayerNormGradOp>([&](LayerNormGradOp g) -> LogicalResult {
            auto [rows, cols] = rowsCols(shapeOf(g.getInput()), g.getAxisAttr().getInt());
            // Mean and rstd are recomputed by a forward into scratch (the op recomputes them by definition).
            std::string zeros = scratchPtr(4 * cols, "float"), y = scratchPtr(4 * rows * cols, "float");
            std::string mean = scratchPtr(4 * rows, "float"), rstd = scratchPtr(4 * rows, "float");
            std::string dbeta = g.getBiasGrad() ? ptr(g.getBiasGrad()) : scratchPtr(4 * cols, "float");
            if (failed(call(CudaCall::ptrain_cuda_zero_bytes, {zeros, std::to_string(4 * cols)})) ||
                failed(call(CudaCall::ptrain_cuda_layer_norm_fwd_f32,
                            {ptr(g.getInput()), ptr(g.getScale()), zeros, std::to_string(rows), std::to_string(cols),
                             floatLiteral(g.getEpsilonAttr().getValueAsDouble()), y, mean, rstd})))
              return failure();
            return call(CudaCall::ptrain_cuda_layer_norm_bwd_f32,
                        {ptr(g.getGrad()), ptr(g.getInput()), ptr(g.getScale()), mean, rstd, std::to_string(rows),
                         std::to_string(cols), ptr(g.getInputGrad()), ptr(g.getScaleGrad()), dbeta});
          })
          .Case<SoftmaxOp, SoftmaxGradOp>([&](auto s) -> LogicalResult {
            Value x = s->getOperand(0);
            int64_t rank = shapeOf(x).size(), axis = s.getAxisAttr().getInt();
            if (axis != -1 && axis != rank - 1)
              return s.emitError("--emit-cuda: softmax is supported over the last axis only, got axis ") << axis;
            int64_t cols = shapeOf(x).back(), rows = countOf(x) / std::max<int64_t>(cols, 1);
            if constexpr (std::is_same_v<decltype(s), SoftmaxOp>)
              return call(CudaCall::ptrain_cuda_softmax_fwd_f32,
                          {ptr(x), std::to_string(rows), std::to_string(cols), "0", ptr(s.getResult())});
            else
              return call(CudaCall::ptrain_cuda_softmax_bwd_f32,
                          {ptr(s.getGrad()), ptr(s.getOutput()), std::to_string(rows), std::to_string(cols),
                           ptr(s.getResult())});
          })
          .Case<GeluOp>([&](GeluOp g) {
            bool tanh = g.getApproximate() == GeluApproximation::Tanh;
            return call(tanh ? CudaCall::ptrain_cuda_gelu_tanh_fwd_f32 : CudaCall::ptrain_cuda_gelu_fwd_f32,
                        {ptr(g.getInput()), n(g.getInput()), ptr(g.getResult())});
          })
          .Case<GeluGradOp>([&](GeluGradOp g) {
            bool tanh = g.getApproximate() == GeluApproximation::Tanh;
            return call(tanh ? CudaCall::ptrain_cuda_gelu_tanh_bwd_f32 : CudaCall::ptrain_cuda_gelu_bwd_f32,
                        {ptr(g.getGrad()), ptr(g.getInput()), n(g.getInput()), ptr(g.getResult())});
          })
          .Case<TransposeOp>([&](TransposeOp t) -> LogicalResult {
            ArrayRef<int64_t> x = shapeOf(t.getInput());
            if (x.size() <= 1)
              return call(CudaCall::ptrain_cuda_copy_bytes,
                          {ptr(t.getInput()), bytes(t.getInput()), ptr(t.getResult())});
            if (!isF32(t.getInput()))
              return t.emitError("--emit-cuda: transpose supports f32 tensors of rank >= 2");
            std::string d = hostArray(x, "dims"), p = hostArray(t.getPerm(), "perm", "int32_t");
            return call(CudaCall::ptrain_cuda_permute_f32,
                        {ptr(t.getInput()), std::to_string(x.size()), d, p, ptr(t.getResult())});
          })
          .Case<SliceOp>([&](SliceOp s) {
            Value x = s.getInput();
            std::string d = hostArray(shapeOf(x), "dims"), o = hostArray(s.getOffsets(), "offsets"),
                        od = hostArray(shapeOf(s.getResult()), "out_dims");
            return call(CudaCall::ptrain_cuda_slice,
                        {ptr(x), std::to_string(elementBytes(tensorOf(x).getElementType())),
                         std::to_string(shapeOf(x).size()), d, o, od, ptr(s.getResult())});
          })
          .Case<SplitOp>([&](SplitOp s) -> LogicalResult {
            Value x = s.getInput();
            int64_t rank = shapeOf(x).size();
            std::string d = hostArray(shapeOf(x), "dims");
            SmallVector<SmallVector<int64_t>> offsets = pieceOffsets(rank, s.getAxisAttr().getInt(), s.getResults());
            for (auto [i, piece] : llvm::enumerate(s.getResults())) {
              std::string o = hostArray(offsets[i], "offsets_" + std::to_string(i)),
                          od = hostArray(shapeOf(piece), "out_dims_" + std::to_string(i));
              if (failed(call(CudaCall::ptrain_cuda_slice,
                              {ptr(x), std::to_string(elementBytes(tensorOf(x).getElementType())), std::to_string(rank),
                               d, o, od, ptr(piece)})))
                return failure();
            }
            return success();
          })
          .Case<ConcatOp>([&](ConcatOp c) -> LogicalResult {
            Value out = c.getResult();
            int64_t rank = shapeOf(out).size();
            std::string od = hostArray(shapeOf(out), "out_dims");
            SmallVector<SmallVector<int64_t>> offsets = pieceOffsets(rank, c.getAxisAttr().getInt(), c.getInputs());
            for (auto [i, in] : llvm::enumerate(c.getInputs())) {
              std::string o = hostArray(offsets[i], "offsets_" + std::to_string(i)),
                          xd = hostArray(shapeOf(in), "x_dims_" + std::to_string(i));
              if (failed(call(CudaCall::ptrain_cuda_insert_slice,
                              {ptr(in), std::to_string(elementBytes(tensorOf(in).getElementType())),
                               std::to_string(rank), xd, o, od, ptr(out)})))
                return failure();
            }
            return success();
          })
          .Case<PadOp>([&](PadOp p) -> LogicalResult {
            Value x = p.getInput(), out = p.getResult();
            std::string xd = hostArray(shapeOf(x), "x_dims"), o = hostArray(p.getLow(), "offsets"),
                        od = hostArray(shapeOf(out), "out_dims");
            if (failed(call(CudaCall::ptrain_cuda_zero_bytes, {ptr(out), bytes(out)})))
              return failure();
            return call(CudaCall::ptrain_cuda_insert_slice,
                        {ptr(x), std::to_string(elementBytes(tensorOf(x).getElementType())),
                         std::to_string(shapeOf(x).size()), xd, o, od, ptr(out)});
          })
          .Case<SumToOp>([&](SumToOp s) {
            Value x = s.getInput(), out = s.getResult();
            std::string xd = hostArray(shapeOf(x), "dims"), od = hostArray(shapeOf(out), "out_dims");
            return call(CudaCall::ptrain_cuda_sum_to_f32, {ptr(x), std::to_string(shapeOf(x).size()), xd,
                                                           std::to_string(shapeOf(out).size()), od, ptr(out)});
          })
          .Case<CrossEntropyOp, CrossEntropyGradOp>([&](auto ce) -> LogicalResult {
            Value logits = ce.getLogits(), labels = ce.getLabels();
            std::string classes = std::to_string(shapeOf(logits).back());
            FailureOr<std::string> targets = ids32(labels);
            if (failed(targets))
              return failure();
            std::string lse = scratchPtr(4 * countOf(labels), "float");
            if constexpr (std::is_same_v<decltype(ce), CrossEntropyOp>) {
              return call(CudaCall::ptrain_cuda_cross_entropy_fwd_f32,
                          {ptr(logits), *targets, n(labels), classes, ptr(ce.getLoss()), lse});
            } else {
              // The backward needs the log-sum-exp: recompute it (the loss itself goes to scratch).
              std::string loss = scratchPtr(4, "float");
              if (failed(call(CudaCall::ptrain_cuda_cross_entropy_fwd_f32,
                              {ptr(logits), *targets, n(labels), classes, loss, lse})))
                return failure();
              return call(CudaCall::ptrain_cuda_cross_entropy_bwd_f32,
                          {ptr(ce.getGrad()), ptr(logits), *targets, lse, n(labels), classes, ptr(ce.getResult())});
            }
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
          .Case<func::ReturnOp>([&](func::ReturnOp r) -> LogicalResult {
            // Each copy to the host waits for the stream; then any out-of-range id the kernels met is reported.
            for (auto [i, v] : llvm::enumerate(r.getOperands()))
              if (failed(call(CudaCall::ptrain_cuda_copy_to_host, {ptr(v), bytes(v), "out_" + std::to_string(i)})))
                return failure();
            return call(CudaCall::ptrain_cuda_check_indices, {});
          })
          .Default([&](Operation *other) {
            return other->emitError("--emit-cuda: '") << other->getName() << "' is not supported";
          });
  if (failed(result))
    return failure();
  if (!block.empty())
    body += "  {\n" + block + "  }\n";
  return success();
}

LogicalResult FunctionEmitter::run(std::string &code, int64_t &arenaBytes) {
  if (failed(checkOps()))
    return failure();
  planStorage();
  // Dry run: every op's emitter requests its scratch, planned like any buffer; its text is discarded.
  for (Operation *op : ops)
    if (failed(emitOp(op)))
      return failure();
  arenaBytes = planArena(plan, kAlignment);
  dryRun = false;
  body.clear();
  for (Operation *op : ops)
    if (failed(emitOp(op)))
      return failure();

  std::string sig = "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_" + func.getSymName().str() + "(";
  std::string doc = "/// @" + func.getSymName().str() + " (host buffers in and out):\n";
  std::string prologue = "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_" + func.getSymName().str() + "\"));\n";
  int64_t params = 0;
  for (BlockArgument arg : func.getBody().front().getArguments()) {
    std::string i = std::to_string(arg.getArgNumber()), type = cType(arg);
    sig += (params++ ? ", " : "") + std::string("const ") + type + " *arg" + i;
    std::string t;
    llvm::raw_string_ostream ts(t);
    ts << arg.getType();
    doc += "///   arg" + i + ": " + t + "\n";
    prologue += "  " + type + " *d_arg" + i + " = " + arenaPtr(storage[arg].buffer, type) + ";\n";
    prologue += "  PTRAIN_STEP_CALL(" + std::string(getCudaCallInfo(CudaCall::ptrain_cuda_copy_to_device).name) +
                "(arg" + i + ", " + std::to_string(bytesOf(arg)) + ", d_arg" + i + "));\n";
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    bool f = cast<RankedTensorType>(type).getElementType().isF32();
    sig += (params++ ? ", " : "") + std::string(f ? "float" : "int64_t") + " *out_" + std::to_string(i);
    std::string t;
    llvm::raw_string_ostream ts(t);
    ts << type;
    if (auto key = func.getResultAttrOfType<StringAttr>(i, "ptrain.grad_of"))
      t += ", the gradient of state '" + key.getValue().str() + "'";
    doc += "///   out_" + std::to_string(i) + ": " + t + "\n";
  }
  if (params == 0)
    sig += "void";
  code += doc + "/// Device arena: " + std::to_string(arenaBytes) + " bytes for " + std::to_string(plan.size()) +
          " buffers (arguments, tensors and kernel scratch) planned by liveness.\n" + sig + ") {\n" + prologue + body +
          "  return PTRAIN_OK;\n}\n\n";
  return success();
}

//===----------------------------------------------------------------------===//
// The translation unit
//===----------------------------------------------------------------------===//

LogicalResult emitModule(ModuleOp module, raw_ostream &os) {
  if (module->hasAttr("ptrain.pipeline") || module->hasAttr("ptrain.schedule"))
    return module.emitError("--emit-cuda: pipeline modules (ptrain.pipeline / ptrain.schedule) are not yet supported "
                            "by the CUDA code generator; compile them with --emit-cpp");
  ModuleStorage storage;
  for (Operation &op : module.getBody()->getOperations()) {
    if (isa<GridOp>(op))
      return op.emitError("--emit-cuda: 'ptrain.grid' (a multi-rank step) is not yet supported by the CUDA code "
                          "generator: it compiles single-rank steps");
    if (!isa<func::FuncOp, StateOp>(op))
      return op.emitError("--emit-cuda: '") << op.getName() << "' at module level is not supported";
  }
  for (auto state : module.getOps<StateOp>()) {
    if (failed(checkType(state, state.getType(), "the state")))
      return failure();
    StateInfo info{state, "state_" + std::to_string(storage.stateOrder.size()) + "_" + identifierFrom(state.getKey()),
                   storage.stateBytes};
    storage.stateBytes = alignUp(storage.stateBytes + numElements(state.getTensorType().getShape()) *
                                                          elementBytes(state.getTensorType().getElementType()));
    storage.states[state.getSymNameAttr()] = info;
    storage.stateOrder.push_back(state);
  }
  std::string functions;
  int64_t arenaBytes = 0;
  SmallVector<std::string> entryNames;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      return func.emitError("--emit-cuda: function @") << func.getSymName() << " has no body";
    int64_t bytes = 0;
    if (failed(FunctionEmitter(func, storage).run(functions, bytes)))
      return failure();
    arenaBytes = std::max(arenaBytes, bytes);
    entryNames.push_back("ptrain_step_" + func.getSymName().str());
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
       "// A compiled single-rank ptrain training step for one CUDA device (docs/CodegenCuda.md): every state,\n"
       "// constant and intermediate tensor lives in device memory (three cudaMalloc blocks, at ptrain_step_init);\n"
       "// every op runs on one CUDA stream through libptrain_runtime_cuda (include/ptrain/Runtime/\n"
       "// RuntimeCallsCuda.def; matmuls through cuBLAS). Arguments and results are host buffers. Every call's\n"
       "// status is checked and returned; the cause is in ptrain_step_last_error(). Not reentrant.\n"
       "//\n"
       "// Entry points: ";
  llvm::interleave(entryNames, s, ", ");
  s << "\n\n"
       "#include \"ptrain/Runtime/ptrain_runtime.h\"\n"
       "#include \"ptrain/Runtime/ptrain_runtime_cuda.h\"\n\n"
       "#include <cstdarg>\n"
       "#include <cstdint>\n"
       "#include <cstdio>\n\n"
       "#define PTRAIN_STEP_API __attribute__((visibility(\"default\")))\n"
       "#define PTRAIN_STEP_CALL(call)                                                 \\\n"
       "  do {                                                                         \\\n"
       "    const ptrain_status_t ptrain_status_ = (call);                             \\\n"
       "    if (ptrain_status_ != PTRAIN_OK) {                                         \\\n"
       "      step_error_own = false;                                                  \\\n"
       "      return ptrain_status_;                                                   \\\n"
       "    }                                                                          \\\n"
       "  } while (0)\n\n"
       "namespace {\n\n"
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
      << stringifyStateKind(state.getKind()) << " : " << type << ", device offset " << info.offset << "\n";
    s << "alignas(64) " << elementCType(type.getElementType()) << " " << info.var << "["
      << std::max<int64_t>(numElements(type.getShape()), 1) << "];\n";
    if (type.getRank() > 0)
      s << "const int64_t " << info.var << "_dims[" << type.getRank() << "] = {" << joinInts(type.getShape()) << "};\n";
  }
  s << "\nconst ptrain_state_desc_t kStates[] = {\n";
  for (StateOp state : storage.stateOrder) {
    s << "    " << stateDescriptor(state, storage.states[state.getSymNameAttr()].var) << ",\n";
  }
  if (storage.stateOrder.empty())
    s << "    {nullptr, nullptr, PTRAIN_DTYPE_F32, 0, 0, nullptr, PTRAIN_STATE_INIT_NONE, 0},\n";
  s << "};\nconstexpr int64_t kNumStates = " << storage.stateOrder.size() << ";\n";
  s << "/// Device offset of each state in d_states, in table order.\nconst int64_t kStateOffsets[] = {";
  for (auto [i, state] : llvm::enumerate(storage.stateOrder))
    s << (i ? (i % 8 ? ", " : ",\n    ") : "\n    ") << storage.states[state.getSymNameAttr()].offset;
  s << (storage.stateOrder.empty() ? "0" : "") << "};\n\n";
  s << "//===--- Constants: host arrays, copied once into the device block d_constants ---===//\n\n"
    << storage.constants;
  s << "//===--- Device memory and the stream (ptrain_step_init) ---===//\n\n";
  s << "constexpr int64_t kStateBytes = " << std::max<int64_t>(storage.stateBytes, kAlignment) << ";\n";
  s << "constexpr int64_t kConstantBytes = " << std::max<int64_t>(storage.constantBlockBytes, kAlignment) << ";\n";
  s << "constexpr int64_t kArenaBytes = " << std::max<int64_t>(arenaBytes, kAlignment)
    << "; ///< every intermediate tensor and kernel scratch, offsets planned by liveness\n";
  s << "unsigned char *d_states = nullptr;\nunsigned char *d_constants = nullptr;\nunsigned char *d_arena = nullptr;\n"
       "void *stream = nullptr;\n\n";
  s << "/// Every state's host mirror into device memory.\nptrain_status_t pushStates() {\n"
       "  for (int64_t i = 0; i < kNumStates; ++i) {\n"
       "    int64_t bytes = kStates[i].dtype == PTRAIN_DTYPE_I64 ? 8 : 4;\n"
       "    for (int32_t d = 0; d < kStates[i].rank; ++d)\n      bytes *= kStates[i].dims[d];\n"
       "    PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_cuda_copy_to_device)
    << "(kStates[i].data, bytes, d_states + kStateOffsets[i]));\n"
       "  }\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Every state's device memory into its host mirror (waits for the stream).\nptrain_status_t pullStates() {\n"
       "  for (int64_t i = 0; i < kNumStates; ++i) {\n"
       "    int64_t bytes = kStates[i].dtype == PTRAIN_DTYPE_I64 ? 8 : 4;\n"
       "    for (int32_t d = 0; d < kStates[i].rank; ++d)\n      bytes *= kStates[i].dims[d];\n"
       "    PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_cuda_copy_to_host)
    << "(d_states + kStateOffsets[i], bytes, kStates[i].data));\n"
       "  }\n  return PTRAIN_OK;\n}\n\n";
  s << "/// The device, the three blocks, the stream and the constants, once. Without a driver or a device: a\n"
       "/// DEVICE error naming cudaGetDeviceCount's error (cudaErrorInsufficientDriver, cudaErrorNoDevice).\n"
       "ptrain_status_t setUpDevice() {\n"
       "  if (d_arena)\n    return PTRAIN_OK;\n"
       "  int32_t devices = 0;\n"
       "  PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_cuda_device_count)
    << "(&devices));\n"
       "  if (devices < 1) {\n"
       "    stepError(\"ptrain_step_init: no CUDA device (cudaGetDeviceCount = 0): this step was compiled with "
       "--target cuda\");\n"
       "    return PTRAIN_ERROR_DEVICE;\n"
       "  }\n"
       "  void *p = nullptr;\n";
  s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_stream_create) << "(&stream));\n";
  s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_set_stream) << "(stream));\n";
  for (StringRef block : {"d_states", "d_constants"}) {
    s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_malloc) << "("
      << (block == "d_states" ? "kStateBytes" : "kConstantBytes") << ", &p));\n";
    s << "  " << block << " = static_cast<unsigned char *>(p);\n";
  }
  for (auto [i, copy] : llvm::enumerate(storage.constantCopies))
    s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_copy_to_device) << "(" << copy.first << ", "
      << storage.constantBytes[i] << ", d_constants + " << copy.second << "));\n";
  s << "  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_malloc) << "(kArenaBytes, &p));\n"
    << "  d_arena = static_cast<unsigned char *>(p); // set last: the step is ready\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Every entry point's first call: the device is set up and this thread runs on the step's stream.\n"
       "ptrain_status_t enterStep(const char *name) {\n"
       "  if (!d_arena)\n    return stepError(\"%s: call ptrain_step_init first\", name);\n"
       "  PTRAIN_STEP_CALL("
    << cudaCall(CudaCall::ptrain_cuda_set_stream) << "(stream));\n  return PTRAIN_OK;\n}\n\n";
  s << "} // namespace\n\n//===--- State management ---===//\n\n";
  s << "/// The message of the last failed entry point: the step's own or the runtime's (ptrain_last_error()).\n"
       "extern \"C\" PTRAIN_STEP_API const char *ptrain_step_last_error(void) {\n"
       "  return step_error_own ? step_error : ptrain_last_error();\n}\n\n";
  s << "/// Sets up the device, loads every parameter by key from the ONNX model at `weights_onnx_path` (NULL: "
    << (onnxFile.empty() ? std::string("none recorded") : onnxFile)
    << ")\n/// into the host mirrors, zeroes every other state, and copies them to the device.\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_init(const char *weights_onnx_path) {\n"
       "  const char *path = weights_onnx_path ? weights_onnx_path : "
    << (onnxFile.empty() ? std::string("nullptr") : stringLiteral(onnxFile))
    << ";\n  PTRAIN_STEP_CALL(setUpDevice());\n  PTRAIN_STEP_CALL(" << cudaCall(CudaCall::ptrain_cuda_set_stream)
    << "(stream));\n"
    << "  PTRAIN_STEP_CALL(" << cpuCall(RuntimeCall::ptrain_state_init_onnx)
    << "(kStates, kNumStates, path));\n  PTRAIN_STEP_CALL(pushStates());\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Copies every state to the host and writes it by key to a checkpoint (docs/CodegenCpu.md's format).\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_save(const char *path) {\n"
       "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_save\"));\n  PTRAIN_STEP_CALL(pullStates());\n"
       "  PTRAIN_STEP_CALL("
    << cpuCall(RuntimeCall::ptrain_checkpoint_save) << "(kStates, kNumStates, path));\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Reads every state from a checkpoint (nothing changes on error) and copies it to the device.\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_load(const char *path) {\n"
       "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_load\"));\n"
       "  PTRAIN_STEP_CALL("
    << cpuCall(RuntimeCall::ptrain_checkpoint_load)
    << "(kStates, kNumStates, path));\n  PTRAIN_STEP_CALL(pushStates());\n  return PTRAIN_OK;\n}\n\n";
  s << "/// The state table over the host mirrors; ptrain_step_pull_states() refreshes them from the device and\n"
       "/// ptrain_step_push_states() copies edits back.\n"
       "extern \"C\" PTRAIN_STEP_API int64_t ptrain_step_num_states(void) { return kNumStates; }\n"
       "extern \"C\" PTRAIN_STEP_API const ptrain_state_desc_t *ptrain_step_states(void) { return kStates; }\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_pull_states(void) {\n"
       "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_pull_states\"));\n  return pullStates();\n}\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_push_states(void) {\n"
       "  PTRAIN_STEP_CALL(enterStep(\"ptrain_step_push_states\"));\n  return pushStates();\n}\n\n";
  s << "//===--- Entry points ---===//\n\n" << functions;
  os << out;
  return success();
}

} // namespace

LogicalResult mlir::ptrain::emitCuda(ModuleOp module, raw_ostream &os) { return emitModule(module, os); }

void mlir::ptrain::registerEmitCudaTranslation() {
  TranslateFromMLIRRegistration reg(
      "emit-cuda", "emit a single-rank ptrain training step as CUDA calling libptrain_runtime_cuda (GPU target)",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("--emit-cuda: expected a builtin.module");
        return emitCuda(module, os);
      },
      [](DialectRegistry &registry) { registry.insert<PTrainDialect, func::FuncDialect, arith::ArithDialect>(); });
}
