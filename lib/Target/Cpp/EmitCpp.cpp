//===- EmitCpp.cpp - The CPU code generator (--emit-cpp) ------------------===//
//
// One C++17 translation unit per module (docs/CodegenCpu.md):
//   1. static storage for every ptrain.state and the keyed state table;
//   2. per function, a memory plan: arguments and state reads are used in
//      place, reshapes alias their input, constants are static arrays, and
//      every other tensor (and every kernel's scratch) gets an offset in one
//      static arena, reused by liveness (MemoryPlan.h);
//   3. per op, calls of the runtime's call table (RuntimeCallTable.h) whose
//      status is checked and returned, under a comment with the op's location
//      (codec ops: EmitCodecs.h);
//   4. the C ABI: ptrain_step_<func>, ptrain_step_init/save/load, the state
//      table accessors and, with communicators, the traffic per link
//      (EmitTraffic.h).
//   5. the ops' chunks of every function go through the block outliner
//      (include/ptrain/Target/Common/BlockOutliner.h): identical layers are
//      written once as functions, called with a row of what differs.
// The unit is built in memory and written only when every op was emitted.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Cpp/EmitCpp.h"

#include "AdamWTable.h"
#include "CommGroups.h"
#include "ConstantForm.h"
#include "CppTypes.h"
#include "EmitCodecs.h"
#include "EmitCollectives.h"
#include "EmitHelpers.h"
#include "EmitModelOps.h"
#include "EmitOptimizer.h"
#include "EmitTelemetry.h"
#include "EmitTraffic.h"
#include "EmitVocabParallel.h"
#include "MemoryPlan.h"
#include "OpGeometry.h"
#include "PipelineDriver.h"
#include "RuntimeCallTable.h"
#include "StateStorage.h"

#include "ptrain/Analysis/GemmFusion.h"
#include "ptrain/Target/Common/BlockOutliner.h"
#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "ptrain/Analysis/MemoryPlan.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <type_traits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

namespace {

constexpr int64_t kArenaAlignment = 64;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// The static-shape f32/i64 tensor type of `value` (with `codes`, also the codecs' i32, i8, f16 and bf16), or an
/// error at `op`.
/// With `masks`, also i1 (a value inside a function, never a state, argument or result).
FailureOr<RankedTensorType> supportedType(Operation *op, Type type, const Twine &what, bool codes = false,
                                          bool masks = false) {
  if (auto request = dyn_cast<RequestType>(type)) {
    if (!request.getValueType())
      return RankedTensorType(); // a send's request: no buffer of its own
    type = request.getValueType();
  }
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor) {
    op->emitError("--emit-cpp: ") << what << " has type " << type << "; only ranked tensors are supported";
    return failure();
  }
  if (!tensor.hasStaticShape()) {
    op->emitError("--emit-cpp: ") << what << " has the dynamic shape " << type
                                  << "; only static shapes are supported";
    return failure();
  }
  Type elem = tensor.getElementType();
  if (!isModelElementType(elem) && !(codes && isCodeElementType(elem)) && !(masks && isMaskElementType(elem))) {
    op->emitError("--emit-cpp: ") << what << " has element type " << elem
                                  << (codes ? "; only f32, i64 and the codec codes' i32, i8, f16 and bf16 are supported"
                                      : masks ? "; only f32, i64 and i1 (masks) are supported"
                                              : "; only f32 and i64 are supported");
    return failure();
  }
  return tensor;
}

bool isF32(Value v) { return tensorOf(v).getElementType().isF32(); }
const char *cType(Value v) { return elementCType(tensorOf(v).getElementType()); }
int64_t elemBytes(Value v) { return elementBytes(tensorOf(v).getElementType()); }

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

