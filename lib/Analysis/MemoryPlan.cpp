//===- MemoryPlan.cpp - The schedule-aware memory plan per rank -----------===//
//
// See MemoryPlan.h. docs/TrainingStep.md, "The memory plan", has the
// algorithm and an example.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/MemoryPlan.h"
#include "ptrain/Analysis/GemmFusion.h"

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
int64_t alignUp(int64_t x, int64_t alignment) { return (x + alignment - 1) / alignment * alignment; }
int64_t alignedSize(const ArenaBuffer &b, int64_t alignment) {
  return alignUp(std::max<int64_t>(b.bytes, 1), alignment);
}

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

SmallVector<Value> mlir::ptrain::valuesHeldUntilWait(WaitOp wait) {
  SmallVector<Value> held;
  Operation *start = wait.getRequest().getDefiningOp();
  if (auto a = dyn_cast_or_null<AllReduceStartOp>(start))
    held.push_back(a.getInput());
  if (auto c = dyn_cast_or_null<CompressedAllReduceStartOp>(start)) {
    held.push_back(c.getInput());
    held.append(c.getNewState().begin(), c.getNewState().end());
  }
  return held;
}

int64_t mlir::ptrain::planArenaGreedyBySize(std::vector<ArenaBuffer> &buffers, int64_t alignment) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].first < buffers[b].first;
  });
  int64_t arenaBytes = 0;
  std::vector<size_t> placed; // kept sorted by offset
  std::vector<size_t> overlapping;
  for (size_t idx : order) {
    ArenaBuffer &buf = buffers[idx];
    const int64_t size = alignedSize(buf, alignment);
    overlapping.clear();
    for (size_t o : placed)
      if (buffers[o].first <= buf.last && buf.first <= buffers[o].last)
        overlapping.push_back(o);
    // The smallest gap between the overlapping buffers (in offset order) that fits; else after the highest.
    int64_t prevEnd = 0, best = -1, bestGap = INT64_MAX;
    for (size_t o : overlapping) {
      int64_t gap = buffers[o].offset - prevEnd;
      if (gap >= size && gap < bestGap) {
        best = prevEnd;
        bestGap = gap;
      }
      prevEnd = std::max(prevEnd, alignUp(buffers[o].offset + alignedSize(buffers[o], alignment), alignment));
    }
    buf.offset = best >= 0 ? best : prevEnd;
    arenaBytes = std::max(arenaBytes, buf.offset + size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), idx,
                                   [&](size_t a, size_t b) { return buffers[a].offset < buffers[b].offset; }),
                  idx);
  }
  return arenaBytes;
}

int64_t mlir::ptrain::liveBytesLowerBound(const std::vector<ArenaBuffer> &buffers, int64_t alignment) {
  // Sweep over interval ends: +size at first, -size after last.
  std::map<int64_t, int64_t> delta;
  for (const ArenaBuffer &b : buffers) {
    delta[b.first] += alignedSize(b, alignment);
    delta[b.last + 1] -= alignedSize(b, alignment);
  }
  int64_t live = 0, peak = 0;
  for (auto &[index, d] : delta)
    peak = std::max(peak, live += d);
  return peak;
}

