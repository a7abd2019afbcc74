//===- BufferLiveness.cpp - Where a function's values live, and when -------===//
//
// See BufferLiveness.h. docs/TrainingStep.md, "The memory plan", has the
// rules and an example; docs/CodegenCpu.md, "Storage", the generated code.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/BufferLiveness.h"

#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/SetVector.h"

#include <functional>

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

/// The tensor a value holds (its own type, or the value a request yields), or null.
RankedTensorType tensorOf(Value v) {
  Type type = v.getType();
  if (auto request = dyn_cast<RequestType>(type))
    type = request.getValueType();
  auto tensor = dyn_cast_or_null<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor : RankedTensorType();
}

/// Bytes of the tensor a value holds (i1: one byte per element); 0 for anything else.
int64_t bytesOf(Value v) {
  RankedTensorType tensor = tensorOf(v);
  if (!tensor)
    return 0;
  Type e = tensor.getElementType();
  return tensor.getNumElements() * (e.isInteger(1) ? 1 : (e.getIntOrFloatBitWidth() + 7) / 8);
}

int64_t countOf(Value v) {
  RankedTensorType tensor = tensorOf(v);
  return tensor ? tensor.getNumElements() : 0;
}

/// `shape` as rows x cols split before dimension `axis` (negative: from the end).
std::pair<int64_t, int64_t> rowsCols(ArrayRef<int64_t> shape, int64_t axis) {
  if (axis < 0)
    axis += shape.size();
  auto product = [](ArrayRef<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  };
  return {product(shape.take_front(axis)), product(shape.drop_front(axis))};
}
} // namespace

//===----------------------------------------------------------------------===//
// Arena placement
//===----------------------------------------------------------------------===//

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

SmallVector<Value> mlir::ptrain::valuesHeldUntilWait(WaitOp wait) {
  SmallVector<Value> held;
  Operation *start = wait.getRequest().getDefiningOp();
  if (auto a = dyn_cast_or_null<AllReduceStartOp>(start))
    held.push_back(a.getInput());
  if (auto r = dyn_cast_or_null<ReduceScatterStartOp>(start))
    held.push_back(r.getInput());
  if (auto g = dyn_cast_or_null<AllGatherStartOp>(start))
    held.push_back(g.getInput());
  if (auto c = dyn_cast_or_null<CompressedAllReduceStartOp>(start)) {
    held.push_back(c.getInput());
    held.append(c.getNewState().begin(), c.getNewState().end());
  }
  return held;
}

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

void mlir::ptrain::cpuKernelScratch(Operation *op, SmallVectorImpl<int64_t> &bytes) {
  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    bytes.push_back(4 * countOf(e.getIds())); // int32 ids
  } else if (auto e = dyn_cast<EmbeddingGradOp>(op)) {
    bytes.push_back(4 * countOf(e.getIds()));
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    auto [rows, cols] = rowsCols(tensorOf(ln.getInput()).getShape(), ln.getNormalizedAxis());
    if (!ln.getBias())
      bytes.push_back(4 * cols); // a zero bias
    bytes.append({4 * rows, 4 * rows}); // mean, rstd
  } else if (auto g = dyn_cast<LayerNormGradOp>(op)) {
    auto [rows, cols] = rowsCols(tensorOf(g.getInput()).getShape(), g.getAxisAttr().getInt());
    // Zero bias, the recomputed output, mean, rstd (the forward recomputes them), the bias gradient if unused.
    bytes.append({4 * cols, 4 * rows * cols, 4 * rows, 4 * rows});
    if (!g.getBiasGrad())
      bytes.push_back(4 * cols);
  } else if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    bytes.append({4 * countOf(ce.getLabels()), 4 * countOf(ce.getLabels())}); // int32 labels, log-sum-exp
  } else if (auto ce = dyn_cast<CrossEntropyGradOp>(op)) {
    bytes.append({4 * countOf(ce.getLabels()), 4 * countOf(ce.getLabels()), 4}); // and the recomputed loss
  }
}

StorageRules StorageRules::cpu() {
  StorageRules rules;
  rules.scratch = cpuKernelScratch;
  return rules;
}

StorageRules StorageRules::cuda() {
  StorageRules rules;
  rules.holdUntilWait = false;
  rules.generateConstants = false;
  rules.adamWRuns = false;
  rules.accumulateGemmsIntoStates = false;
  rules.foldHeadPermutes = false;
  rules.layerNormSavedStats = false;
  rules.alignment = 256;
  return rules;
}