struct StateInfo {
  StateOp op;
  int64_t index;   ///< position in the state table
  std::string var; ///< the pointer to its heap block (allocated by ptrain_step_init)
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

/// Where a function's SSA value lives.
struct Storage {
  /// Constant: a literal array (at most kLiteralElements) or a FileConstant; Virtual: a splat only written to
  /// states, which their writes fill, with no memory of its own.
  enum Kind { Argument, State, Constant, Arena, Alias, Virtual } kind = Arena;
  Value root;             ///< Alias: the value whose memory this is
  int64_t buffer = -1;    ///< Arena: index into the plan
  bool isConst = false;   ///< argument or constant: read-only memory
  std::string name;       ///< the local pointer variable
};

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

LogicalResult CppEmitter::collectStates() {
  for (auto state : module.getOps<StateOp>()) {
    FailureOr<RankedTensorType> type = supportedType(state, state.getType(), "the state");
    if (failed(type))
      return failure();
    StateInfo info{state, static_cast<int64_t>(stateOrder.size()),
                   "state_" + std::to_string(stateOrder.size()) + "_" + identifierFrom(state.getKey())};
    states[state.getSymNameAttr()] = info;
    stateOrder.push_back(state);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// One function
//===----------------------------------------------------------------------===//

/// Emits one function: plans its memory, then writes its body op by op.
class FunctionEmitter final : public CallWriter {
public:
  FunctionEmitter(func::FuncOp func, llvm::DenseMap<StringAttr, StateInfo> &states, CommGroups &comms,
                  const CodecSites &sites, std::string &constants, int64_t &numConstants, ConstantFile &file,
                  llvm::StringMap<std::string> &globals, std::string arena)
      : func(func), states(states), comms(comms), sites(sites), constants(constants), numConstants(numConstants),
        file(file), globals(globals), arena(std::move(arena)) {}

  /// Plans the function's storage and emits its chunks (nothing for a function that runs on no rank);
  /// `arenaBytes` is its arena's size.
  LogicalResult prepare(int64_t &arenaBytes);
  /// The emitted chunks and the types of the pointers in scope, for the block outliner (BlockOutliner.h).
  target::EmittedFunction takeChunks() {
    return {std::move(chunks), std::move(types)};
  }
  /// Appends the documented entry point to `code` with `body` (its chunks, repeated blocks replaced by calls;
  /// only its refusal when it runs on no rank).
  LogicalResult writeFunction(std::string &code, const std::string &body);
  /// The entry point's declaration (set by writeFunction): the repeated blocks, written before the entry points,
  /// may call it (a pipeline step's calls of its stage functions).
  const std::string &getDeclaration() const { return declaration; }

private:
  /// Plans the function's storage and writes its body; `arenaBytes` is its arena's size.
  LogicalResult planAndEmitBody(int64_t &arenaBytes);
  LogicalResult checkOps();
  LogicalResult deferCompressedStateWrites();
  void planStorage();
  int64_t scratch(int64_t bytes);
  LogicalResult emitOp(Operation *op);
  /// Appends `chunk`, its declarations preceded by those of the pending state reads it names.
  void pushChunk(target::EmittedChunk chunk);
  LogicalResult emitConstant(arith::ConstantOp op);
  /// Writes the generated constant `v` (a large splat, causal mask or iota) into `out` (its arena buffer, or
  /// the state a Virtual splat is written to).
  LogicalResult generateConstant(Value v, const std::string &out);

  // Helpers writing into `body`.
  std::string ptr(Value v) const override { return storage.lookup(v).name; }
  void line(const std::string &code) override { block += "    " + code + "\n"; }
  std::string scratchPtr(int64_t buffer, StringRef type) const {
    return "reinterpret_cast<" + type.str() + " *>(" + arena + " + " + std::to_string(plan[buffer].offset) + ")";
  }
  /// A `static const int64_t` array declared in the current op's block; its name, or "nullptr" when empty.
  std::string dims(ArrayRef<int64_t> values, StringRef name);
  std::string perm32(ArrayRef<int64_t> values, StringRef name);
  /// One runtime call, its status checked; fails (an emitter bug) on a parameter-count mismatch.
  LogicalResult call(RuntimeCall callee, ArrayRef<std::string> args) override;
  /// A send or receive on the pipeline axis: the peer is this function's stage (ptrain.stage) + offset.
  LogicalResult pointToPoint(Operation *op, RuntimeCall callee, Value buffer, Value request, StringRef grid,
                             StringRef axis, int64_t offset);

  func::FuncOp func;
  llvm::DenseMap<StringAttr, StateInfo> &states;
  CommGroups &comms;
  const CodecSites &sites;
  std::string &constants;
  int64_t &numConstants;
  ConstantFile &file;
  llvm::StringMap<std::string> &globals; ///< the type of each namespace-scope constant (BlockOutliner.h)
  std::string arena; ///< the C array this function's buffers live in
  /// The form of every constant (ConstantForm.h), and the op index where a generated one is first used: its
  /// arena buffer is live from there and filled just before that op.
  llvm::DenseMap<Value, ConstantForm> forms;
  llvm::DenseMap<Value, int64_t> firstUse;
  int64_t fillCount = 0; ///< names of the fill values in the current pass

  SmallVector<Operation *> ops;
  std::optional<GemmFusion> gemms; ///< transposes and batch sums read by GEMMs (GemmFusion.h)
  llvm::DenseMap<Operation *, int64_t> opIndex;
  llvm::DenseMap<Value, Storage> storage;
  std::vector<BufferInterval> plan;
  /// Scratch buffers per op, in the order the op's emitter asks for them.
  llvm::DenseMap<Operation *, SmallVector<int64_t>> scratchOf;
  SmallVector<int64_t> scratchPlanned; ///< sizes requested while planning
  /// State writes of a compressed all-reduce's new state: the runtime completes the state at the request's
  /// wait, so the copy into the state's storage is emitted after that wait instead of at the write.
  llvm::DenseMap<Operation *, SmallVector<StateWriteOp>> writesAfterWait;
  llvm::DenseSet<Operation *> deferredWrites;
  /// Runs of AdamW updates emitted as a table and a loop (AdamWTable.h), and the run of each of their ops.
  std::vector<AdamWRun> adamRuns;
  llvm::DenseMap<Operation *, const AdamWRun *> adamRunOf;
  Operation *current = nullptr;
  size_t nextScratch = 0;
  std::string block;     ///< the current op's declarations and calls
  std::optional<target::ChunkDecl> constantDecl; ///< a constant's pointer, declared at function scope
  std::vector<target::EmittedChunk> chunks; ///< one per op (BlockOutliner.h)
  std::vector<target::ChunkDecl> pendingReads; ///< state reads used in place, not yet named by a chunk
  llvm::StringMap<std::string> types;       ///< the C type of every pointer declared at function scope
  int64_t valueCount = 0;
  int64_t arenaBytes = 0;
  bool runsNowhere = false;
  std::string declaration;
};

std::string FunctionEmitter::dims(ArrayRef<int64_t> values, StringRef name) {
  if (values.empty())
    return "nullptr";
  block += "    static const int64_t " + name.str() + "[" + std::to_string(values.size()) + "] = {" +
           joinInts(values) + "};\n";
  return name.str();
}

std::string FunctionEmitter::perm32(ArrayRef<int64_t> values, StringRef name) {
  block += "    static const int32_t " + name.str() + "[" + std::to_string(values.size()) + "] = {" +
           joinInts(values) + "};\n";
  return name.str();
}

LogicalResult FunctionEmitter::pointToPoint(Operation *op, RuntimeCall callee, Value buffer, Value request,
                                           StringRef grid, StringRef axis, int64_t offset) {
  auto stage = func->getAttrOfType<IntegerAttr>("ptrain.stage");
  if (!stage)
    return op->emitError("--emit-cpp: a send or receive needs its function's ptrain.stage (the pp coordinate)");
  if (axis != "pp")
    return op->emitError("--emit-cpp: point-to-point transfers are supported on the axis pp only");
  FailureOr<std::string> comm =
      comms.lookup(op, grid, ArrayAttr::get(op->getContext(), {StringAttr::get(op->getContext(), axis)}));
  if (failed(comm))
    return failure();
  auto tag = op->getAttrOfType<IntegerAttr>("ptrain.tag");
  return call(callee, {*comm, ptr(buffer), std::to_string(bytesOf(buffer)), std::to_string(stage.getInt() + offset),
                       std::to_string(tag ? tag.getInt() : 0), "&" + ptr(request) + "_request"});
}

LogicalResult FunctionEmitter::call(RuntimeCall callee, ArrayRef<std::string> args) {
  const RuntimeCallInfo &info = getRuntimeCallInfo(callee);
  if (args.size() != info.arity)
    return current->emitError("--emit-cpp internal error: ")
           << info.name << " takes " << info.arity << " arguments, the emitter passed " << args.size();
  block += "    PTRAIN_STEP_CALL(" + std::string(info.name) + "(";
  for (auto [i, a] : llvm::enumerate(args))
    block += (i ? ", " : "") + a;
  block += "));\n";
  return success();
}

/// The ops the emitter handles and the types it accepts.
LogicalResult FunctionEmitter::checkOps() {
  if (!func.getBody().hasOneBlock())
    return mlir::emitError(func.getLoc(), "--emit-cpp: function @")
           << func.getSymName() << " has control flow (more than one block)";
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
    if (failed(supportedType(func, type, "argument #" + Twine(i))))
      return failure();
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    if (failed(supportedType(func, type, "result #" + Twine(i))))
      return failure();
  for (Operation &op : func.getBody().front()) {
    if (!isa<StateReadOp, StateWriteOp, arith::ConstantOp, EmbeddingOp, BinaryOp, UnaryOp, MatmulOp, LayerNormOp,
             SoftmaxOp, GeluOp, ReshapeOp, TransposeOp, SplitOp, CrossEntropyOp, SliceOp, ConcatOp, SumToOp, PadOp,
             LayerNormGradOp, SoftmaxGradOp, GeluGradOp, EmbeddingGradOp, CrossEntropyGradOp, AdamWOp, AllReduceStartOp,
             SendStartOp, RecvStartOp, WaitOp, CompressOp, DecompressOp, CompressedAllReduceStartOp, TPCopyOp,
             TPAllReduceOp, CompareOp, SelectOp, BroadcastToOp, ReduceOp, RmsNormOp, RotaryEmbeddingOp, DropoutOp,
             func::CallOp, func::ReturnOp>(op) &&
        !isa<SumSquaresOp, ClipScaleOp, SGDOp, CastOp, GatherOp, LogSoftmaxOp, TPAllGatherOp, VocabParallelEmbeddingOp,
             VocabParallelEmbeddingGradOp, VocabParallelCrossEntropyPartsOp, VocabParallelCrossEntropyPartsGradOp,
             TPSplitOp>(op))
      return op.emitError("--emit-cpp: '") << op.getName() << "' is not supported by the CPU code generator";
    if (isa<CompressOp, DecompressOp, CompressedAllReduceStartOp>(op) && failed(checkCodecOp(&op)))
      return failure();
    // Codes (and the transfers and waits that carry them) may have the codecs' element types.
    const bool codes = isa<CompressOp, DecompressOp, SendStartOp, RecvStartOp, WaitOp>(op);
    for (auto [i, v] : llvm::enumerate(op.getOperands()))
      if (failed(supportedType(&op, v.getType(), "operand #" + Twine(i), codes, /*masks=*/true)))
        return failure();
    for (auto [i, v] : llvm::enumerate(op.getResults()))
      if (failed(supportedType(&op, v.getType(), "result #" + Twine(i), codes, /*masks=*/true)))
        return failure();
    opIndex[&op] = ops.size();
    ops.push_back(&op);
  }
  return deferCompressedStateWrites();
}

/// A compressed all-reduce's new codec state is final only when its request completes (the runtime runs the
/// phases in ptrain_wait), while the IR writes it to its state symbol right after the start: the write moves
/// after the request's wait. Anything that would see the difference is an error.
LogicalResult FunctionEmitter::deferCompressedStateWrites() {
  for (Operation *op : ops) {
    auto start = dyn_cast<CompressedAllReduceStartOp>(op);
    if (!start || start.getNewState().empty())
      continue;
    Value request = start.getRequest();
    if (!request.hasOneUse() || !isa<WaitOp>(*request.getUsers().begin()))
      return start.emitError("--emit-cpp: a compressed all-reduce with codec state needs exactly one ptrain.wait "
                             "of its request in the same function");
    Operation *wait = *request.getUsers().begin();
    llvm::DenseSet<StringAttr> symbols;
    for (Value v : start.getNewState())
      for (Operation *user : v.getUsers()) {
        auto write = dyn_cast<StateWriteOp>(user);
        if (!write)
          return start.emitError("--emit-cpp: the new codec state of a compressed all-reduce is complete only at "
                                 "its wait; it may only be written to a state (ptrain.state_write), not used by '")
                 << user->getName() << "'";
        writesAfterWait[wait].push_back(write);
        deferredWrites.insert(write);
        symbols.insert(write.getStateAttr().getAttr());
      }
    for (int64_t i = opIndex[start] + 1; i < opIndex[wait]; ++i) {
      StringAttr sym;
      if (auto read = dyn_cast<StateReadOp>(ops[i]))
        sym = read.getStateAttr().getAttr();
      else if (auto write = dyn_cast<StateWriteOp>(ops[i]); write && !deferredWrites.contains(write))
        sym = write.getStateAttr().getAttr();
      if (sym && symbols.contains(sym))
        return ops[i]->emitError("--emit-cpp: the state @")
               << sym.getValue() << " is accessed while the compressed all-reduce that updates it is in flight";
    }
  }
  return success();
}

int64_t FunctionEmitter::scratch(int64_t bytes) {
  // Called in emission order; the sizes were planned by the same code path in planning mode.
  SmallVector<int64_t> &list = scratchOf[current];
  if (nextScratch < list.size())
    return list[nextScratch++];
  int64_t i = current ? opIndex.lookup(current) : 0;
  plan.push_back({i, i, bytes});
  list.push_back(plan.size() - 1);
  ++nextScratch;
  return plan.size() - 1;
}

/// Decides where every value lives (see the file comment) and the arena intervals of the Arena values.
void FunctionEmitter::planStorage() {
  Block &entry = func.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    Storage s;
    s.kind = Storage::Argument;
    s.isConst = true;
    s.name = "arg" + std::to_string(arg.getArgNumber());
    storage[arg] = s;
  }
  // The first write of each state after a given op index.
  llvm::DenseMap<StringAttr, SmallVector<int64_t>> writesOf;
  for (Operation *op : ops)
    if (auto write = dyn_cast<StateWriteOp>(op))
      writesOf[write.getStateAttr().getAttr()].push_back(opIndex[op]);

  // Values sharing memory with a root (reshape aliases) extend the root's liveness.
  llvm::DenseMap<Value, int64_t> lastUse;
  auto rootOf = [&](Value v) {
    while (storage.count(v) && storage[v].kind == Storage::Alias)
      v = storage[v].root;
    return v;
  };
  for (Operation *op : ops) {
    int64_t i = opIndex[op];
    for (Value operand : llvm::concat<Value>(op->getOperands(), gemms->extraReads(op))) {
      Value root = rootOf(operand);
      lastUse[root] = std::max(lastUse.lookup(root), i);
    }
    for (Value result : op->getResults()) {
      Storage s;
      s.name = "v" + std::to_string(valueCount++);
      if (auto c = dyn_cast<arith::ConstantOp>(op)) {
        s.kind = Storage::Constant;
        s.isConst = true;
        if (auto attr = dyn_cast<DenseElementsAttr>(c.getValue())) {
          ConstantForm form = classifyConstant(attr);
          forms[result] = form;
          if (form.kind != ConstantForm::Literal && form.kind != ConstantForm::File) {
            // Generated into an arena buffer at its first use, or, a splat only written to states, by the
            // writes themselves (a memset of the gradient accumulators).
            s.kind = Storage::Arena;
            s.isConst = false;
            int64_t first = INT64_MAX;
            bool onlyWrites = form.kind == ConstantForm::Splat && !result.use_empty();
            for (Operation *user : result.getUsers()) {
              first = std::min(first, opIndex.lookup(user));
              onlyWrites = onlyWrites && isa<StateWriteOp>(user) && !deferredWrites.contains(user);
            }
            if (onlyWrites)
              s.kind = Storage::Virtual;
            // One constant several ops read (a causal mask every layer's attention reads) is generated where
            // it is defined: generated inside its first user's chunk it would make that layer differ from the
            // others (BlockOutliner.h).
            llvm::SmallPtrSet<Operation *, 4> users(result.getUsers().begin(), result.getUsers().end());
            firstUse[result] = result.use_empty() || (users.size() > 1 && s.kind == Storage::Arena)
                                   ? opIndex[op]
                                   : first;
          }
        }
      } else if (isa<ReshapeOp, TPCopyOp>(op) || gemms->aliasOf(op)) {
        // A reshape, Megatron's f (identity forward, EmitCollectives.h), a transpose its input's GEMM wrote and
        // a bias add its product's GEMM did (GemmFusion.h): an alias of the input.
        s.kind = Storage::Alias;
        s.root = gemms->aliasOf(op) ? gemms->aliasOf(op) : op->getOperand(0);
        s.isConst = storage[rootOf(s.root)].isConst;
      } else if (isa<StateReadOp>(op)) {
        s.kind = Storage::State; // may be demoted to Arena below
      } else if (auto send = dyn_cast<SendStartOp>(op)) {
        // The request holds the sent buffer until its wait.
        s.kind = Storage::Alias;
        s.root = send.getInput();
      } else if (auto wait = dyn_cast<WaitOp>(op)) {
        // The wait yields the buffer its start op reduced into.
        s.kind = Storage::Alias;
        s.root = wait.getRequest();
      }
      storage[result] = s;
      lastUse[result] = std::max(lastUse.lookup(result), i);
    }
  }
  // A collective reads its input until its wait (MPI holds the buffer; a compressed all-reduce without error
  // feedback reads it again in its second phase), and a compressed all-reduce's new states are written back
  // after its wait (deferCompressedStateWrites).
  for (Operation *op : ops) {
    auto wait = dyn_cast<WaitOp>(op);
    if (!wait)
      continue;
    int64_t i = opIndex[op];
    for (Value v : valuesHeldUntilWait(wait)) {
      Value root = rootOf(v);
      lastUse[root] = std::max(lastUse.lookup(root), i);
    }
  }
  // A state read is used in place unless a write of that state comes before one of its (alias) uses.
  for (Operation *op : ops) {
    auto read = dyn_cast<StateReadOp>(op);
    if (!read)
      continue;
    int64_t i = opIndex[op];
    int64_t firstWrite = INT64_MAX;
    for (int64_t w : writesOf.lookup(read.getStateAttr().getAttr()))
      if (w > i)
        firstWrite = std::min(firstWrite, w);
    // Writes before the read do not matter: it reads the storage after them.
    if (lastUse[read.getResult()] > firstWrite)
      storage[read.getResult()].kind = Storage::Arena;
  }
  for (Operation *op : ops)
    for (Value result : op->getResults()) {
      Storage &s = storage[result];
      if (s.kind != Storage::Arena || gemms->isFolded(op) || gemms->isDead(op) || adamRunOf.count(op))
        continue;
      int64_t first = firstUse.count(result) ? firstUse[result] : opIndex[op];
      plan.push_back({first, std::max(first, lastUse[result]), bytesOf(result)});
      s.buffer = plan.size() - 1;
    }
}

LogicalResult FunctionEmitter::emitConstant(arith::ConstantOp op) {
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!attr)
    return op.emitError("--emit-cpp: only dense tensor constants are supported");
  Value result = op.getResult();
  const ConstantForm &form = forms[result];
  if (form.kind != ConstantForm::Literal && form.kind != ConstantForm::File) {
    // Generated at its first use (generateConstant), here when that is its definition (several users).
    if (auto it = firstUse.find(result); it != firstUse.end() && it->second == opIndex[op] &&
                                          storage[result].kind == Storage::Arena && !result.use_empty())
      return generateConstant(result, ptr(result));
    return success();
  }
  const std::string name = "constant_" + std::to_string(numConstants++);
  const int64_t n = countOf(result);
  Type elem = tensorOf(result).getElementType();
  std::string loc;
  llvm::raw_string_ostream locOs(loc);
  formatLoc(op.getLoc(), locOs);
  constants += "// " + commentSafe(loc) + ": " + std::to_string(n) + " x " + cType(result) + "\n";
  if (form.kind == ConstantForm::File) {
    // Read at init from the constant file (ptrain_step_init); 64-byte offsets, as the arena's.
    int64_t offset = (static_cast<int64_t>(file.bytes.size()) + kArenaAlignment - 1) / kArenaAlignment *
                     kArenaAlignment;
    file.bytes.resize(offset, '\0');
    file.bytes += constantBytes(attr);
    std::optional<int64_t> stage;
    if (auto s = func->getAttrOfType<IntegerAttr>("ptrain.stage"))
      stage = s.getInt();
    file.constants.push_back({name, cType(result), offset, bytesOf(result), stage, op.getLoc()});
    constants += "/// bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytesOf(result)) +
                 ") of the constant file, read by ptrain_step_init\n";
    constants += std::string(cType(result)) + " *" + name + " = nullptr;\n\n";
    globals[name] = std::string(cType(result)) + " *";
  } else {
    std::string values;
    const int perLine = isMaskElementType(elem) ? 32 : 8;
    for (int64_t i = 0; i < n; ++i) {
      std::string v;
      if (elem.isF32())
        v = floatLiteral(attr.getValues<float>()[attr.isSplat() ? 0 : i]);
      else if (isMaskElementType(elem))
        v = attr.getValues<bool>()[attr.isSplat() ? 0 : i] ? "1" : "0";
      else
        v = int64Literal(attr.getValues<int64_t>()[attr.isSplat() ? 0 : i]);
      values += (i ? (i % perLine ? ", " : ",\n    ") : "") + v;
    }
    constants += "alignas(64) const " + std::string(cType(result)) + " " + name + "[" +
                 std::to_string(std::max<int64_t>(n, 1)) + "] = {\n    " + values + "};\n\n";
    globals[name] = "const " + std::string(cType(result)) + "[" + std::to_string(std::max<int64_t>(n, 1)) + "]";
  }
  constantDecl = target::ChunkDecl{ptr(result), "  const " + std::string(cType(result)) + " *" + ptr(result) +
                                                   " = " + name + ";\n"};
  types[ptr(result)] = "const " + std::string(cType(result)) + " *";
  return success();
}

LogicalResult FunctionEmitter::generateConstant(Value v, const std::string &out) {
  const ConstantForm &form = forms[v];
  Type elem = tensorOf(v).getElementType();
  const std::string type = cType(v);
  auto value = [&](uint64_t bits) {
    std::string name = "fill_" + std::to_string(fillCount++);
    block += "    static const " + type + " " + name + " = " + elementLiteral(elem, bits) + ";\n";
    return "&" + name;
  };
  switch (form.kind) {
  case ConstantForm::Splat:
    if (form.value == 0)
      return call(RuntimeCall::ptrain_zero_bytes, {out, std::to_string(bytesOf(v))});
    return call(RuntimeCall::ptrain_fill_elements,
                {out, std::to_string(form.count), std::to_string(form.elemBytes), value(form.value)});
  case ConstantForm::CausalMask: {
    std::string keep = value(form.keep), masked = value(form.masked);
    return call(RuntimeCall::ptrain_causal_mask,
                {out, std::to_string(form.elemBytes), std::to_string(form.batch), std::to_string(form.rows),
                 std::to_string(form.cols), std::to_string(form.diagonal), keep, masked});
  }
  case ConstantForm::Iota:
    return call(RuntimeCall::ptrain_iota_i64, {out, std::to_string(form.count), std::to_string(form.period),
                                               int64Literal(form.start), int64Literal(form.step)});
  case ConstantForm::Literal:
  case ConstantForm::File:
    break;
  }
  return current->emitError("--emit-cpp internal error: the constant is not generated");
}

/// Whether `text` holds the identifier `name` (not as part of a longer one).
static bool namesIdentifier(StringRef text, StringRef name) {
  auto identChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(name); at != StringRef::npos; at = text.find(name, at + 1)) {
    size_t end = at + name.size();
    if ((at == 0 || !identChar(text[at - 1])) && (end == text.size() || !identChar(text[end])))
      return true;
  }
  return false;
}