namespace {
/// The buffers of `func` and their values (planFunctionMemory without the offsets).
FunctionMemoryPlan collectBuffers(func::FuncOp func) {
  FunctionMemoryPlan plan;
  if (func.isExternal())
    return plan;
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> index;
  func.getBody().walk([&](Operation *op) {
    index[op] = ops.size();
    ops.push_back(op);
  });

  // Aliases share their root's buffer; roots without a buffer (arguments, constants, in-place state reads)
  // are not planned.
  llvm::DenseMap<Value, Value> aliasOf;
  auto rootOf = [&](Value v) {
    for (auto it = aliasOf.find(v); it != aliasOf.end(); it = aliasOf.find(v))
      v = it->second;
    return v;
  };
  llvm::DenseMap<Value, int64_t> lastUse;
  llvm::SetVector<Value> candidates; // values that may take a buffer, in definition order
  llvm::DenseMap<StringRef, SmallVector<int64_t>> writesOf;
  // The generated code's GEMMs read transposes' inputs and batch stacks instead of materializing them
  // (GemmFusion.h): those ops get no buffer and their inputs stay live until the GEMM.
  GemmFusion gemms(ops);
  for (Operation *op : ops) {
    const int64_t i = index[op];
    if (auto write = dyn_cast<StateWriteOp>(op))
      writesOf[write.getState()].push_back(i);
    for (Value operand : llvm::concat<Value>(op->getOperands(), gemms.extraReads(op))) {
      Value root = rootOf(operand);
      lastUse[root] = std::max(lastUse.lookup(root), i);
    }
    for (Value result : op->getResults()) {
      lastUse[result] = std::max(lastUse.lookup(result), i);
      if (isa<arith::ConstantOp>(op) || gemms.isFolded(op) || gemms.isDead(op))
        continue;
      if (isa<ReshapeOp, TPCopyOp>(op) || gemms.aliasOf(op)) {
        aliasOf[result] = gemms.aliasOf(op) ? gemms.aliasOf(op) : op->getOperand(0);
      } else if (auto send = dyn_cast<SendStartOp>(op)) {
        aliasOf[result] = send.getInput(); // the request holds the sent buffer until its wait
      } else if (auto wait = dyn_cast<WaitOp>(op)) {
        aliasOf[result] = wait.getRequest(); // the buffer its start op received or reduced into
      } else if (bytesOfType(result.getType()) > 0) {
        candidates.insert(result);
      }
    }
  }
  // A collective reads its input until its wait; a compressed all-reduce writes its new states after it.
  for (Operation *op : ops) {
    auto wait = dyn_cast<WaitOp>(op);
    if (!wait)
      continue;
    for (Value v : valuesHeldUntilWait(wait)) {
      Value root = rootOf(v);
      lastUse[root] = std::max(lastUse.lookup(root), index[op]);
    }
  }
  for (Value v : candidates) {
    Operation *def = v.getDefiningOp();
    if (auto read = dyn_cast<StateReadOp>(def)) {
      // In place unless a later write of the state comes before a use of the value.
      int64_t firstWrite = INT64_MAX;
      for (int64_t w : writesOf.lookup(read.getState()))
        if (w > index[def])
          firstWrite = std::min(firstWrite, w);
      if (lastUse[v] <= firstWrite)
        continue;
    }
    plan.buffers.push_back({index[def], lastUse[v], bytesOfType(v.getType())});
    plan.values.push_back(v);
    plan.sumBytes += bytesOfType(v.getType());
  }
  return plan;
}
} // namespace

FunctionMemoryPlan mlir::ptrain::planFunctionMemory(func::FuncOp func, int64_t alignment) {
  FunctionMemoryPlan plan = collectBuffers(func);
  plan.arenaBytes = planArenaGreedyBySize(plan.buffers, alignment);
  plan.lowerBoundBytes = liveBytesLowerBound(plan.buffers, alignment);
  return plan;
}

int64_t mlir::ptrain::functionLiveBytes(func::FuncOp func, int64_t alignment) {
  return liveBytesLowerBound(collectBuffers(func).buffers, alignment);
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
  llvm::DenseMap<Value, int64_t> forwardAt;
  std::vector<std::pair<int64_t, int64_t>> intervals;
  int64_t i = 0;
  step.walk([&](func::CallOp call) {
    ++i;
    StringRef callee = call.getCallee();
    if (call.getNumOperands() == 1 && callee.starts_with("forward_stage"))
      forwardAt[call.getOperand(0)] = i;
    else if (callee.ends_with("_forward_backward")) // the last stage: its micro-batch, for the call only
      intervals.push_back({i, i});
    else if (callee.ends_with("_backward") && !callee.ends_with("_forward_backward") && call.getNumOperands() > 0)
      if (auto it = forwardAt.find(call.getOperand(0)); it != forwardAt.end())
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
} // namespace

FailureOr<std::vector<RankMemoryPlan>> mlir::ptrain::buildMemoryPlan(ModuleOp module, int64_t alignment) {
  SymbolTable symbols(module);
  std::map<int64_t, func::FuncOp> trainSteps, evalSteps;
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto stage = fn->getAttrOfType<IntegerAttr>("ptrain.stage");
    auto entry = fn->getAttrOfType<StringAttr>("ptrain.entry");
    if (!stage || !entry)
      continue;
    (entry.getValue() == "train" ? trainSteps : evalSteps)[stage.getInt()] = fn;
  }
  if (trainSteps.empty())
    return emitError(module.getLoc(), "--ptrain-memory-plan: no lowered training step (a function with "
                                      "ptrain.entry = \"train\"); run --ptrain-lower-to-runtime first");
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
        int64_t bytes = planFunctionMemory(callee, alignment).arenaBytes;
        if (bytes > plan.temporariesBytes) {
          plan.temporariesBytes = bytes;
          plan.temporariesFunction = callee.getSymName().str();
        }
      }
    }
    plan.stashBytes = planFunctionMemory(step, alignment).arenaBytes;
    plan.evalBytes = eval ? planFunctionMemory(eval, alignment).arenaBytes : 0;
    plan.maxStashed = maxStashedOf(step);
    plans.push_back(plan);
  }
  return plans;
}
