//===- MemoryPlan.cpp - The schedule-aware memory plan per rank -----------===//
//
// See MemoryPlan.h. docs/TrainingStep.md, "The memory plan", has the
// algorithm and an example.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/MemoryPlan.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Plan/ParameterCasts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <map>
#include <numeric>

using namespace mlir;
using namespace mlir::ptrain;

namespace {
/// Bytes of a tensor, or of the tensor a request yields; 0 for anything else.
int64_t bytesOfType(Type type) {
  if (auto request = dyn_cast<RequestType>(type))
    type = request.getValueType();
  auto tensor = dyn_cast_or_null<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  Type e = tensor.getElementType();
  int64_t elem = e.isInteger(1) ? 1 : (e.getIntOrFloatBitWidth() + 7) / 8;
  return tensor.getNumElements() * elem;
}
} // namespace

FunctionMemoryPlan mlir::ptrain::planFunctionMemory(func::FuncOp func, int64_t alignment) {
  StorageRules rules = StorageRules::cpu();
  rules.alignment = alignment;
  BufferLiveness liveness(func, rules);
  liveness.run();
  FunctionMemoryPlan plan;
  plan.buffers = liveness.buffers();
  plan.values.assign(liveness.bufferValues().begin(), liveness.bufferValues().end());
  plan.arenaBytes = liveness.arenaBytes();
  plan.lowerBoundBytes = liveness.lowerBoundBytes();
  plan.fileConstantBytes = liveness.fileConstantBytes();
  for (const ArenaBuffer &b : plan.buffers)
    plan.sumBytes += b.bytes;
  return plan;
}

int64_t mlir::ptrain::functionLiveBytes(func::FuncOp func, int64_t alignment) {
  StorageRules rules = StorageRules::cpu();
  rules.alignment = alignment;
  BufferLiveness liveness(func, rules);
  liveness.run(/*place=*/false);
  return liveness.lowerBoundBytes();
}

namespace {
/// The functions `root` calls, transitively (without `root`).
SmallVector<func::FuncOp> calleesOf(func::FuncOp root, SymbolTable &symbols) {
  SmallVector<func::FuncOp> result;
  llvm::SmallPtrSet<Operation *, 16> seen{root};
  SmallVector<func::FuncOp> work{root};
  while (!work.empty()) {
    func::FuncOp f = work.pop_back_val();
    f.walk([&](func::CallOp call) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (callee && seen.insert(callee).second) {
        result.push_back(callee);
        work.push_back(callee);
      }
    });
  }
  return result;
}

/// Adds the bytes of every state `fn` references (by any symbol attribute) to `plan`, each state once.
void addStates(func::FuncOp fn, SymbolTable &symbols, llvm::SmallPtrSetImpl<Operation *> &seen, RankMemoryPlan &plan) {
  fn.walk([&](Operation *op) {
    for (NamedAttribute attr : op->getAttrs()) {
      auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
      auto state = ref ? symbols.lookup<StateOp>(ref.getValue()) : StateOp();
      if (!state || !seen.insert(state).second)
        continue;
      int64_t bytes = bytesOfType(state.getType());
      switch (state.getKind()) {
      case StateKind::Parameter:
        plan.parameterBytes += bytes;
        break;
      case StateKind::Gradient:
        plan.gradientBytes += bytes;
        break;
      case StateKind::OptimizerMoment:
        plan.optimizerBytes += bytes;
        break;
      case StateKind::CodecResidual:
      case StateKind::CodecWarmStart:
      case StateKind::CodecSeed:
        plan.codecBytes += bytes;
        break;
      default:
        plan.otherStateBytes += bytes;
        break;
      }
    }
  });
}

/// The most micro-batches whose stash is live at once: each forward call's input, from the call to the
/// backward call that takes the same input (the lowering passes the stashed input to the backward).
int64_t maxStashedOf(func::FuncOp step) {
  // A 16-bit stash is cast back right before each reader (LowerToRuntime's keepStashHalf): the stash is the
  // cast's input.
  auto stashOf = [](Value v) {
    auto cast = v.getDefiningOp<CastOp>();
    return cast && cast.getInput().getDefiningOp<WaitOp>() ? cast.getInput() : v;
  };
  llvm::DenseMap<Value, int64_t> forwardAt;
  std::vector<std::pair<int64_t, int64_t>> intervals;
  int64_t i = 0;
  step.walk([&](func::CallOp call) {
    ++i;
    StringRef callee = call.getCallee();
    // (A stage function's later operands are the step's 16-bit parameter copies, ParameterCasts.h.)
    if (call.getNumOperands() >= 1 && callee.starts_with("forward_stage"))
      forwardAt[stashOf(call.getOperand(0))] = i;
    else if (callee.ends_with("_forward_backward")) // the last stage: its micro-batch, for the call only
      intervals.push_back({i, i});
    else if (callee.ends_with("_backward") && !callee.ends_with("_forward_backward") && call.getNumOperands() > 0)
      if (auto it = forwardAt.find(stashOf(call.getOperand(0))); it != forwardAt.end())
        intervals.push_back({it->second, i});
  });
  int64_t peak = 0;
  for (auto [a, b] : intervals) {
    int64_t live = 0;
    for (auto [c, d] : intervals)
      live += c <= a && a <= d;
    peak = std::max(peak, live);
  }
  return peak;
}
/// Whether `fn` reads or writes a state.
bool usesStates(func::FuncOp fn) {
  return fn.walk([](Operation *op) {
             return isa<StateReadOp, StateWriteOp>(op) ? WalkResult::interrupt() : WalkResult::advance();
           }).wasInterrupted();
}