void FunctionEmitter::pushChunk(target::EmittedChunk chunk) {
  if (!pendingReads.empty()) {
    std::string text = chunk.header + chunk.code;
    for (const target::ChunkDecl &d : chunk.decls)
      text += d.text;
    std::vector<target::ChunkDecl> first, rest;
    for (target::ChunkDecl &d : pendingReads)
      (namesIdentifier(text, d.name) ? first : rest).push_back(std::move(d));
    pendingReads = std::move(rest);
    chunk.decls.insert(chunk.decls.begin(), first.begin(), first.end());
  }
  chunks.push_back(std::move(chunk));
}

LogicalResult FunctionEmitter::emitOp(Operation *op) {
  current = op;
  nextScratch = 0;
  fillCount = 0; // fill_<n> are static locals of the op's block: named per op, the same in every layer
  block.clear();
  // An op of an AdamW run: its first op writes the run's table and loop, the others nothing (AdamWTable.h).
  if (auto run = adamRunOf.find(op); run != adamRunOf.end()) {
    if (run->second->ops.front() != op)
      return success();
    if (failed(emitAdamWRun(
            *run->second, [&](StringAttr state) { return states[state].var; }, *this)))
      return failure();
    std::string loc;
    llvm::raw_string_ostream locOs(loc);
    AdamWOp first = run->second->rows.front().op;
    formatLoc(first.getLoc(), locOs);
    target::EmittedChunk chunk;
    chunk.location = commentSafe(loc);
    chunk.header = "  // ptrain.adamw x " + std::to_string(run->second->rows.size()) +
                   " (with their state reads and writes)\n";
    chunk.code = "  {\n" + block + "  }\n";
    pushChunk(std::move(chunk));
    return success();
  }
  // The generated constants this op is the first to read (ConstantForm.h), into their arena buffers.
  llvm::SmallDenseSet<Value> generated;
  for (Value operand : op->getOperands()) {
    auto it = firstUse.find(operand);
    if (it == firstUse.end() || it->second != opIndex[op] || storage[operand].kind != Storage::Arena ||
        !generated.insert(operand).second)
      continue;
    if (failed(generateConstant(operand, ptr(operand))))
      return failure();
  }
  // Declare the results' pointers.
  if (gemms->isDead(op)) {
    std::string loc;
    llvm::raw_string_ostream locOs(loc);
    formatLoc(op->getLoc(), locOs);
    target::EmittedChunk chunk;
    chunk.location = commentSafe(loc);
    chunk.header = "  // " + op->getName().getStringRef().str() + "\n";
    chunk.code = "  // not emitted: nothing reads its results (DeadOps.h)\n";
    if (!block.empty())
      chunk.code += "  {\n" + block + "  }\n";
    pushChunk(std::move(chunk));
    return success();
  }
  target::EmittedChunk chunk;
  chunk.header = "  // " + op->getName().getStringRef().str() + "\n";
  if (gemms->isFolded(op))
    chunk.header += "  // not materialized: its users read its operands in their GEMMs (GemmFusion.h)\n";
  auto declare = [&](const std::string &name, const std::string &type, const std::string &text) {
    chunk.decls.push_back({name, text});
    if (!type.empty())
      types[name] = type;
  };
  for (Value result : op->getResults()) {
    if (gemms->isFolded(op))
      break;
    const Storage &s = storage[result];
    if (auto request = dyn_cast<RequestType>(result.getType()); request && !request.getValueType()) {
      declare(s.name + "_request", "", "  ptrain_request_t " + s.name + "_request = nullptr;\n");
      continue;
    }
    std::string type = cType(result);
    switch (s.kind) {
    case Storage::Arena:
      declare(s.name, type + " *",
              "  " + type + " *" + s.name + " = reinterpret_cast<" + type + " *>(" + arena + " + " +
                  std::to_string(plan[s.buffer].offset) + ");\n");
      break;
    case Storage::State: {
      auto read = cast<StateReadOp>(op);
      std::string text = "  " + type + " *" + s.name + " = " + states[read.getStateAttr().getAttr()].var + ";\n";
      // A read whose users an import pass dropped (an export's unused pooler) or only dead ops read (DeadOps.h).
      if (llvm::all_of(result.getUsers(), [&](Operation *user) { return gemms->isDead(user); }))
        text += "  (void)" + s.name + ";\n";
      declare(s.name, type + " *", text);
      break;
    }
    case Storage::Alias:
      // `(void)`: a reshape whose uses a later rewrite dropped (e.g. a compressed bucket) is still declared.
      declare(s.name, std::string(s.isConst ? "const " : "") + type + " *",
              "  " + std::string(s.isConst ? "const " : "") + type + " *" + s.name + " = " + ptr(s.root) + ";\n" +
                  "  (void)" + s.name + ";\n");
      break;
    case Storage::Argument:
    case Storage::Constant:
    case Storage::Virtual:
      break;
    }
    if (isa<RequestType>(result.getType()))
      declare(s.name + "_request", "", "  ptrain_request_t " + s.name + "_request = nullptr;\n");
  }

  auto f32 = [](Value v) { return isF32(v); };
  LogicalResult result =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case<arith::ConstantOp>([&](auto c) { return emitConstant(c); })
          .Case<StateReadOp>([&](StateReadOp read) -> LogicalResult {
            Value v = read.getResult();
            if (storage[v].kind != Storage::Arena)
              return success();
            return call(RuntimeCall::ptrain_copy_bytes,
                        {states[read.getStateAttr().getAttr()].var, std::to_string(bytesOf(v)), ptr(v)});
          })
          .Case<StateWriteOp>([&](StateWriteOp write) -> LogicalResult {
            if (deferredWrites.contains(write)) {
              line("// after the wait of its compressed all-reduce, which completes this codec state");
              return success();
            }
            const StateInfo &state = states[write.getStateAttr().getAttr()];
            Value v = write.getValue();
            if (storage[v].kind == Storage::Virtual)
              return generateConstant(v, state.var); // a splat: a memset or fill of the state
            return call(RuntimeCall::ptrain_copy_bytes, {ptr(v), std::to_string(bytesOf(v)), state.var});
          })
          .Case<ReshapeOp>([&](ReshapeOp) { return success(); })
          .Case<EmbeddingOp>([&](EmbeddingOp e) -> LogicalResult {
            Value ids = e.getIds();
            if (isF32(ids))
              return e.emitError("--emit-cpp: embedding ids must be i64");
            ArrayRef<int64_t> table = shapeOf(e.getTable());
            int64_t n = countOf(ids);
            std::string ids32 = scratchPtr(scratch(4 * n), "int32_t");
            if (failed(call(RuntimeCall::ptrain_cast_i64_i32, {ptr(ids), std::to_string(n), ids32})))
              return failure();
            return call(RuntimeCall::ptrain_embedding_fwd_f32,
                        {ptr(e.getTable()), ids32, std::to_string(n), std::to_string(table[0]),
                         std::to_string(table[1]), ptr(e.getResult())});
          })
          .Case<EmbeddingGradOp>([&](EmbeddingGradOp e) -> LogicalResult {
            Value ids = e.getIds();
            ArrayRef<int64_t> table = shapeOf(e.getResult());
            int64_t n = countOf(ids);
            std::string ids32 = scratchPtr(scratch(4 * n), "int32_t");
            if (failed(call(RuntimeCall::ptrain_cast_i64_i32, {ptr(ids), std::to_string(n), ids32})) ||
                failed(call(RuntimeCall::ptrain_zero_bytes, {ptr(e.getResult()), std::to_string(bytesOf(e.getResult()))})))
              return failure();
            return call(RuntimeCall::ptrain_embedding_bwd_f32,
                        {ptr(e.getGrad()), ids32, std::to_string(n), std::to_string(table[0]),
                         std::to_string(table[1]), ptr(e.getResult())});
          })
          .Case<BinaryOp>([&](BinaryOp b) -> LogicalResult {
            if (gemms->aliasOf(b)) {
              line("// an alias: the GEMM of its product started from the bias rows (GemmFusion.h)");
              return success();
            }
            Value lhs = b.getLhs(), rhs = b.getRhs(), out = b.getResult();
            if (!f32(out)) {
              if (b.getKind() != BinaryKind::Add || shapeOf(lhs) != shapeOf(rhs))
                return b.emitError("--emit-cpp: i64 'ptrain.binary' supports only add of equal shapes");
              return call(RuntimeCall::ptrain_add_i64, {ptr(lhs), ptr(rhs), std::to_string(countOf(out)), ptr(out)});
            }
            std::string ad = dims(shapeOf(lhs), "a_dims"), bd = dims(shapeOf(rhs), "b_dims"),
                        od = dims(shapeOf(out), "out_dims");
            return call(RuntimeCall::ptrain_binary_f32,
                        {binaryKindEnum(b.getKind()), ptr(lhs), std::to_string(shapeOf(lhs).size()), ad,
                         ptr(rhs), std::to_string(shapeOf(rhs).size()), bd, std::to_string(shapeOf(out).size()), od,
                         ptr(out)});
          })
          .Case<UnaryOp>([&](UnaryOp u) -> LogicalResult {
            return call(RuntimeCall::ptrain_unary_f32, {unaryKindEnum(u.getKind()), ptr(u.getInput()),
                                                        std::to_string(countOf(u.getInput())), ptr(u.getResult())});
          })
          .Case<MatmulOp>([&](MatmulOp m) -> LogicalResult {
            FailureOr<GemmGeometry> g = gemmGeometry(m, "--emit-cpp");
            if (failed(g))
              return failure();
            if (gemms->isFolded(m))
              return success(); // computed by the sum_to of its result
            GemmOperand a = gemms->operand(m, 0), b = gemms->operand(m, 1);
            Value bias = gemms->biasOf(m);
            if (bias) { // C = the bias rows, then C = A B + C (the add of its only user, GemmFusion.h)
              ArrayRef<int64_t> out = shapeOf(m.getResult());
              if (failed(call(RuntimeCall::ptrain_broadcast_to,
                              {ptr(bias), "4", "1", dims(shapeOf(bias), "bias_dims"), std::to_string(out.size()),
                               dims(out, "out_dims"), ptr(m.getResult())})))
                return failure();
            }
            return call(RuntimeCall::ptrain_gemm_f32,
                        {a.transposed ? "1" : "0", b.transposed ? "1" : "0", std::to_string(g->batch),
                         std::to_string(g->rows), std::to_string(g->cols), std::to_string(g->k), "1.0f", ptr(a.source),
                         std::to_string(g->strideA), ptr(b.source), std::to_string(g->strideB),
                         bias ? "1.0f" : "0.0f", ptr(m.getResult()), std::to_string(g->rows * g->cols)});
          })
          .Case<LayerNormOp>([&](LayerNormOp ln) -> LogicalResult {
            ArrayRef<int64_t> x = shapeOf(ln.getInput());
            int64_t axis = ln.getNormalizedAxis();
            int64_t rows = numElements(x.take_front(axis)), cols = numElements(x.drop_front(axis));
            std::string beta;
            if (ln.getBias()) {
              beta = ptr(ln.getBias());
            } else {
              beta = scratchPtr(scratch(4 * cols), "float");
              if (failed(call(RuntimeCall::ptrain_zero_bytes, {beta, std::to_string(4 * cols)})))
                return failure();
            }
            std::string mean = scratchPtr(scratch(4 * rows), "float"), rstd = scratchPtr(scratch(4 * rows), "float");
            return call(RuntimeCall::ptrain_layer_norm_fwd_f32,
                        {ptr(ln.getInput()), ptr(ln.getScale()), beta, std::to_string(rows), std::to_string(cols),
                         floatLiteral(ln.getEpsilonAttr().getValueAsDouble()), ptr(ln.getResult()), mean, rstd});
          })
          .Case<LayerNormGradOp>([&](LayerNormGradOp g) -> LogicalResult {
            auto [rows, cols] = rowsCols(shapeOf(g.getInput()), g.getAxisAttr().getInt());
            // Recompute mean and rstd with a forward into scratch (the op recomputes them by definition).
            std::string zeros = scratchPtr(scratch(4 * cols), "float");
            std::string y = scratchPtr(scratch(4 * rows * cols), "float");
            std::string mean = scratchPtr(scratch(4 * rows), "float"), rstd = scratchPtr(scratch(4 * rows), "float");
            std::string dbeta = g.getBiasGrad() ? ptr(g.getBiasGrad()) : scratchPtr(scratch(4 * cols), "float");
            if (failed(call(RuntimeCall::ptrain_zero_bytes, {zeros, std::to_string(4 * cols)})) ||
                failed(call(RuntimeCall::ptrain_layer_norm_fwd_f32,
                            {ptr(g.getInput()), ptr(g.getScale()), zeros, std::to_string(rows), std::to_string(cols),
                             floatLiteral(g.getEpsilonAttr().getValueAsDouble()), y, mean, rstd})))
              return failure();
            return call(RuntimeCall::ptrain_layer_norm_bwd_f32,
                        {ptr(g.getGrad()), ptr(g.getInput()), ptr(g.getScale()), mean, rstd, std::to_string(rows),
                         std::to_string(cols), ptr(g.getInputGrad()), ptr(g.getScaleGrad()), dbeta});
          })
          .Case<SoftmaxOp, SoftmaxGradOp>([&](auto s) -> LogicalResult {
            Value x = s->getOperand(0);
            int64_t rank = shapeOf(x).size();
            int64_t axis = s.getAxisAttr().getInt();
            if (axis != -1 && axis != rank - 1)
              return s.emitError("--emit-cpp: softmax is supported over the last axis only, got axis ") << axis;
            int64_t cols = shapeOf(x).back(), rows = countOf(x) / std::max<int64_t>(cols, 1);
            if constexpr (std::is_same_v<decltype(s), SoftmaxOp>)
              return call(RuntimeCall::ptrain_softmax_fwd_f32,
                          {ptr(x), std::to_string(rows), std::to_string(cols), "0", ptr(s.getResult())});
            else
              return call(RuntimeCall::ptrain_softmax_bwd_f32, {ptr(s.getGrad()), ptr(s.getOutput()),
                                                                 std::to_string(rows), std::to_string(cols),
                                                                 ptr(s.getResult())});
          })
          .Case<GeluOp>([&](GeluOp g) -> LogicalResult {
            bool tanh = g.getApproximate() == GeluApproximation::Tanh;
            return call(tanh ? RuntimeCall::ptrain_gelu_tanh_fwd_f32 : RuntimeCall::ptrain_gelu_fwd_f32,
                        {ptr(g.getInput()), std::to_string(countOf(g.getInput())), ptr(g.getResult())});
          })
          .Case<GeluGradOp>([&](GeluGradOp g) -> LogicalResult {
            bool tanh = g.getApproximate() == GeluApproximation::Tanh;
            return call(
                tanh ? RuntimeCall::ptrain_gelu_tanh_bwd_f32 : RuntimeCall::ptrain_gelu_bwd_f32,
                {ptr(g.getGrad()), ptr(g.getInput()), std::to_string(countOf(g.getInput())), ptr(g.getResult())});
          })
          .Case<TransposeOp>([&](TransposeOp t) -> LogicalResult {
            if (gemms->isFolded(t))
              return success(); // every user reads the input with BLAS's transpose flag
            if (gemms->aliasOf(t)) {
              line("// an alias: the GEMM of its input wrote the transposed matrix (GemmFusion.h)");
              return success();
            }
            ArrayRef<int64_t> x = shapeOf(t.getInput());
            if (x.size() <= 1)
              return call(RuntimeCall::ptrain_copy_bytes,
                          {ptr(t.getInput()), std::to_string(bytesOf(t.getInput())), ptr(t.getResult())});
            if (!f32(t.getInput()))
              return t.emitError("--emit-cpp: transpose supports f32 tensors of rank >= 2");
            std::string d = dims(x, "dims"), p = perm32(t.getPerm(), "perm");
            return call(RuntimeCall::ptrain_permute_f32,
                        {ptr(t.getInput()), std::to_string(x.size()), d, p, ptr(t.getResult())});
          })
          .Case<SliceOp>([&](SliceOp s) -> LogicalResult {
            Value x = s.getInput();
            std::string d = dims(shapeOf(x), "dims"), o = dims(s.getOffsets(), "offsets"),
                        od = dims(shapeOf(s.getResult()), "out_dims");
            return call(RuntimeCall::ptrain_slice, {ptr(x), std::to_string(elemBytes(x)),
                                                     std::to_string(shapeOf(x).size()), d, o, od, ptr(s.getResult())});
          })
          .Case<SplitOp>([&](SplitOp s) -> LogicalResult {
            Value x = s.getInput();
            int64_t rank = shapeOf(x).size();
            std::string d = dims(shapeOf(x), "dims");
            SmallVector<SmallVector<int64_t>> offsets = pieceOffsets(rank, s.getAxisAttr().getInt(), s.getResults());
            for (auto [i, piece] : llvm::enumerate(s.getResults())) {
              std::string o = dims(offsets[i], "offsets_" + std::to_string(i)),
                          od = dims(shapeOf(piece), "out_dims_" + std::to_string(i));
              if (failed(call(RuntimeCall::ptrain_slice, {ptr(x), std::to_string(elemBytes(x)),
                                                           std::to_string(rank), d, o, od, ptr(piece)})))
                return failure();
            }
            return success();
          })
          .Case<ConcatOp>([&](ConcatOp c) -> LogicalResult {
            Value out = c.getResult();
            int64_t rank = shapeOf(out).size();
            std::string od = dims(shapeOf(out), "out_dims");
            SmallVector<SmallVector<int64_t>> offsets = pieceOffsets(rank, c.getAxisAttr().getInt(), c.getInputs());
            for (auto [i, in] : llvm::enumerate(c.getInputs())) {
              std::string o = dims(offsets[i], "offsets_" + std::to_string(i)),
                          xd = dims(shapeOf(in), "x_dims_" + std::to_string(i));
              if (failed(call(RuntimeCall::ptrain_insert_slice, {ptr(in), std::to_string(elemBytes(in)),
                                                                  std::to_string(rank), xd, o, od, ptr(out)})))
                return failure();
            }
            return success();
          })
          .Case<PadOp>([&](PadOp p) -> LogicalResult {
            Value x = p.getInput(), out = p.getResult();
            std::string xd = dims(shapeOf(x), "x_dims"), o = dims(p.getLow(), "offsets"),
                        od = dims(shapeOf(out), "out_dims");
            if (failed(call(RuntimeCall::ptrain_zero_bytes, {ptr(out), std::to_string(bytesOf(out))})))
              return failure();
            return call(RuntimeCall::ptrain_insert_slice, {ptr(x), std::to_string(elemBytes(x)),
                                                            std::to_string(shapeOf(x).size()), xd, o, od, ptr(out)});
          })
          .Case<SumToOp>([&](SumToOp s) -> LogicalResult {
            Value x = s.getInput(), out = s.getResult();
            if (MatmulOp m = gemms->summedMatmul(s)) {
              // sum_b A_b B_b as one GEMM over the batch-long contraction (A stored transposed, GemmFusion.h).
              FailureOr<GemmGeometry> g = gemmGeometry(m, "--emit-cpp");
              if (failed(g))
                return failure();
              if (gemms->writesTransposed(s)) // its only user transposes it: (A^T B)^T = B^T A
                return call(RuntimeCall::ptrain_gemm_f32,
                            {"1", "0", "1", std::to_string(g->cols), std::to_string(g->rows),
                             std::to_string(g->batch * g->k), "1.0f", ptr(gemms->operand(m, 1).source), "0",
                             ptr(gemms->operand(m, 0).source), "0", "0.0f", ptr(out), "0"});
              return call(RuntimeCall::ptrain_gemm_f32,
                          {"1", "0", "1", std::to_string(g->rows), std::to_string(g->cols),
                           std::to_string(g->batch * g->k), "1.0f", ptr(gemms->operand(m, 0).source), "0",
                           ptr(gemms->operand(m, 1).source), "0", "0.0f", ptr(out), "0"});
            }
            std::string xd = dims(shapeOf(x), "dims"), od = dims(shapeOf(out), "out_dims");
            return call(RuntimeCall::ptrain_sum_to_f32, {ptr(x), std::to_string(shapeOf(x).size()), xd,
                                                          std::to_string(shapeOf(out).size()), od, ptr(out)});
          })
          .Case<CrossEntropyOp, CrossEntropyGradOp>([&](auto ce) -> LogicalResult {
            Value logits = ce.getLogits(), labels = ce.getLabels();
            int64_t classes = shapeOf(logits).back(), n = countOf(labels);
            std::string ids32 = scratchPtr(scratch(4 * n), "int32_t");
            std::string lse = scratchPtr(scratch(4 * n), "float");
            if (failed(call(RuntimeCall::ptrain_cast_i64_i32, {ptr(labels), std::to_string(n), ids32})))
              return failure();
            // Weights, ignore_index and reduction (PTrainCrossEntropy.h): the _weighted_ kernels; the labels
            // are int32 there, so the ignore_index must be one.
            std::optional<int64_t> ignore = ce.getIgnoreIndex();
            if (ignore && (*ignore < INT32_MIN || *ignore > INT32_MAX))
              return ce.emitError("--emit-cpp: ignore_index ") << *ignore << " does not fit the runtime's int32 labels";
            const bool weighted = ce.isWeighted() || ce.isSumReduction();
            SmallVector<std::string> options = {ce.getWeight() ? ptr(ce.getWeight()) : "nullptr", ignore ? "1" : "0",
                                                ignore ? std::to_string(*ignore) : "0",
                                                ce.isSumReduction() ? "1" : "0"};
            auto forward = [&](const std::string &loss) {
              if (!weighted)
                return call(RuntimeCall::ptrain_cross_entropy_fwd_f32,
                            {ptr(logits), ids32, std::to_string(n), std::to_string(classes), loss, lse});
              return call(RuntimeCall::ptrain_cross_entropy_weighted_fwd_f32,
                          {ptr(logits), ids32, options[0], std::to_string(n), std::to_string(classes), options[1],
                           options[2], options[3], loss, lse});
            };
            if constexpr (std::is_same_v<decltype(ce), CrossEntropyOp>) {
              return forward(ptr(ce.getLoss()));
            } else {
              // The backward needs the log-sum-exp: recompute it (the loss itself goes to scratch).
              if (failed(forward(scratchPtr(scratch(4), "float"))))
                return failure();
              if (!weighted)
                return call(RuntimeCall::ptrain_cross_entropy_bwd_f32,
                            {ptr(ce.getGrad()) + "[0]", ptr(logits), ids32, lse, std::to_string(n),
                             std::to_string(classes), ptr(ce.getResult())});
              return call(RuntimeCall::ptrain_cross_entropy_weighted_bwd_f32,
                          {ptr(ce.getGrad()) + "[0]", ptr(logits), ids32, options[0], lse, std::to_string(n),
                           std::to_string(classes), options[1], options[2], options[3], ptr(ce.getResult())});
            }
          })
          .Case<AdamWOp>([&](AdamWOp a) -> LogicalResult {
            Value p = a.getParam();
            std::string bytes = std::to_string(bytesOf(p)), n = std::to_string(countOf(p));
            if (failed(emitLearningRate(a.getSchedule(), a.getStep(), *this)) ||
                failed(call(RuntimeCall::ptrain_copy_bytes, {ptr(p), bytes, ptr(a.getNewParam())})) ||
                failed(call(RuntimeCall::ptrain_copy_bytes, {ptr(a.getM()), bytes, ptr(a.getNewM())})) ||
                failed(call(RuntimeCall::ptrain_copy_bytes, {ptr(a.getV()), bytes, ptr(a.getNewV())})))
              return failure();
            return call(RuntimeCall::ptrain_adamw_step_f32,
                        {ptr(a.getNewParam()), ptr(a.getGrad()), ptr(a.getNewM()), ptr(a.getNewV()), n, "t", "lr",
                         floatLiteral(a.getBeta1Attr().getValueAsDouble()),
                         floatLiteral(a.getBeta2Attr().getValueAsDouble()),
                         floatLiteral(a.getEpsilonAttr().getValueAsDouble()),
                         floatLiteral(a.getWeightDecayAttr().getValueAsDouble())});
          })
          .Case<SumSquaresOp>([&](SumSquaresOp s) { return emitSumSquares(s, *this); })
          .Case<ClipScaleOp>([&](ClipScaleOp c) { return emitClipScale(c, *this); })
          .Case<SGDOp>([&](SGDOp o) { return emitSGD(o, *this); })
          .Case<AllReduceStartOp>([&](AllReduceStartOp a) -> LogicalResult {
            Value in = a.getInput(), req = a.getRequest();
            if (!isF32(in))
              return a.emitError("--emit-cpp: all-reduce of a non-f32 tensor is not supported");
            const char *op = nullptr;
            switch (a.getReduction()) {
            case ReductionKind::Sum:
              op = "PTRAIN_REDUCE_SUM";
              break;
            case ReductionKind::Avg:
              op = "PTRAIN_REDUCE_AVG";
              break;
            default:
              return a.emitError("--emit-cpp: only sum and avg all-reduces are supported");
            }
            FailureOr<std::string> comm = comms.lookup(a, a.getGridAttr().getValue(), a.getGridAxes(), getSubgroup(a));
            if (failed(comm))
              return failure();
            return call(RuntimeCall::ptrain_all_reduce_start,
                        {*comm, ptr(in), ptr(req), std::to_string(countOf(in)), "PTRAIN_DTYPE_F32", op,
                         "&" + ptr(req) + "_request"});
          })
          .Case<SendStartOp>([&](SendStartOp send) -> LogicalResult {
            return pointToPoint(send, RuntimeCall::ptrain_send_start, send.getInput(), send.getRequest(),
                                send.getGridAttr().getValue(), send.getAxis(), send.getOffset());
          })
          .Case<RecvStartOp>([&](RecvStartOp recv) -> LogicalResult {
            return pointToPoint(recv, RuntimeCall::ptrain_recv_start, recv.getRequest(), recv.getRequest(),
                                recv.getGridAttr().getValue(), recv.getAxis(), recv.getOffset());
          })
          .Case<func::CallOp>([&](func::CallOp c) -> LogicalResult {
            // Another function of the step: it runs in the shared arena, the caller in its own.
            std::string args;
            for (Value v : c.getOperands())
              args += (args.empty() ? "" : ", ") + ptr(v);
            for (Value v : c.getResults())
              args += (args.empty() ? "" : ", ") + ptr(v);
            block += "    PTRAIN_STEP_CALL(ptrain_step_" + c.getCallee().str() + "(" + args + "));\n";
            return success();
          })
          .Case<WaitOp>([&](WaitOp w) -> LogicalResult {
            // A failing wait frees the request too (ptrain_wait), so the handle is cleared either way.
            std::string request = ptr(w.getRequest()) + "_request";
            block += "    ptrain_request_t request = " + request + ";\n    " + request + " = nullptr;\n";
            if (failed(call(RuntimeCall::ptrain_wait, {"request"})))
              return failure();
            // The codec states a compressed all-reduce completed (deferCompressedStateWrites).
            for (StateWriteOp write : writesAfterWait.lookup(w)) {
              Value v = write.getValue();
              if (failed(call(RuntimeCall::ptrain_copy_bytes,
                              {ptr(v), std::to_string(bytesOf(v)), states[write.getStateAttr().getAttr()].var})))
                return failure();
            }
            return success();
          })
          .Case<CompressOp>([&](CompressOp c) -> LogicalResult {
            if (failed(emitCompress(c, *this)))
              return failure();
            emitCompressTelemetry(c, sites, *this);
            return success();
          })
          .Case<DecompressOp>([&](DecompressOp d) { return emitDecompress(d, *this); })
          .Case<CompareOp, SelectOp, BroadcastToOp, ReduceOp>([&](Operation *o) { return emitBroadcastOp(o, *this); })
          .Case<RmsNormOp, RotaryEmbeddingOp, DropoutOp>([&](Operation *o) { return emitTransformerOp(o, *this); })
          .Case<CastOp, GatherOp, LogSoftmaxOp>([&](Operation *o) { return emitSelectionOp(o, *this); })
          .Case<TPAllGatherOp, VocabParallelEmbeddingOp, VocabParallelEmbeddingGradOp, VocabParallelCrossEntropyPartsOp,
                VocabParallelCrossEntropyPartsGradOp>([&](Operation *o) -> LogicalResult {
            auto [grid, axis] = vocabParallelAxis(o);
            FailureOr<std::string> comm =
                comms.lookup(o, grid, ArrayAttr::get(o->getContext(), {StringAttr::get(o->getContext(), axis)}));
            return failed(comm) ? failure() : emitVocabParallelOp(o, *comm, comms.theGrid, *this);
          })
          .Case<TPCopyOp>([&](TPCopyOp) { return success(); }) // an alias (planStorage)
          .Case<TPSplitOp>([&](TPSplitOp t) -> LogicalResult {
            // The rank's block: a slice at the rank's offset.
            FailureOr<std::string> offsets = tpSplitOffsets(t, comms, "offsets");
            if (failed(offsets))
              return failure();
            block += "    " + *offsets + "\n";
            Value x = t.getInput();
            std::string d = dims(shapeOf(x), "dims"), od = dims(shapeOf(t.getResult()), "out_dims");
            return call(RuntimeCall::ptrain_slice, {ptr(x), std::to_string(elemBytes(x)),
                                                     std::to_string(shapeOf(x).size()), d, "offsets", od,
                                                     ptr(t.getResult())});
          })
          .Case<TPAllReduceOp>([&](TPAllReduceOp t) -> LogicalResult {
            FailureOr<std::string> comm = comms.lookup(
                t, t.getGrid(), ArrayAttr::get(t.getContext(), {StringAttr::get(t.getContext(), t.getAxis())}));
            return failed(comm) ? failure() : emitTPAllReduce(t, *comm, *this);
          })
          .Case<CompressedAllReduceStartOp>([&](CompressedAllReduceStartOp c) -> LogicalResult {
            FailureOr<std::string> comm = comms.lookup(c, c.getGridAttr().getValue(), c.getGridAxes());
            if (failed(comm))
              return failure();
            return emitCompressedAllReduceStart(c, *comm, *this);
          })
          .Case<func::ReturnOp>([&](func::ReturnOp r) -> LogicalResult {
            for (auto [i, v] : llvm::enumerate(r.getOperands()))
              if (failed(call(RuntimeCall::ptrain_copy_bytes,
                              {ptr(v), std::to_string(bytesOf(v)), "out_" + std::to_string(i)})))
                return failure();
            return success();
          })
          .Default([&](Operation *other) {
            return other->emitError("--emit-cpp: '") << other->getName() << "' is not supported";
          });
  if (failed(result))
    return failure();

  std::string loc;
  llvm::raw_string_ostream locOs(loc);
  formatLoc(op->getLoc(), locOs);
  chunk.location = commentSafe(loc);
  if (constantDecl)
    chunk.decls.push_back(std::move(*constantDecl));
  constantDecl.reset();
  if (!block.empty())
    chunk.code = "  {\n" + block + "  }\n";
  // A transpose or sum its GEMM reads (GemmFusion.h) has no code: not written (the GEMM's block names what it
  // reads), so that the folded transposes of every layer's weights are no run of comments.
  if (gemms->isFolded(op) && chunk.decls.empty() && chunk.code.empty())
    return success();
  // A state read used in place is only a pointer: declared where it is first named, so that each layer's
  // reads fall into the layer's block (BlockOutliner.h) instead of a run of reads at the function's top.
  if (isa<StateReadOp>(op) && storage[op->getResult(0)].kind == Storage::State && block.empty()) {
    llvm::append_range(pendingReads, chunk.decls);
    return success();
  }
  pushChunk(std::move(chunk));
  return success();
}