//===----------------------------------------------------------------------===//
// The analysis
//===----------------------------------------------------------------------===//

BufferLiveness::BufferLiveness(func::FuncOp func, StorageRules rules) : func(func), rules(std::move(rules)) {
  if (func.isExternal())
    return;
  for (Operation &op : func.getBody().front()) {
    opIndex[&op] = opList.size();
    opList.push_back(&op);
  }
}

const ValueStorage &BufferLiveness::lookup(Value v) const {
  static const ValueStorage none;
  auto it = storage.find(v);
  return it == storage.end() ? none : it->second;
}

ArrayRef<int64_t> BufferLiveness::scratchOf(Operation *op) const {
  auto it = scratch.find(op);
  return it == scratch.end() ? ArrayRef<int64_t>() : ArrayRef<int64_t>(it->second);
}

const ConstantForm *BufferLiveness::formOf(Value v) const {
  auto it = forms.find(v);
  return it == forms.end() ? nullptr : &it->second;
}

std::optional<int64_t> BufferLiveness::fillIndexOf(Value v) const {
  auto it = fillIndex.find(v);
  return it == fillIndex.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

Operation *BufferLiveness::findSavedStats(LayerNormGradOp g) const {
  const int64_t at = opIndex.lookup(g.getOperation());
  auto [rows, cols] = rowsCols(tensorOf(g.getInput()).getShape(), g.getAxisAttr().getInt());
  for (int64_t i = at - 1; i >= 0; --i) {
    auto ln = dyn_cast<LayerNormOp>(opList[i]);
    if (!ln || ln.getInput() != g.getInput() || ln.getScale() != g.getScale() ||
        ln.getEpsilonAttr() != g.getEpsilonAttr() || !scratch.count(ln))
      continue;
    // The same rows: the statistics are per row of the same [rows, cols] view.
    if (rowsCols(tensorOf(ln.getInput()).getShape(), ln.getNormalizedAxis()) != std::pair(rows, cols))
      continue;
    ArrayRef<int64_t> fwdScratch = scratch.find(ln)->second;
    if (fwdScratch.size() < 2 || bufferList[fwdScratch.back()].bytes != 4 * rows)
      continue;
    return ln;
  }
  return nullptr;
}

int64_t BufferLiveness::addScratch(Operation *op, int64_t bytes) {
  int64_t i = opIndex.lookup(op);
  bufferList.push_back({i, i, bytes});
  valueOfBuffer.push_back(Value());
  scratch[op].push_back(bufferList.size() - 1);
  return bufferList.size() - 1;
}

int64_t BufferLiveness::place() {
  arena = planArenaGreedyBySize(bufferList, rules.alignment);
  return arena;
}

void BufferLiveness::run(bool placeBuffers) {
  if (func.isExternal())
    return;
  if (rules.fuseGemms)
    gemmFusion.emplace(opList, rules.gemmFusionOptions());
  // A compressed all-reduce's new state is written to its state after the wait (the emitters defer it).
  for (Operation *op : opList)
    if (auto start = dyn_cast<CompressedAllReduceStartOp>(op))
      for (Value v : start.getNewState())
        for (Operation *user : v.getUsers())
          if (isa<StateWriteOp>(user))
            deferredWrites.insert(user);
  if (rules.adamWRuns) {
    runs = findAdamWRuns(opList, deferredWrites);
    for (const AdamWRun &run : runs)
      for (Operation *op : run.ops)
        runOf[op] = &run;
  }
  auto isDead = [&](Operation *op) { return gemmFusion && gemmFusion->isDead(op); };
  auto isFolded = [&](Operation *op) { return gemmFusion && gemmFusion->isFolded(op); };
  auto aliasOf = [&](Operation *op) { return gemmFusion ? gemmFusion->aliasOf(op) : Value(); };

  for (BlockArgument arg : func.getBody().front().getArguments()) {
    ValueStorage s;
    s.kind = ValueStorage::Argument;
    s.isConst = true;
    storage[arg] = s;
  }
  // The writes of each state, by op index; a call writes every state its callee (or a function it calls)
  // writes (a state read before a stage function's call and used after it is copied).
  llvm::DenseMap<StringAttr, SmallVector<int64_t>> writesOf;
  auto module = func->getParentOfType<ModuleOp>();
  llvm::DenseMap<Operation *, llvm::SetVector<StringAttr>> writtenBy; // per callee, computed once
  std::function<const llvm::SetVector<StringAttr> &(func::FuncOp)> statesWritten =
      [&](func::FuncOp callee) -> const llvm::SetVector<StringAttr> & {
    auto [it, inserted] = writtenBy.try_emplace(callee.getOperation());
    if (!inserted)
      return it->second; // done, or in progress (recursion: its own writes are being collected)
    llvm::SetVector<StringAttr> written;
    callee.walk([&](Operation *inner) {
      if (auto write = dyn_cast<StateWriteOp>(inner))
        written.insert(write.getStateAttr().getAttr());
      else if (auto call = dyn_cast<func::CallOp>(inner))
        if (auto next = module.lookupSymbol<func::FuncOp>(call.getCallee()))
          for (StringAttr sym : statesWritten(next))
            written.insert(sym);
    });
    return writtenBy[callee.getOperation()] = std::move(written);
  };
  for (Operation *op : opList) {
    // A GEMM accumulating into a state writes it (a read of it used after the GEMM is a copy).
    if (StringAttr sym = gemmFusion ? gemmFusion->accumulatedState(op) : StringAttr())
      writesOf[sym].push_back(opIndex[op]);
    if (auto write = dyn_cast<StateWriteOp>(op))
      writesOf[write.getStateAttr().getAttr()].push_back(opIndex[op]);
    else if (auto call = dyn_cast<func::CallOp>(op); call && module)
      if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
        for (StringAttr sym : statesWritten(callee))
          writesOf[sym].push_back(opIndex[op]);
  }

  // Values sharing memory with a root (aliases) extend the root's liveness.
  llvm::DenseMap<Value, int64_t> lastUse;
  auto rootOf = [&](Value v) {
    for (auto it = storage.find(v); it != storage.end() && it->second.kind == ValueStorage::Alias;
         it = storage.find(v))
      v = it->second.root;
    return v;
  };
  for (Operation *op : opList) {
    const int64_t i = opIndex[op];
    ArrayRef<Value> extra = gemmFusion ? gemmFusion->extraReads(op) : ArrayRef<Value>();
    for (Value operand : llvm::concat<const Value>(op->getOperands(), extra)) {
      Value root = rootOf(operand);
      lastUse[root] = std::max(lastUse.lookup(root), i);
    }
    for (Value result : op->getResults()) {
      ValueStorage s;
      if (auto c = dyn_cast<arith::ConstantOp>(op)) {
        s.kind = ValueStorage::Constant;
        s.isConst = true;
        auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
        if (rules.generateConstants && attr) {
          ConstantForm form = classifyConstant(attr);
          forms[result] = form;
          if (form.kind == ConstantForm::File && !isDead(op))
            fileBytes += bytesOf(result);
          if (form.kind != ConstantForm::Literal && form.kind != ConstantForm::File) {
            // Generated into an arena buffer at its first use, or, a splat only written to states, by the
            // writes themselves (a memset of the gradient accumulators).
            s.kind = ValueStorage::Arena;
            s.isConst = false;
            int64_t first = INT64_MAX;
            bool onlyWrites = form.kind == ConstantForm::Splat && !result.use_empty();
            for (Operation *user : result.getUsers()) {
              first = std::min(first, opIndex.lookup(user));
              onlyWrites = onlyWrites && isa<StateWriteOp>(user) && !deferredWrites.contains(user);
            }
            if (onlyWrites)
              s.kind = ValueStorage::Virtual;
            // One constant several ops read (a causal mask every layer's attention reads) is generated where
            // it is defined: generated inside its first user's chunk it would make that layer differ from the
            // others (lib/Target/Common/BlockOutliner.h).
            llvm::SmallPtrSet<Operation *, 4> users(result.getUsers().begin(), result.getUsers().end());
            fillIndex[result] =
                result.use_empty() || (users.size() > 1 && s.kind == ValueStorage::Arena) ? i : first;
          }
        }
      } else if (isa<ReshapeOp, TPCopyOp>(op) || aliasOf(op)) {
        // A reshape, Megatron's f (identity forward), a transpose its input's GEMM wrote and a bias add its
        // product's GEMM did (GemmFusion.h): an alias of the input.
        s.kind = ValueStorage::Alias;
        s.root = aliasOf(op) ? aliasOf(op) : op->getOperand(0);
        s.isConst = lookup(rootOf(s.root)).isConst;
      } else if (StringAttr sym = gemmFusion ? gemmFusion->accumulatedState(op) : StringAttr()) {
        s.kind = ValueStorage::State; // the product in its gradient state (GemmFusion.h)
        s.state = sym;
      } else if (isa<StateReadOp>(op)) {
        s.kind = ValueStorage::State; // may become Arena below
      } else if (auto send = dyn_cast<SendStartOp>(op)) {
        // The request holds the sent buffer until its wait.
        s.kind = ValueStorage::Alias;
        s.root = send.getInput();
      } else if (auto wait = dyn_cast<WaitOp>(op)) {
        // The wait yields the buffer its start op received or reduced into.
        s.kind = ValueStorage::Alias;
        s.root = wait.getRequest();
      }
      storage[result] = s;
      lastUse[result] = std::max(lastUse.lookup(result), i);
    }
  }
  // A collective reads its input until its wait (MPI holds the buffer; a compressed all-reduce without error
  // feedback reads it again in its second phase), and a compressed all-reduce's new states are written back
  // after its wait.
  if (rules.holdUntilWait)
    for (Operation *op : opList)
      if (auto wait = dyn_cast<WaitOp>(op))
        for (Value v : valuesHeldUntilWait(wait)) {
          Value root = rootOf(v);
          lastUse[root] = std::max(lastUse.lookup(root), opIndex[op]);
        }
  // A state read is used in place unless a write of that state comes before one of its (alias) uses; writes
  // before the read do not matter: it reads the storage after them.
  for (Operation *op : opList) {
    auto read = dyn_cast<StateReadOp>(op);
    if (!read || isFolded(op)) // folded: the old value a GEMM accumulated into (GemmFusion.h), never read
      continue;
    int64_t firstWrite = INT64_MAX;
    for (int64_t w : writesOf.lookup(read.getStateAttr().getAttr()))
      if (w > opIndex[op])
        firstWrite = std::min(firstWrite, w);
    if (lastUse[read.getResult()] > firstWrite)
      storage[read.getResult()].kind = ValueStorage::Arena;
  }
  // The buffers: the values in op order, then the kernels' scratch in op order.
  for (Operation *op : opList)
    for (Value result : op->getResults()) {
      ValueStorage &s = storage[result];
      if (s.kind != ValueStorage::Arena || isFolded(op) || isDead(op) || runOf.count(op))
        continue;
      if (!tensorOf(result)) { // a send's request, or a value of no tensor type: no memory of its own
        s.kind = ValueStorage::Virtual;
        continue;
      }
      auto fill = fillIndex.find(result);
      int64_t first = fill != fillIndex.end() ? fill->second : opIndex[op];
      bufferList.push_back({first, std::max(first, lastUse[result]), bytesOf(result)});
      valueOfBuffer.push_back(result);
      s.buffer = bufferList.size() - 1;
    }
  if (rules.scratch) {
    SmallVector<int64_t> bytes;
    for (Operation *op : opList) {
      if (isFolded(op) || isDead(op) || runOf.count(op))
        continue;
      // A layer norm's gradient reading its forward's saved statistics: only its unused bias gradient as scratch,
      // and the forward's mean and rstd live until here.
      if (auto g = dyn_cast<LayerNormGradOp>(op); g && rules.layerNormSavedStats) {
        if (Operation *fwd = findSavedStats(g)) {
          savedStats[op] = fwd;
          ArrayRef<int64_t> fwdScratch = scratch[fwd];
          for (int64_t b : fwdScratch.take_back(2))
            bufferList[b].last = std::max(bufferList[b].last, opIndex[op]);
          if (!g.getBiasGrad())
            addScratch(op, 4 * rowsCols(tensorOf(g.getInput()).getShape(), g.getAxisAttr().getInt()).second);
          continue;
        }
      }
      bytes.clear();
      rules.scratch(op, bytes);
      for (int64_t b : bytes)
        addScratch(op, b);
    }
  }
  if (placeBuffers)
    place();
}

void BufferLiveness::print(llvm::raw_ostream &os) const {
  os << "@" << func::FuncOp(func).getSymName() << ": arena " << arena << " bytes, " << bufferList.size() << " buffers\n";
  llvm::DenseMap<int64_t, Operation *> scratchOwner;
  for (auto &[op, list] : scratch)
    for (int64_t b : list)
      scratchOwner[b] = op;
  for (auto [i, b] : llvm::enumerate(bufferList)) {
    os << "  #" << i << " [" << b.first << ", " << b.last << "] " << b.bytes << " B at " << b.offset << ": ";
    if (Value v = valueOfBuffer[i])
      v.printAsOperand(os, OpPrintingFlags());
    else
      os << "scratch of '" << scratchOwner.lookup(i)->getName() << "' #" << indexOf(scratchOwner.lookup(i));
    os << "\n";
  }
}
