//===- SplitStages.cpp - pipeline stages from the forward ---------*- C++ -*-===//
//
// --ptrain-split-stages: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "ptrain-split-stages"

namespace mlir::ptrain {
#define GEN_PASS_DEF_SPLITSTAGESPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

/// Balance cost of `op`: its FLOPs from the cost interface (PTrainCost.h; ops without it count one FLOP per
/// result element).
static double opCost(Operation *op) { return getOpCost(op).flops; }

/// The ONNX node name in `loc` (the importer's NameLoc, possibly inside a FusedLoc), or "".
static StringRef onnxNodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location child : fused.getLocations())
      if (StringRef name = onnxNodeName(child); !name.empty())
        return name;
  return "";
}

/// Whether cut name `name` names the op `node`: the node name itself, or a scope of it (`/blocks.2` names
/// `/blocks.2/attn/qkv/MatMul`, not `/blocks.20/...`).
static bool namesNode(StringRef name, StringRef node) {
  return node.consume_front(name) && (node.empty() || node.front() == '/' || name.ends_with("/"));
}

/// Balance: the pieces - 1 layer boundaries (indices into `cutAfter`, in order) that minimize the most
/// expensive stage (exhaustive DP over the boundaries).
static void balanceCuts(ArrayRef<Operation *> work, ArrayRef<size_t> cutAfter, int64_t pieces,
                        SmallVectorImpl<size_t> &cuts) {
  SmallVector<double> prefix = {0};
  for (Operation *op : work)
    prefix.push_back(prefix.back() + opCost(op));
  auto stageCost = [&](int64_t from, int64_t to) { return prefix[to] - prefix[from]; }; // ops [from, to)
  size_t n = cutAfter.size();
  // best[k][c]: minimal max-cost of stages 0..k when stage k ends right after cut c.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(pieces, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> from(pieces, std::vector<int64_t>(n + 1, -1));
  auto endOf = [&](size_t c) { return c == n ? work.size() : cutAfter[c] + 1; };
  for (size_t c = 0; c <= n; ++c)
    best[0][c] = stageCost(0, endOf(c));
  for (int64_t k = 1; k < pieces; ++k)
    for (size_t c = 0; c <= n; ++c)
      for (size_t prev = 0; prev < c; ++prev) {
        double cost = std::max(best[k - 1][prev], stageCost(endOf(prev), endOf(c)));
        if (cost < best[k][c]) {
          best[k][c] = cost;
          from[k][c] = prev;
        }
      }
  for (int64_t k = pieces - 1, c = n; k > 0; --k) {
    c = from[k][c];
    cuts.insert(cuts.begin(), c);
  }
}

namespace {

struct SplitStagesPass : public ptrain::impl::SplitStagesPassBase<SplitStagesPass> {
  using Base::Base;
  void runOnOperation() override;
  /// The user's cuts (the `cuts` option) as indices into `cutAfter` (the layer boundaries), in order: each
  /// name's first work op starts the next stage at the boundary before its layer. Fails with an error naming
  /// the cut that names nothing, only recomputed ops, the first layer, or a layer another cut already starts.
  FailureOr<SmallVector<size_t>> userCutIndices(func::FuncOp forward, ArrayRef<Operation *> work,
                                                ArrayRef<size_t> cutAfter, int64_t pieces);
};

} // namespace