/// Whether `func` reads or writes a state.
bool usesStates(func::FuncOp func) {
  bool any = false;
  forEachStateSymbol(func, [&](StringAttr) { any = true; });
  return any;
}

LogicalResult FunctionEmitter::prepare(int64_t &bytes) {
  if (failed(checkOps()))
    return failure();
  // A pipeline module's function without a stage that uses states (the whole model's forward) runs on no rank,
  // since a rank holds only its stage's states: its entry point only refuses, and its body is not emitted (it
  // was a tenth of a 12-layer GPT's step.cpp).
  auto stage = func->getAttrOfType<IntegerAttr>("ptrain.stage");
  const bool pipeline = func->getParentOfType<ModuleOp>()->hasAttr("ptrain.pipeline");
  runsNowhere = pipeline && !stage && usesStates(func);
  arenaBytes = 0;
  for (BlockArgument arg : func.getBody().front().getArguments())
    types["arg" + std::to_string(arg.getArgNumber())] = "const " + std::string(cType(arg)) + " *";
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    types["out_" + std::to_string(i)] =
        cast<RankedTensorType>(type).getElementType().isF32() ? "float *" : "int64_t *";
  if (!runsNowhere && failed(planAndEmitBody(arenaBytes)))
    return failure();
  bytes = arenaBytes;
  return success();
}

