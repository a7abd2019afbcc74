//===- ModuleCosts.cpp - per-stage costs of a scheduled module ------*- C++ -*-===//
//
// See ModuleCosts.h and docs/TimingModel.md.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/ModuleCosts.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::ptrain;

static llvm::Error costError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

double mlir::ptrain::allReduceSeconds(double bytes, int64_t n, double bandwidth, double latency) {
  if (n <= 1)
    return 0;
  return 2.0 * (n - 1) * latency + 2.0 * (n - 1) / n * bytes / bandwidth;
}

double mlir::ptrain::reduceScatterSeconds(double bytes, int64_t n, double bandwidth, double latency) {
  if (n <= 1)
    return 0;
  return (n - 1) * latency + static_cast<double>(n - 1) / n * bytes / bandwidth;
}

namespace {
/// Time and FLOPs of functions on one device of the cluster (before the division by tp).
class FunctionCosts {
public:
  FunctionCosts(SymbolTable &symbols, const ClusterSpec &cluster) : symbols(symbols), cluster(cluster) {}

  struct Cost {
    double seconds = 0, flops = 0, resultBytes = 0;
  };

  llvm::Expected<Cost> get(func::FuncOp fn) {
    if (auto it = cache.find(fn); it != cache.end())
      return it->second;
    Cost total;
    llvm::Error error = llvm::Error::success();
    fn.walk([&](Operation *op) {
      if (error)
        return WalkResult::interrupt();
      if (auto call = dyn_cast<func::CallOp>(op)) {
        if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee())) {
          auto c = get(callee);
          if (!c) {
            error = c.takeError();
            return WalkResult::interrupt();
          }
          total.seconds += c->seconds;
          total.flops += c->flops;
          total.resultBytes += c->resultBytes;
        }
        return WalkResult::advance();
      }
      OpCost cost = getOpCost(op);
      if (cost.flops == 0 && cost.bytes == 0)
        return WalkResult::advance();
      auto peak = cluster.getPeakFlops(dtypeOf(op), isa<MatmulOp>(op));
      if (!peak) {
        error = peak.takeError();
        return WalkResult::interrupt();
      }
      total.seconds += std::max(cost.flops / *peak, cost.bytes / cluster.memoryBandwidth) / cluster.efficiency;
      total.flops += cost.flops;
      for (Value r : op->getResults())
        total.resultBytes += getTensorBytes(r.getType());
      return WalkResult::advance();
    });
    if (error)
      return std::move(error);
    cache[fn] = total;
    return total;
  }

private:
  /// The dtype key of an op: its first float result's (or operand's) element type; "f32" otherwise.
  static std::string dtypeOf(Operation *op) {
    auto name = [](Type t) -> std::string {
      auto tensor = dyn_cast<RankedTensorType>(t);
      if (!tensor || !isa<FloatType>(tensor.getElementType()))
        return "";
      std::string s;
      llvm::raw_string_ostream os(s);
      tensor.getElementType().print(os);
      return s;
    };
    for (Value v : op->getResults())
      if (std::string s = name(v.getType()); !s.empty())
        return s;
    for (Value v : op->getOperands())
      if (std::string s = name(v.getType()); !s.empty())
        return s;
    return "f32";
  }

  SymbolTable &symbols;
  const ClusterSpec &cluster;
  llvm::DenseMap<Operation *, Cost> cache;
};
} // namespace

/// The state symbols of `kinds` that `fn` (and its callees) read or write.
static void collectStates(func::FuncOp fn, SymbolTable &symbols, llvm::StringSet<> &seen, double &bytes,
                          llvm::ArrayRef<StateKind> kinds, llvm::DenseSet<Operation *> &visited) {
  if (!visited.insert(fn).second)
    return;
  fn.walk([&](Operation *op) {
    FlatSymbolRefAttr ref;
    if (auto read = dyn_cast<StateReadOp>(op))
      ref = read.getStateAttr();
    else if (auto write = dyn_cast<StateWriteOp>(op))
      ref = write.getStateAttr();
    else if (auto call = dyn_cast<func::CallOp>(op)) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        collectStates(callee, symbols, seen, bytes, kinds, visited);
      return;
    }
    if (!ref)
      return;
    auto state = symbols.lookup<StateOp>(ref.getValue());
    if (!state || !llvm::is_contained(kinds, state.getKind()) || !seen.insert(ref.getValue()).second)
      return;
    bytes += getTensorBytes(state.getTensorType());
  });
}