/// The bytes the generated step allocates at init on the rank of pipeline stage `unit` (-1: a step without
/// pipeline, whose every rank holds the whole module), by the rules of the CPU target's storage
/// (lib/Target/Cpp/EmitCpp.cpp, emitStorageAllocation): the states its stage's functions use (all states
/// without pipeline); one arena per function of the unit that calls others; one arena shared by the others,
/// as large as the largest of them; the constants read from the constant file. A function belongs to the unit
/// when it has its stage or none, except a pipeline's function without a stage that uses states (the unsplit
/// model: it runs on no rank).
int64_t allocatedBytesOf(ModuleOp module, int64_t unit, SymbolTable &symbols,
                         llvm::function_ref<const FunctionMemoryPlan &(func::FuncOp)> planOf) {
  llvm::SmallPtrSet<Operation *, 32> states;
  int64_t stateBytes = 0, ownArenas = 0, sharedArena = 0, constantBytes = 0;
  auto addState = [&](StringAttr sym) {
    if (auto state = symbols.lookup<StateOp>(sym); state && states.insert(state).second)
      stateBytes += bytesOfType(state.getType());
  };
  if (unit < 0)
    for (auto state : module.getOps<StateOp>())
      addState(state.getSymNameAttr());
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    auto stage = getStage(fn);
    if (unit >= 0 && (stage ? stage.getIndex() != unit : usesStates(fn)))
      continue;
    if (unit >= 0 && stage)
      fn.walk([&](Operation *op) {
        if (auto read = dyn_cast<StateReadOp>(op))
          addState(read.getStateAttr().getAttr());
        else if (auto write = dyn_cast<StateWriteOp>(op))
          addState(write.getStateAttr().getAttr());
      });
    const FunctionMemoryPlan &fp = planOf(fn);
    if (!fn.getOps<func::CallOp>().empty())
      ownArenas += fp.arenaBytes;
    else
      sharedArena = std::max(sharedArena, fp.arenaBytes);
    constantBytes += fp.fileConstantBytes;
  }
  return stateBytes + ownArenas + sharedArena + constantBytes;
}
} // namespace

FailureOr<std::vector<RankMemoryPlan>> mlir::ptrain::buildMemoryPlan(ModuleOp module, int64_t alignment) {
  SymbolTable symbols(module);
  std::map<int64_t, func::FuncOp> trainSteps, evalSteps;
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto stage = getStage(fn);
    auto entry = fn->getAttrOfType<StringAttr>("ptrain.entry");
    if (!stage || !entry)
      continue;
    (entry.getValue() == "train" ? trainSteps : evalSteps)[stage.getIndex()] = fn;
  }
  if (trainSteps.empty())
    return emitError(module.getLoc(), "--ptrain-memory-plan: no lowered training step (a function with "
                                      "ptrain.entry = \"train\"); run --ptrain-lower-to-runtime first");
  // Every function's plan, once (a pipeline of many stages asks for the same functions again).
  llvm::DenseMap<Operation *, FunctionMemoryPlan> functionPlans;
  auto planOf = [&](func::FuncOp fn) -> const FunctionMemoryPlan & {
    auto it = functionPlans.find(fn);
    if (it == functionPlans.end())
      it = functionPlans.try_emplace(fn, planFunctionMemory(fn, alignment)).first;
    return it->second;
  };
  const bool pipeline = static_cast<bool>(getPipeline(module));
  std::vector<RankMemoryPlan> plans;
  for (auto &[stage, step] : trainSteps) {
    RankMemoryPlan plan;
    plan.stage = stage;
    llvm::SmallPtrSet<Operation *, 32> seenStates;
    SmallVector<func::FuncOp> roots{step};
    func::FuncOp eval = evalSteps.count(stage) ? evalSteps[stage] : func::FuncOp();
    if (eval)
      roots.push_back(eval);
    for (func::FuncOp root : roots) {
      addStates(root, symbols, seenStates, plan);
      for (func::FuncOp callee : calleesOf(root, symbols)) {
        addStates(callee, symbols, seenStates, plan);
        int64_t bytes = planOf(callee).arenaBytes;
        if (bytes > plan.temporariesBytes) {
          plan.temporariesBytes = bytes;
          plan.temporariesFunction = callee.getSymName().str();
        }
      }
    }
    plan.stashBytes = planOf(step).arenaBytes;
    for (auto cast : step.getBody().getOps<CastOp>())
      if (isParameterCast(cast, symbols))
        plan.parameterCopyBytes += bytesOfType(cast.getType());
    plan.evalBytes = eval ? planOf(eval).arenaBytes : 0;
    plan.maxStashed = maxStashedOf(step);
    plan.allocatedBytes = allocatedBytesOf(module, pipeline ? stage : -1, symbols, planOf);
    plans.push_back(plan);
  }
  return plans;
}