LogicalResult FunctionEmitter::planAndEmitBody(int64_t &bytes) {
  gemms.emplace(ops);
  adamRuns = findAdamWRuns(ops, deferredWrites);
  for (const AdamWRun &run : adamRuns)
    for (Operation *op : run.ops)
      adamRunOf[op] = &run;
  planStorage();
  // Dry run: every op's emitter requests its scratch, which is planned like any buffer. The text of this
  // pass is discarded; the constant arrays it wrote are too.
  std::string savedConstants = constants;
  int64_t savedNumConstants = numConstants, savedValues = valueCount;
  ConstantFile savedFile = file;
  for (Operation *op : ops)
    if (failed(emitOp(op)))
      return failure();
  constants = savedConstants;
  numConstants = savedNumConstants;
  valueCount = savedValues;
  file = std::move(savedFile);
  fillCount = 0;
  bytes = planArena(plan, kArenaAlignment);
  chunks.clear();
  pendingReads.clear();
  for (Operation *op : ops)
    if (failed(emitOp(op)))
      return failure();
  // Reads no op names (their users were dropped): declared at the end, each with its (void).
  if (!pendingReads.empty()) {
    target::EmittedChunk unused;
    unused.location = "state reads no op uses";
    unused.decls = std::move(pendingReads);
    pendingReads.clear();
    chunks.push_back(std::move(unused));
  }
  return success();
}