FailureOr<SmallVector<size_t>> SplitStagesPass::userCutIndices(func::FuncOp forward, ArrayRef<Operation *> work,
                                                               ArrayRef<size_t> cutAfter, int64_t pieces) {
  auto error = [&]() { return emitError(forward.getLoc()) << "--ptrain-split-stages: "; };
  if (static_cast<int64_t>(userCuts.size()) != pieces - 1) { // (C1)
    error() << "cuts= names " << userCuts.size() << " cut(s) but pp = " << pp.getValue()
            << (virtualStages > 1 ? " x virtual-stages = " + std::to_string(virtualStages) : std::string())
            << " needs exactly " << pieces - 1;
    return failure();
  }
  SmallVector<size_t> chosen;           // indices into cutAfter
  llvm::DenseMap<size_t, StringRef> by; // which name chose each boundary
  for (const std::string &name : userCuts) {
    auto first = llvm::find_if(work, [&](Operation *op) { return namesNode(name, onnxNodeName(op->getLoc())); });
    if (first == work.end()) { // (C3) or (C2)
      bool recomputed = false;
      forward.walk([&](Operation *op) { recomputed |= namesNode(name, onnxNodeName(op->getLoc())); });
      // A module printed without --mlir-print-debuginfo has no node names at all: no cut can match.
      bool named = false;
      forward.walk([&](Operation *op) { named |= !onnxNodeName(op->getLoc()).empty(); });
      if (recomputed)
        error() << "cut '" << name << "' names only parameter reads, constants and ops on them, which every stage "
                << "recomputes; name an op of the layer that starts the stage";
      else if (!named)
        error() << "cut '" << name << "': the ops of @" << entry
                << " carry no ONNX node names (a module written without --mlir-print-debuginfo); import with "
                   "ptrain-translate --import-onnx ... --mlir-print-debuginfo";
      else
        error() << "cut '" << name << "' names no op of @" << entry
                << " (an ONNX node name, or a scope such as /blocks.2, in the ops' locations)";
      return failure();
    }
    const size_t index = first - work.begin();
    // The boundary before the layer holding work[index]: the last one that ends before it.
    auto after = llvm::lower_bound(cutAfter, index); // first boundary at or after index
    if (after == cutAfter.begin()) {                 // (C4)
      error() << "cut '" << name << "' (ONNX node '" << onnxNodeName((*first)->getLoc())
              << "') is in the first layer; a cut starts a stage at a later layer";
      return failure();
    }
    size_t c = (after - cutAfter.begin()) - 1;
    if (auto [it, inserted] = by.try_emplace(c, name); !inserted) { // (C5)
      error() << "cuts '" << it->second << "' and '" << name << "' start the same layer (each stage needs one)";
      return failure();
    }
    chosen.push_back(c);
  }
  llvm::sort(chosen);
  return chosen;
}

void SplitStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  auto forward = symbols.lookup<func::FuncOp>(entry);
  if (!forward) {
    emitError(module.getLoc()) << "--ptrain-split-stages: no function @" << entry;
    return signalPassFailure();
  }
  if (virtualStages < 1 || (virtualStages > 1 && pp < 2)) {
    emitError(module.getLoc()) << "--ptrain-split-stages: virtual-stages must be >= 1, and 1 when pp < 2 (the "
                                  "chunks of a rank exchange activations with other ranks), got virtual-stages = "
                               << virtualStages.getValue() << " with pp = " << pp.getValue();
    return signalPassFailure();
  }
  if (pp < 1) {
    emitError(module.getLoc()) << "--ptrain-split-stages: pp must be >= 1, got " << pp.getValue();
    return signalPassFailure();
  }
  // The split runs once, on the model graph: a second split redefined @forward_stage<s>; a split after
  // --ptrain-build-training-step left a @train_step of the whole model beside the stages.
  if (getPipeline(module)) {
    emitError(module.getLoc()) << "--ptrain-split-stages: the module is already split (it has ptrain.pipeline)";
    return signalPassFailure();
  }
  if (symbols.lookup("train_step")) {
    emitError(module.getLoc()) << "--ptrain-split-stages: the module already has a @train_step; split the "
                                  "forward before --ptrain-build-training-step";
    return signalPassFailure();
  }
  Block &body = forward.getBody().front();
  if (forward.getNumResults() != 1) {
    InFlightDiagnostic diag = emitError(forward.getLoc())
                              << "--ptrain-split-stages: @" << entry << " must have one result (the logits), got "
                              << forward.getNumResults();
    if (forward.getNumResults() > 1)
      diag << "; import an export with more outputs (past state) with --signature (e.g. --signature auto; "
              "docs/ImportONNX.md)";
    return signalPassFailure();
  }

  // Rematerializable values need no input: parameter reads, constants and ops on them only.
  llvm::DenseSet<Operation *> remat;
  SmallVector<Operation *> work; // The ops that compute from inputs, in order.
  for (Operation &op : body.without_terminator()) {
    bool fromInputsOnly = llvm::all_of(op.getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && remat.contains(def);
    });
    if (isa<StateReadOp, arith::ConstantOp>(op) || (isPure(&op) && fromInputsOnly && op.getNumOperands() > 0))
      remat.insert(&op);
    else
      work.push_back(&op);
  }

  // After work[i], which non-rematerializable values are still used later? A cut after i is valid when that
  // set is exactly one value and the function's arguments are dead. A value defined by work[d] (an argument:
  // d = -1) whose last user in `work` is work[u] (the return: u = work.size()) crosses exactly the cuts
  // d <= i < u, so one sweep over difference arrays of the count and of the sum of value ids finds every
  // cut's crossing count and, where it is one, the value (linear in the ops and uses).
  llvm::DenseMap<Operation *, int64_t> workIndex;
  for (auto [i, op] : llvm::enumerate(work))
    workIndex[op] = i;
  const int64_t numWork = work.size();
  SmallVector<Value> values;
  SmallVector<int64_t> countDelta(numWork + 1, 0), idDelta(numWork + 1, 0);
  auto addValue = [&](Value v, int64_t def) {
    int64_t last = -1;
    for (Operation *user : v.getUsers()) {
      if (isa<func::ReturnOp>(user))
        last = numWork;
      else if (auto it = workIndex.find(user); it != workIndex.end())
        last = std::max(last, it->second);
    }
    int64_t first = std::max<int64_t>(def, 0); // cuts i in [first, last)
    if (last <= first)
      return;
    int64_t id = values.size();
    values.push_back(v);
    countDelta[first] += 1;
    countDelta[last] -= 1;
    idDelta[first] += id;
    idDelta[last] -= id;
  };
  for (Value arg : forward.getArguments())
    addValue(arg, -1);
  for (auto [j, op] : llvm::enumerate(work))
    for (Value r : op->getResults())
      addValue(r, j);
  SmallVector<Value> candidates; // Candidate values crossing each valid cut.
  SmallVector<size_t> cutAfter;
  int64_t count = 0, idSum = 0;
  for (int64_t i = 0; i + 1 < numWork; ++i) {
    count += countDelta[i];
    idSum += idDelta[i];
    if (count == 1 && values[idSum].getDefiningOp()) {
      cutAfter.push_back(i);
      candidates.push_back(values[idSum]);
    }
  }
  // Layer granularity: keep the cuts that start a layer, i.e. whose segment up to the next single-tensor cut
  // holds an attention (a softmax), and that have a layer before them. Sub-layer cuts (between attention and
  // MLP) and a stage with no layer are not offered. (--ptrain-raise will name layers explicitly.)
  auto hasSoftmax = [&](size_t from, size_t to) { // work ops in [from, to)
    for (size_t i = from; i < to; ++i)
      if (isa<SoftmaxOp>(work[i]))
        return true;
    return false;
  };
  {
    SmallVector<Value> layerCandidates;
    SmallVector<size_t> layerCuts;
    for (size_t c = 0; c < cutAfter.size(); ++c) {
      size_t next = c + 1 < cutAfter.size() ? cutAfter[c + 1] + 1 : work.size();
      if (hasSoftmax(0, cutAfter[c] + 1) && hasSoftmax(cutAfter[c] + 1, next)) {
        layerCuts.push_back(cutAfter[c]);
        layerCandidates.push_back(candidates[c]);
      }
    }
    cutAfter = std::move(layerCuts);
    candidates = std::move(layerCandidates);
  }
  numCutPoints = cutAfter.size();
  // The pieces: pp stages, each of virtual-stages chunks (virtual stage c runs on rank c mod pp).
  const int64_t pieces = pp * virtualStages;
  if (static_cast<int64_t>(cutAfter.size()) < pieces - 1) {
    auto diag = emitError(forward.getLoc()) << "--ptrain-split-stages: pp = " << pp.getValue();
    if (virtualStages > 1)
      diag << " x virtual-stages = " << virtualStages.getValue();
    diag << " needs " << pieces - 1 << " cut points but @" << entry << " has only " << cutAfter.size()
         << " layer boundaries where a single tensor crosses (more stages than layers)";
    return signalPassFailure();
  }

  SmallVector<size_t> cuts; // indices into cutAfter, in order
  if (!userCuts.empty()) {
    FailureOr<SmallVector<size_t>> chosen = userCutIndices(forward, work, cutAfter, pieces);
    if (failed(chosen))
      return signalPassFailure();
    cuts = std::move(*chosen);
  } else {
    balanceCuts(work, cutAfter, pieces, cuts);
  }

  // Build the stage functions.
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(forward);
  SmallVector<FlatSymbolRefAttr> stageRefs;
  size_t begin = 0;
  Value input = forward.getArgument(0);
  for (int64_t k = 0; k < pieces; ++k) {
    size_t end = k + 1 < pieces ? cutAfter[cuts[k]] + 1 : work.size();
    Value output = k + 1 < pieces ? candidates[cuts[k]] : cast<func::ReturnOp>(body.getTerminator()).getOperand(0);
    std::string name = (entry + "_stage" + std::to_string(k));
    auto fn = func::FuncOp::create(
        b, forward.getLoc(), name,
        b.getFunctionType({k == 0 ? forward.getArgumentTypes()[0] : input.getType()}, {output.getType()}));
    setStage(fn, k % pp);
    if (virtualStages > 1)
      fn->setAttr("ptrain.virtual_stage", b.getI64IntegerAttr(k));
    if (k == 0 && forward.getArgAttr(0, "ptrain.onnx_name"))
      fn.setArgAttr(0, "ptrain.onnx_name", forward.getArgAttr(0, "ptrain.onnx_name"));
    Block *stageBody = fn.addEntryBlock();
    OpBuilder sb = OpBuilder::atBlockEnd(stageBody);
    IRMapping mapping;
    mapping.map(input, stageBody->getArgument(0));
    // Clone the rematerializable ops the stage uses (in order), then its work ops.
    llvm::DenseSet<Operation *> needed;
    for (size_t i = begin; i < end; ++i)
      for (Value v : work[i]->getOperands())
        if (Operation *def = v.getDefiningOp(); def && remat.contains(def)) {
          SmallVector<Operation *> stack = {def};
          while (!stack.empty()) {
            Operation *op = stack.pop_back_val();
            if (!needed.insert(op).second)
              continue;
            for (Value operand : op->getOperands())
              if (Operation *d = operand.getDefiningOp())
                stack.push_back(d);
          }
        }
    for (Operation &op : body.without_terminator())
      if (needed.contains(&op))
        sb.clone(op, mapping);
    for (size_t i = begin; i < end; ++i)
      sb.clone(*work[i], mapping);
    func::ReturnOp::create(sb, forward.getLoc(), mapping.lookup(output));
    b.setInsertionPointAfter(fn);
    stageRefs.push_back(FlatSymbolRefAttr::get(fn.getSymNameAttr()));
    begin = end;
    input = output;
  }
  setPipeline(module, PipelineAttr::get(module.getContext(), pp.getValue(), virtualStages.getValue(), stageRefs,
                                        std::nullopt, /*labels=*/false, /*deterministic_dp=*/false));
}