llvm::Expected<ModuleTimingModel> mlir::ptrain::buildModuleTimingModel(ModuleOp module, const ClusterSpec &cluster) {
  ModuleTimingModel model;
  auto pipeline = module->getAttrOfType<DictionaryAttr>("ptrain.pipeline");
  ArrayAttr stageRefs = pipeline ? pipeline.getAs<ArrayAttr>("stages") : ArrayAttr();
  if (!stageRefs)
    return costError("the module has no ptrain.pipeline (run --ptrain-split-stages and "
                     "--ptrain-build-training-step)");
  auto schedule = module->getAttrOfType<DictionaryAttr>("ptrain.schedule");
  ArrayAttr rows = schedule ? schedule.getAs<ArrayAttr>("table") : ArrayAttr();
  if (!rows)
    return costError("the module has no ptrain.schedule table (run --ptrain-schedule)");
  if (auto v = pipeline.getAs<IntegerAttr>("virtual_stages"); v && v.getInt() > 1)
    return costError("the pipeline has " + llvm::Twine(v.getInt()) +
                     " virtual stages per stage (interleaved 1F1B), which the timing model does not cover yet");
  int64_t p = stageRefs.size();
  model.pp = p;
  if (auto kind = schedule.getAs<StringAttr>("kind"))
    model.scheduleKind = kind.str();
  if (auto m = schedule.getAs<IntegerAttr>("micro_batches"))
    model.microBatches = m.getInt();
  if (static_cast<int64_t>(rows.size()) != p)
    return costError("ptrain.schedule has " + llvm::Twine(rows.size()) + " rows for " + llvm::Twine(p) + " stages");

  GridOp grid;
  for (auto g : module.getOps<GridOp>())
    if (g.getAxisIndex("pp") && g.getAxisSize("pp") == p)
      grid = g;
  if (!grid)
    return costError("the module has no ptrain.grid with an axis pp of size " + llvm::Twine(p));
  std::vector<std::pair<std::string, int64_t>> axes;
  for (auto [name, size] : llvm::zip(grid.getAxisNames(), grid.getShape()))
    axes.push_back({cast<StringAttr>(name).str(), size});
  auto placement = Placement::create(cluster, axes);
  if (!placement)
    return placement.takeError();
  model.dp = placement->getAxisSize("dp");
  model.tp = placement->getAxisSize("tp");
  double tp = model.tp;

  // Bandwidth per GPU of each link kind.
  int64_t sharers = std::max<int64_t>(1, placement->getMaxRanksPerNodeWithSame("pp"));
  auto link = [&](bool inter) -> std::pair<double, double> {
    return inter ? std::make_pair(cluster.interNode.bandwidth / sharers, cluster.interNode.latency)
                 : std::make_pair(cluster.intraNode.bandwidth, cluster.intraNode.latency);
  };
  bool ppInter = placement->crossesNodes({"pp"});
  bool dpInter = placement->crossesNodes({"dp"});
  bool tpInter = placement->crossesNodes({"tp"});

  SymbolTable symbols(module);
  FunctionCosts costs(symbols, cluster);
  model.costs.memoryCapacity = cluster.memoryCapacity;
  model.costs.stages.resize(p);
  model.stages.resize(p);
  for (int64_t s = 0; s < p; ++s) {
    StageCosts &c = model.costs.stages[s];
    StageDetails &d = model.stages[s];
    bool last = s == p - 1;
    auto fwd = symbols.lookup<func::FuncOp>(cast<FlatSymbolRefAttr>(stageRefs[s]).getValue());
    std::string prefix = "stage" + std::to_string(s);
    auto bwd = symbols.lookup<func::FuncOp>(prefix + (last ? "_forward_backward" : "_backward"));
    auto opt = symbols.lookup<func::FuncOp>(prefix + "_optimizer_step");
    if (!fwd || !bwd || !opt)
      return costError("stage " + llvm::Twine(s) + ": missing @" +
                       (!fwd ? cast<FlatSymbolRefAttr>(stageRefs[s]).getValue().str()
                             : prefix + (!bwd ? (last ? "_forward_backward" : "_backward") : "_optimizer_step")) +
                       " (run --ptrain-build-training-step)");
    d.forwardFunction = fwd.getSymName().str();
    auto fc = costs.get(fwd);
    if (!fc)
      return fc.takeError();
    auto bc = costs.get(bwd);
    if (!bc)
      return bc.takeError();
    auto oc = costs.get(opt);
    if (!oc)
      return oc.takeError();
    d.forwardFlops = fc->flops;
    d.backwardFlops = bc->flops;

    // Tensor parallelism, analytically: compute / tp plus Megatron's activation all-reduces per layer.
    double residualBytes = 0;
    fwd.walk([&](Operation *op) {
      if (isa<SoftmaxOp>(op))
        ++d.layers;
      if (auto ln = dyn_cast<LayerNormOp>(op); ln && residualBytes == 0)
        residualBytes = getTensorBytes(ln.getInput().getType());
    });
    auto [tpBw, tpLat] = link(tpInter);
    double tpAllReduce = allReduceSeconds(residualBytes, model.tp, tpBw, tpLat);
    d.tpForwardSeconds = 2 * d.layers * tpAllReduce;
    d.tpBackwardSeconds = 4 * d.layers * tpAllReduce;
    if (model.tp > 1) {
      double busBytes = 2.0 * (model.tp - 1) / model.tp * residualBytes;
      d.tpForwardBytes = 2 * d.layers * busBytes;
      d.tpBackwardBytes = 4 * d.layers * busBytes;
      d.tpInterNode = tpInter;
    }
    c.forward = fc->seconds / tp + d.tpForwardSeconds;
    if (last)
      c.forwardBackward = bc->seconds / tp + d.tpBackwardSeconds;
    else
      c.backward = bc->seconds / tp + d.tpBackwardSeconds;
    c.optimizer = oc->seconds / tp;

    // Pipeline transfers: every TP rank sends the whole (replicated) boundary tensor.
    auto [ppBw, ppLat] = link(ppInter);
    if (!last) {
      double bytes = getTensorBytes(fwd.getResultTypes()[0]);
      c.sendForward = {ppLat + bytes / ppBw, bytes, ppInter};
    }
    if (s > 0) {
      double bytes = getTensorBytes(fwd.getArgumentTypes()[0]);
      c.sendBackward = {ppLat + bytes / ppBw, bytes, ppInter};
    }

    // Data parallelism: the stage's parameter gradients (its TP shard).
    llvm::StringSet<> seen;
    llvm::DenseSet<Operation *> visited;
    collectStates(fwd, symbols, seen, d.parameterBytes, {StateKind::Parameter}, visited);
    d.parameterBytes /= tp;
    if (model.dp > 1) {
      auto [dpBw, dpLat] = link(dpInter);
      c.dataParallel = {allReduceSeconds(d.parameterBytes, model.dp, dpBw, dpLat), d.parameterBytes, dpInter};
    }

    // The tied-parameter all-reduces of the optimizer step: every stage joins the same ones, so stage 0's
    // give the collective's size and time.
    if (s == 0)
      opt.walk([&](AllReduceStartOp ar) {
        auto g = symbols.lookup<GridOp>(ar.getGrid());
        if (!g)
          return;
        int64_t n = g.getGroupSize(ar.getGridAxes());
        std::vector<std::string> arAxes;
        for (Attribute a : ar.getGridAxes())
          arAxes.push_back(cast<StringAttr>(a).str());
        bool inter = placement->crossesNodes(arAxes);
        auto [bw, lat] = link(inter);
        double bytes = getTensorBytes(ar.getInput().getType()) / tp;
        model.costs.tied.bytes += bytes;
        model.costs.tied.seconds += allReduceSeconds(bytes, n, bw, lat);
        model.costs.tied.interNode |= inter;
      });

    // Memory.
    llvm::StringSet<> seenStates;
    llvm::DenseSet<Operation *> visitedStates;
    for (func::FuncOp fn : {fwd, bwd, opt})
      collectStates(fn, symbols, seenStates, d.stateBytes,
                    {StateKind::Parameter, StateKind::Gradient, StateKind::OptimizerMoment}, visitedStates);
    d.stateBytes /= tp;
    int64_t inFlight = 0;
    for (Attribute entry : cast<ArrayAttr>(rows[s])) {
      auto str = dyn_cast<StringAttr>(entry);
      auto step = str ? ScheduleStep::parse(str.getValue()) : std::nullopt;
      if (!step)
        return costError("stage " + llvm::Twine(s) + ": malformed schedule entry " +
                         (str ? "'" + str.str() + "'" : std::string("(not a string)")));
      model.costs.table.resize(p);
      model.costs.table[s].push_back(*step);
      if (step->kind == ScheduleStep::Forward)
        d.inFlight = std::max(d.inFlight, ++inFlight);
      else if (step->kind == ScheduleStep::Backward)
        --inFlight;
      else if (step->kind == ScheduleStep::ForwardBackward)
        d.inFlight = std::max<int64_t>(d.inFlight, 1);
    }
    d.activationBytes = d.inFlight * getTensorBytes(fwd.getArgumentTypes()[0]);
    d.workingBytes = bc->resultBytes / tp;
    c.peakMemory = d.stateBytes + d.activationBytes + d.workingBytes;
  }
  return model;
}