LogicalResult FunctionEmitter::writeFunction(std::string &code, const std::string &body) {
  // The signature: arguments as const pointers (named as planStorage names them), results as out pointers.
  auto argName = [](BlockArgument arg) { return "arg" + std::to_string(arg.getArgNumber()); };
  std::string sig = "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_" + func.getSymName().str() + "(";
  std::string doc = "/// @" + func.getSymName().str() + ":\n";
  Block &entry = func.getBody().front();
  int64_t params = 0;
  for (BlockArgument arg : entry.getArguments()) {
    sig += (params++ ? ", " : "") + std::string("const ") + cType(arg) + " *" + argName(arg);
    std::string type;
    llvm::raw_string_ostream ts(type);
    ts << arg.getType();
    doc += "///   " + argName(arg) + ": " + type + "\n";
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
  sig += ")";
  declaration = sig + ";\n";
  sig += " {";
  // The storage is this rank's (allocated by ptrain_step_init): a pipeline stage's functions run only there.
  const std::string entryName = "ptrain_step_" + func.getSymName().str();
  auto stage = func->getAttrOfType<IntegerAttr>("ptrain.stage");
  if (runsNowhere) {
    // Its states span the stages (the whole model's forward of a pipeline module): no rank allocates them.
    for (BlockArgument arg : entry.getArguments())
      sig += "\n  (void)" + argName(arg) + ";";
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      sig += "\n  (void)out_" + std::to_string(i) + ";";
    code += doc + "/// Not emitted: it runs on no rank of the pipeline.\n" + sig + "\n  return stepError(\"" +
            entryName +
            ": a function without ptrain.stage that uses states does not run in a pipeline step (a rank holds "
            "only its stage's states)\");\n}\n\n";
    return success();
  }
  if (stage && func->getParentOfType<ModuleOp>()->hasAttr("ptrain.pipeline"))
    sig += "\n  if (storage_stage != " + std::to_string(stage.getInt()) + ")\n    return stepError(\"" + entryName +
           ": the storage of stage " + std::to_string(stage.getInt()) +
           " is not allocated in this process (stage %d; -2: call ptrain_step_init first)\", "
           "static_cast<int>(storage_stage));";
  else
    sig += "\n  if (storage_stage == -2)\n    return stepError(\"" + entryName + ": call ptrain_step_init first\");";
  // An argument the function does not read (a backward that ignores its tokens) is not a warning.
  for (BlockArgument arg : entry.getArguments())
    if (arg.use_empty())
      sig += "\n  (void)" + argName(arg) + ";";
  code += doc + "/// Arena: " + std::to_string(arenaBytes) + " bytes for " + std::to_string(plan.size()) +
          " buffers (tensors and kernel scratch) planned by liveness.\n" + sig + body + "  return PTRAIN_OK;\n}\n\n";
  return success();
}

//===----------------------------------------------------------------------===//
// The translation unit
//===----------------------------------------------------------------------===//

LogicalResult CppEmitter::emitStorageAllocation(bool pipeline, ArrayRef<FunctionArena> arenas,
                                                raw_ostream &s) {
  std::string fileName;
  if (!constantFile.constants.empty()) {
    if (options.constantsFile.empty())
      return mlir::emitError(constantFile.constants.front().loc, "--emit-cpp: a constant of ")
             << constantFile.constants.front().bytes << " bytes is neither small (at most " << kLiteralElements
             << " elements), a splat, a causal mask nor an iota: it is read from a constant file at init; pass "
                "--emit-cpp-constants=FILE (FILE lies beside libstep.so)";
    fileName = llvm::sys::path::filename(options.constantsFile).str();
  }
  emitStorageBlocks(s, {"storage_state_bytes", "storage_arena_bytes", "storage_constant_bytes"});
  // The units: each stage of a pipeline (its ranks allocate only its storage) or the whole module.
  std::set<int64_t> units;
  if (pipeline) {
    for (auto &entry : stageStates)
      units.insert(entry.first);
    for (const FunctionArena &a : arenas)
      if (a.stage)
        units.insert(*a.stage);
  } else {
    units.insert(-1);
  }
  auto inUnit = [&](std::optional<int64_t> stage, int64_t unit) { return unit < 0 || !stage || *stage == unit; };
  for (int64_t unit : units) {
    std::string fn = unit < 0 ? "allocateModuleStorage" : "allocateStage" + std::to_string(unit) + "Storage";
    llvm::SetVector<StateOp> list;
    if (unit < 0) {
      list.insert(stateOrder.begin(), stateOrder.end());
    } else {
      auto it = stageStates.find(unit);
      if (it != stageStates.end())
        list.insert(it->second.begin(), it->second.end());
    }
    int64_t stateBytes = 0, calleeArena = 0, arenaBytes = 0, constantBytes = 0;
    for (StateOp state : list) {
      RankedTensorType type = state.getTensorType();
      stateBytes += numElements(type.getShape()) * elementBytes(type.getElementType());
    }
    ArrayRef<StateOp> stageList;
    if (auto it = stageStates.find(unit); unit >= 0 && it != stageStates.end())
      stageList = it->second.getArrayRef();
    std::string body = stateAllocations(
        list.getArrayRef(), [&](StateOp st) { return states[st.getSymNameAttr()].var; },
        [&](StateOp st) { return states[st.getSymNameAttr()].index; },
        unit >= 0 ? "kStage" + std::to_string(unit) + "States" : std::string(), stageList, "storage_state_bytes");
    for (const FunctionArena &a : arenas) {
      if (!inUnit(a.stage, unit))
        continue;
      if (a.name.empty()) {
        calleeArena = std::max(calleeArena, a.bytes);
        continue;
      }
      arenaBytes += a.bytes;
      body += "  " + allocateBlockCall(a.name, a.bytes, "storage_arena_bytes") + "\n";
    }
    arenaBytes += calleeArena;
    body += "  " + allocateBlockCall("ptrain_arena", calleeArena, "storage_arena_bytes") + "\n";
    for (const FileConstant &c : constantFile.constants) {
      if (!inUnit(c.stage, unit))
        continue;
      constantBytes += c.bytes;
      body += "  " + allocateBlockCall(c.var, c.bytes, "storage_constant_bytes") + "\n  PTRAIN_STEP_CALL(" +
              getRuntimeCallInfo(RuntimeCall::ptrain_read_beside).name + "(step_error, " + stringLiteral(fileName) +
              ", " + std::to_string(c.offset) + ", " + std::to_string(c.bytes) + ", " + c.var + "));\n";
    }
    s << "/// " << (unit < 0 ? std::string("The module's") : "Stage " + std::to_string(unit) + "'s") << " storage: "
      << list.size() << " states (" << stateBytes << " bytes), arenas (" << arenaBytes << " bytes), constants ("
      << constantBytes << " bytes" << (constantBytes ? " from " + fileName : std::string()) << ").\n";
    s << "ptrain_status_t " << fn << "() {\n" << body << "  return PTRAIN_OK;\n}\n\n";
  }
  s << "/// This process's storage, once: "
    << (pipeline ? "its pipeline stage's (ptrain_stage)." : "the whole module's.") << "\n";
  s << "ptrain_status_t allocateStorage() {\n  if (storage_stage != -2)\n    return PTRAIN_OK;\n";
  if (pipeline) {
    s << "  switch (ptrain_stage) {\n";
    for (int64_t unit : units)
      s << "  case " << unit << ":\n    PTRAIN_STEP_CALL(allocateStage" << unit << "Storage());\n    break;\n";
    s << "  default:\n    break;\n  }\n  storage_stage = ptrain_stage;\n";
  } else {
    s << "  PTRAIN_STEP_CALL(allocateModuleStorage());\n  storage_stage = -1;\n";
  }
  s << "  return PTRAIN_OK;\n}\n\n";
  return success();
}

LogicalResult CppEmitter::emit(raw_ostream &os) {
  if (failed(collectStates()))
    return failure();
  sites.collect(module);
  std::string functions;
  SmallVector<std::string> entryNames;
  SmallVector<FunctionArena> arenas;
  std::vector<std::unique_ptr<FunctionEmitter>> emitters;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      return mlir::emitError(func.getLoc(), "--emit-cpp: function @") << func.getSymName() << " has no body";
    int64_t bytes = 0;
    // A function that calls others (a lowered pipeline step) keeps its values in its own arena, since its
    // callees use the shared one.
    bool calls = !func.getOps<func::CallOp>().empty();
    std::string arena = calls ? "ptrain_arena_" + identifierFrom(func.getSymName()) : "ptrain_arena";
    globals[arena] = "unsigned char *";
    emitters.push_back(std::make_unique<FunctionEmitter>(func, states, comms, sites, constants, numConstants,
                                                         constantFile, globals, arena));
    if (failed(emitters.back()->prepare(bytes)))
      return failure();
    std::optional<int64_t> stage;
    if (auto s = func->getAttrOfType<IntegerAttr>("ptrain.stage"))
      stage = s.getInt();
    // A pipeline module's function without a stage that uses states runs on no rank (its entry point says so).
    if (stage || !module->hasAttr("ptrain.pipeline") || !usesStates(func))
      arenas.push_back({calls ? arena : std::string(), bytes, stage});
    entryNames.push_back("ptrain_step_" + func.getSymName().str());
    if (stage) {
      llvm::SetVector<StateOp> &used = stageStates[*stage];
      forEachStateSymbol(func, [&](StringAttr sym) { used.insert(states[sym].op); });
    }
  }
  for (Operation &op : module.getBody()->getOperations())
    if (!isa<func::FuncOp, StateOp, GridOp>(op))
      return op.emitError("--emit-cpp: '") << op.getName() << "' at module level is not supported";

  // Identical layers (and any other repeated run of ops) are written once and called (BlockOutliner.h).
  for (StateOp state : stateOrder) {
    const StateInfo &info = states[state.getSymNameAttr()];
    globals[info.var] = state.getTensorType().getElementType().isF32() ? "float *" : "int64_t *";
    globals[info.var + "_dims"] = "const int64_t[" + std::to_string(state.getTensorType().getRank()) + "]";
  }
  for (const CommGroups::Group &g : comms.groups)
    globals[g.var] = "ptrain_comm_t";
  std::vector<target::EmittedFunction> bodies;
  for (auto &emitter : emitters)
    bodies.push_back(emitter->takeChunks());
  auto globalType = [&](StringRef name) { return globals.lookup(name); };
  // A state's pointer is also its entry of kStates (allocateStateBlocks sets both): a layer's block reads
  // its states by their indices in its row.
  llvm::StringMap<std::pair<std::string, int64_t>> stateEntries;
  for (StateOp state : stateOrder) {
    const StateInfo &info = states[state.getSymNameAttr()];
    stateEntries[info.var] = {std::string("static_cast<") +
                                  (state.getTensorType().getElementType().isF32() ? "float" : "int64_t") +
                                  " *>(kStates[#].data)",
                              info.index};
  }
  auto tableEntry = [&](StringRef name) { return stateEntries.lookup(name); };
  target::OutlineOptions outline;
  outline.globalType = globalType; // function_refs: the lambdas outlive the call
  outline.tableEntry = tableEntry;
  target::OutlineResult outlined = target::outlineRepeatedBlocks(bodies, outline, options.outlineBlocks);
  for (auto [emitter, body] : llvm::zip_equal(emitters, outlined.bodies))
    if (failed(emitter->writeFunction(functions, body)))
      return failure();

  // Pipeline modules: ptrain_step_train / ptrain_step_eval dispatch to this rank's lowered step
  // (--ptrain-lower-to-runtime: functions with ptrain.entry and ptrain.stage).
  const bool pipeline = module->hasAttr("ptrain.pipeline");
  std::string driverCode;
  if (pipeline) {
    std::set<int64_t> stages;
    for (auto &entry : stageStates)
      stages.insert(entry.first);
    if (failed(emitPipelineDriver(module, comms, stages, driverCode, entryNames)))
      return failure();
  } else if (module->hasAttr("ptrain.schedule")) {
    return mlir::emitError(module.getLoc(), "--emit-cpp: ptrain.schedule without ptrain.pipeline");
  }
  const bool hasComm = !comms.groups.empty();
  int64_t worldSize = 1;
  int64_t ppAxis = -1;
  if (hasComm) {
    for (auto [d, size] : llvm::enumerate(comms.theGrid.getShape())) {
      worldSize *= size;
      if (cast<StringAttr>(comms.theGrid.getAxisNames()[d]).getValue() == "pp")
        ppAxis = d;
    }
  }

  std::string onnxFile;
  if (auto file = module->getAttrOfType<StringAttr>("ptrain.onnx_file"))
    onnxFile = file.getValue().str();

  std::string out;
  llvm::raw_string_ostream s(out);
  s << "// Generated by ptrain-translate --emit-cpp. Do not edit.\n"
       "//\n"
       "// A compiled ptrain training step for the CPU (docs/CodegenCpu.md): static state storage with a keyed\n"
       "// table, one static arena planned by liveness, and calls of the ptrain runtime's call table only\n"
       "// (include/ptrain/Runtime/RuntimeCalls.def). Every call's status is checked and returned; the cause is\n"
       "// in ptrain_step_last_error(). The entry points share the arena and the state: they are not reentrant.\n"
       "//\n"
       "// Entry points: ";
  llvm::interleave(entryNames, s, ", ");
  s << "\n\n"
       "#include \"ptrain/Runtime/ptrain_runtime.h\"\n\n"
       "#include <cstdarg>\n"
       "#include <cstdint>\n"
       "#include <cstdio>\n"
       "#include <vector>\n\n"
       "#define PTRAIN_STEP_API __attribute__((visibility(\"default\")))\n"
       "#define PTRAIN_STEP_CALL(call)                                                 \\\n"
       "  do {                                                                         \\\n"
       "    const ptrain_status_t ptrain_status_ = (call);                             \\\n"
       "    if (ptrain_status_ != PTRAIN_OK) {                                         \\\n"
       "      step_error_own = false;                                                  \\\n"
       "      return ptrain_status_;                                                   \\\n"
       "    }                                                                          \\\n"
       "  } while (0)\n"
       "/// A call of a repeated block (BlockOutliner.h): the runtime calls inside it set the error's owner.\n"
       "#define PTRAIN_STEP_FORWARD(call)                                              \\\n"
       "  do {                                                                         \\\n"
       "    const ptrain_status_t ptrain_status_ = (call);                             \\\n"
       "    if (ptrain_status_ != PTRAIN_OK)                                           \\\n"
       "      return ptrain_status_;                                                   \\\n"
       "  } while (0)\n\n"
       "namespace {\n\n"
       "/// Errors the step itself detects (the runtime's are in ptrain_last_error()).\n"
       "char step_error[512];\n"
       "bool step_error_own = false;\n"
       "[[maybe_unused]] __attribute__((format(printf, 1, 2))) ptrain_status_t stepError(const char *format, ...) {\n"
       "  va_list args;\n"
       "  va_start(args, format);\n"
       "  std::vsnprintf(step_error, sizeof(step_error), format, args);\n"
       "  va_end(args);\n"
       "  step_error_own = true;\n"
       "  return PTRAIN_ERROR_INVALID_ARGUMENT;\n"
       "}\n\n"
       "//===--- State storage (";
  s << stateOrder.size() << " states) ---===//\n\n";
  for (StateOp state : stateOrder) {
    const StateInfo &info = states[state.getSymNameAttr()];
    RankedTensorType type = state.getTensorType();
    bool f = type.getElementType().isF32();
    s << "// @" << state.getSymName() << " key \"" << state.getKey() << "\" kind " << stringifyStateKind(state.getKind())
      << " : " << type << "\n";
    s << (f ? "float *" : "int64_t *") << info.var << " = nullptr;\n";
    if (type.getRank() > 0)
      s << "const int64_t " << info.var << "_dims[" << type.getRank() << "] = {" << joinInts(type.getShape())
        << "};\n";
  }
  // The tables' data pointers are set when the storage is allocated (allocateStorage).
  auto stateTable = [&](StringRef name, ArrayRef<StateOp> list) {
    s << "\nptrain_state_desc_t " << name << "[] = {\n";
    for (StateOp state : list) {
      s << "    " << stateDescriptor(state, states[state.getSymNameAttr()].var, "nullptr") << ",\n";
    }
    if (list.empty())
      s << "    {nullptr, nullptr, PTRAIN_DTYPE_F32, 0, 0, nullptr, PTRAIN_STATE_INIT_NONE, 0},\n";
    s << "};\n";
  };
  stateTable("kStates", stateOrder);
  s << "constexpr int64_t kNumStates = " << stateOrder.size() << ";\n";
  if (pipeline) {
    s << "\n// The states each pipeline stage's functions use: a rank initializes, saves and loads its stage's.\n";
    for (auto &[stage, list] : stageStates) {
      stateTable("kStage" + std::to_string(stage) + "States", list.getArrayRef());
      s << "constexpr int64_t kNumStage" << stage << "States = " << list.size() << ";\n";
    }
  }
  s << "/// The states this process owns (the stage's in a pipeline; set by ptrain_step_init).\n";
  s << "const ptrain_state_desc_t *active_states = kStates;\nint64_t num_active_states = kNumStates;\n\n";
  s << "//===--- Constants ---===//\n\n" << constants;
  s << "//===--- The arenas: every intermediate tensor and kernel scratch, offsets planned by liveness ---===//\n\n";
  s << "/// The buffers of the functions that call no other (allocated by ptrain_step_init).\n"
       "unsigned char *ptrain_arena = nullptr;\n";
  for (const FunctionArena &a : arenas)
    if (!a.name.empty())
      s << "/// The buffers of a function that calls others (its callees use ptrain_arena): " << a.bytes
        << " bytes.\nunsigned char *" << a.name << " = nullptr;\n";
  s << "\n";
  if (hasComm) {
    s << "//===--- Communicators: MPI_COMM_WORLD's duplicate and one group per (grid, axes), created by "
         "ptrain_step_init ---===//\n\n";
    s << "ptrain_comm_t ptrain_world = nullptr;\nint32_t ptrain_rank = 0;\n";
    emitGridDeclarations(comms, worldSize, "ptrain_comm_t", s);
    s << "/// The group of this rank over the axes with in_group[d]: the ranks equal to it on every other axis,\n"
         "/// in increasing order (row-major over the group's axes). A subgroup (sub_axis >= 0): only the ranks\n"
         "/// whose coordinate on sub_axis is one of sub_members; a rank outside it creates nothing (*out = NULL).\n"
         "ptrain_status_t createGroup(const bool *in_group, ptrain_comm_t *out, int32_t sub_axis = -1,\n"
         "                            const int64_t *sub_members = nullptr, int32_t num_sub = 0) {\n"
         "  auto in_subgroup = [&](int32_t q) {\n"
         "    if (sub_axis < 0)\n"
         "      return true;\n"
         "    for (int32_t i = 0; i < num_sub; ++i)\n"
         "      if (gridCoordinate(q, sub_axis) == sub_members[i])\n"
         "        return true;\n"
         "    return false;\n"
         "  };\n"
         "  if (!in_subgroup(ptrain_rank)) {\n"
         "    *out = nullptr;\n"
         "    return PTRAIN_OK;\n"
         "  }\n"
         "  int32_t ranks[kWorldSize];\n"
         "  int32_t n = 0;\n"
         "  for (int32_t q = 0; q < kWorldSize; ++q) {\n"
         "    bool member = in_subgroup(q);\n"
         "    for (int32_t d = 0; d < kGridRank; ++d)\n"
         "      member = member && (in_group[d] || gridCoordinate(q, d) == gridCoordinate(ptrain_rank, d));\n"
         "    if (member)\n"
         "      ranks[n++] = q;\n"
         "  }\n"
         "  PTRAIN_STEP_CALL("
      << getRuntimeCallInfo(RuntimeCall::ptrain_comm_create_group).name
      << "(ptrain_world, ranks, n, out));\n"
         "  return PTRAIN_OK;\n"
         "}\n\n";
  }
  if (failed(emitStorageAllocation(pipeline, arenas, s)))
    return failure();
  // Parameters --ptrain-shard-tp sliced: ptrain_step_init loads them through initStates (EmitCollectives.h).
  SmallVector<TPSlice> slices;
  for (StateOp state : stateOrder) {
    FailureOr<std::optional<TPSlice>> slice =
        readTPSlice(state, hasComm ? comms.theGrid : GridOp(), states[state.getSymNameAttr()].var);
    if (failed(slice))
      return failure();
    if (*slice)
      slices.push_back(std::move(**slice));
  }
  if (!slices.empty())
    emitTPStateInit(slices, s);
  emitTelemetryState(sites, {getRuntimeCallInfo(RuntimeCall::ptrain_codec_metrics_f32).name}, s);
  s << "\n} // namespace\n\n";
  s << "//===--- State management ---===//\n\n";
  s << "/// The message of the last failed entry point: the step's own or the runtime's (ptrain_last_error()).\n";
  s << "extern \"C\" PTRAIN_STEP_API const char *ptrain_step_last_error(void) {\n"
       "  return step_error_own ? step_error : ptrain_last_error();\n}\n\n";
  s << "/// Loads every parameter by key from the ONNX model at `weights_onnx_path` (and its external data) and\n"
       "/// zeroes every other state (optimizer moments, step counter). NULL means the model this step was\n"
       "/// compiled from: "
    << (onnxFile.empty() ? std::string("(none recorded)") : onnxFile) << ".\n";
  if (hasComm)
    s << "/// First initializes MPI (ptrain_comm_init) and creates the communicators; the world must have "
      << worldSize << " ranks.\n";
  if (pipeline)
    s << "/// A rank owns the states of its pipeline stage (its coordinate on pp).\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_init(const char *weights_onnx_path) {\n";
  s << "  const char *path = weights_onnx_path ? weights_onnx_path : "
    << (onnxFile.empty() ? std::string("nullptr") : stringLiteral(onnxFile)) << ";\n";
  if (hasComm) {
    s << "  if (!ptrain_world) {\n";
    s << "    ptrain_comm_t world = nullptr;\n";
    s << "    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_init).name << "(&world));\n";
    s << "    int32_t size = 0;\n";
    s << "    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_size).name << "(world, &size));\n";
    s << "    if (size != kWorldSize) {\n";
    s << "      " << getRuntimeCallInfo(RuntimeCall::ptrain_comm_destroy).name << "(world);\n";
    s << "      return stepError(\"ptrain_step_init: the step was compiled for " << worldSize
      << " ranks (grid @" << comms.theGrid.getSymName()
      << ") but MPI_COMM_WORLD has %d; launch it with mpirun -np " << worldSize << "\", static_cast<int>(size));\n";
    s << "    }\n";
    s << "    ptrain_world = world;\n";
    s << "    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_rank).name
      << "(ptrain_world, &ptrain_rank));\n";
    for (const CommGroups::Group &g : comms.groups)
      emitCreateGroupCall(g, s);
    if (ppAxis >= 0)
      s << "    ptrain_stage = static_cast<int32_t>(gridCoordinate(ptrain_rank, " << ppAxis << "));\n";
    if (pipeline) {
      s << "    switch (ptrain_stage) {\n";
      for (auto &entry : stageStates)
        s << "    case " << entry.first << ":\n      active_states = kStage" << entry.first
          << "States;\n      num_active_states = kNumStage" << entry.first << "States;\n      break;\n";
      s << "    }\n";
    }
    s << "  }\n";
  }
  s << "  PTRAIN_STEP_CALL(allocateStorage());\n";
  if (slices.empty())
    s << "  PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_state_init_onnx).name
      << "(active_states, num_active_states, path));\n  return PTRAIN_OK;\n}\n\n";
  else
    s << "  PTRAIN_STEP_CALL(initStates(path));\n  return PTRAIN_OK;\n}\n\n";
  if (hasComm) {
    s << "/// This process's rank in MPI_COMM_WORLD and its pipeline stage (valid after ptrain_step_init).\n";
    s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_rank(int32_t *out_rank, int32_t *out_stage) {\n"
         "  if (!ptrain_world)\n    return stepError(\"ptrain_step_rank: call ptrain_step_init first\");\n"
         "  *out_rank = ptrain_rank;\n  *out_stage = ptrain_stage;\n  return PTRAIN_OK;\n}\n\n";
    s << "/// Frees the storage, destroys the communicators (and finalizes MPI if ptrain_step_init initialized it).\n";
    s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_finalize(void) {\n";
    s << "  PTRAIN_STEP_CALL(releaseStorage());\n";
    for (const CommGroups::Group &g : llvm::reverse(comms.groups))
      s << "  if (" << g.var << ") {\n    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_destroy).name
        << "(" << g.var << "));\n    " << g.var << " = nullptr;\n  }\n";
    s << "  if (ptrain_world) {\n    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_destroy).name
      << "(ptrain_world));\n    ptrain_world = nullptr;\n  }\n  return PTRAIN_OK;\n}\n\n";
    emitTrafficEntryPoints(trafficGroups(comms), s);
    s << "/// Ends every rank of the job (MPI_Abort): the recovery after a communication error.\n";
    s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_abort(int32_t error_code) {\n"
         "  if (!ptrain_world)\n    return PTRAIN_OK;\n"
         "  PTRAIN_STEP_CALL("
      << getRuntimeCallInfo(RuntimeCall::ptrain_comm_abort).name << "(ptrain_world, error_code));\n"
         "  return PTRAIN_OK;\n}\n\n";
  }
  if (!hasComm)
    s << "/// Frees the storage ptrain_step_init allocated (a later ptrain_step_init allocates it again).\n"
         "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_finalize(void) {\n"
         "  PTRAIN_STEP_CALL(releaseStorage());\n  return PTRAIN_OK;\n}\n\n";
  s << "/// The bytes of this process's storage by kind (0 before ptrain_step_init): states, arenas and the\n"
       "/// constants read from the constant file; together what ptrain_allocated_bytes counts for this step.\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_storage_bytes(int64_t *out_state_bytes,\n"
       "                                                                   int64_t *out_arena_bytes,\n"
       "                                                                   int64_t *out_constant_bytes) {\n"
       "  *out_state_bytes = storage_state_bytes;\n  *out_arena_bytes = storage_arena_bytes;\n"
       "  *out_constant_bytes = storage_constant_bytes;\n  return PTRAIN_OK;\n}\n\n";
  emitStorageEntryPoints(s);
  s << "/// Writes every state this process owns by key to a checkpoint (format: docs/CodegenCpu.md).\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_save(const char *path) {\n";
  s << "  PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_checkpoint_save).name
    << "(active_states, num_active_states, path));\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Reads every state this process owns by key from a checkpoint written by ptrain_step_save.\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_load(const char *path) {\n";
  s << "  PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_checkpoint_load).name
    << "(active_states, num_active_states, path));\n  return PTRAIN_OK;\n}\n\n";
  s << "/// The state table this process owns: key, storage, dtype, kind and shape of every state.\n";
  s << "extern \"C\" PTRAIN_STEP_API int64_t ptrain_step_num_states(void) { return num_active_states; }\n";
  s << "extern \"C\" PTRAIN_STEP_API const ptrain_state_desc_t *ptrain_step_states(void) { return active_states; }"
       "\n\n";
  emitTelemetryEntryPoints(sites, hasComm, s);
  if (!outlined.definitions.empty()) {
    s << "//===--- Repeated blocks (" << outlined.numBlocks << " functions for " << outlined.numOccurrences
      << " calls): identical layers written once (BlockOutliner.h) ---===//\n\n";
    for (auto &emitter : emitters)
      s << emitter->getDeclaration();
    s << "\nnamespace {\n\n" << outlined.definitions << "} // namespace\n\n";
  }
  s << "//===--- Entry points ---===//\n\n" << functions;
  s << driverCode;
  os << out;
  return success();
}

} // namespace

LogicalResult mlir::ptrain::emitCpp(ModuleOp module, raw_ostream &os, const EmitCppOptions &options) {
  CppEmitter emitter(module, options);
  std::string code;
  llvm::raw_string_ostream codeOs(code);
  if (failed(emitter.emit(codeOs)))
    return failure();
  if (!options.constantsFile.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream file(options.constantsFile, ec, llvm::sys::fs::OF_None);
    if (ec)
      return mlir::emitError(module.getLoc(), "--emit-cpp: cannot write the constant file '")
             << options.constantsFile << "': " << ec.message();
    file << emitter.getConstantFile().bytes;
    file.close();
    if (file.has_error())
      return mlir::emitError(module.getLoc(), "--emit-cpp: cannot write the constant file '")
             << options.constantsFile << "': " << file.error().message();
  }
  os << code;
  return success();
}

void mlir::ptrain::registerEmitCppTranslation() {
  static llvm::cl::opt<std::string> constantsFile(
      "emit-cpp-constants", llvm::cl::value_desc("file"),
      llvm::cl::desc("--emit-cpp: write the large constants that are not generated (ConstantForm.h) to this file, "
                     "which the step reads at init from the directory of its libstep.so"),
      llvm::cl::init(""));
  static llvm::cl::opt<bool> outlineBlocks(
      "emit-cpp-outline",
      llvm::cl::desc("--emit-cpp: write repeated runs of ops (identical layers) once as functions called per "
                     "occurrence (default); =false writes every op inline"),
      llvm::cl::init(true));
  TranslateFromMLIRRegistration reg(
      "emit-cpp", "emit a ptrain training step as C++ calling the ptrain runtime (CPU target)",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("--emit-cpp: expected a builtin.module");
        EmitCppOptions options;
        options.constantsFile = constantsFile;
        options.outlineBlocks = outlineBlocks;
        return emitCpp(module, os, options);
      },
      [](DialectRegistry &registry) {
        registry.insert<PTrainDialect, func::FuncDialect, arith::ArithDialect>();
      });
}
