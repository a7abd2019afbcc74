//===- TimingAnalysisBench.cpp - the timing analysis on GPT-3-sized plans --===//
//
// GPT-3-175B-shaped plans (Brown et al. 2020, Table 2.1: 96 layers, hidden 12288, 96 heads, sequence 2048),
// PP 16, DP 8, TP 8, 1F1B, on the Optimus-CC A100 cluster scaled to the 1024 GPUs the grid needs:
// * BM_Analysis/L/M: the whole analysis (IR costs, plan, simulation, slack, critical path) of a module after
//   --ptrain-schedule with L layers and M micro-batches; reports events and ns per simulated event;
// * BM_Simulate/M: the plan simulation alone (PipelinePlan + simulate) at M micro-batches.
// Module preparation (parsing, the stage split, the training step) is outside the timed loop.
//
// Run: build/bench/analysis/ptrain-bench-timing-analysis (results in bench/README.md).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/Cluster.h"
#include "ptrain/Analysis/TimingAnalysis.h"
#include "ptrain/Tools/Registration.h"
#include "ptrain/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

using namespace mlir;
using namespace mlir::ptrain;

namespace {

constexpr int64_t kStages = 16;

struct Prepared {
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};

ClusterSpec cluster() {
  static ClusterSpec spec = [] {
    auto c = loadCluster(PTRAIN_CLUSTERS_DIR "/optimus-cc-a100.json");
    if (!c) {
      std::fprintf(stderr, "%s\n", llvm::toString(c.takeError()).c_str());
      std::exit(1);
    }
    c->nodes = 128; // DP 8 x TP 8 x PP 16 = 1024 GPUs
    c->memoryCapacity = 80.0 * (1ull << 30);
    return *c;
  }();
  return spec;
}

/// The module with `layers` layers after split, training step and 1F1B schedule with `m` micro-batches.
ModuleOp prepare(int64_t layers, int64_t m) {
  static std::map<std::pair<int64_t, int64_t>, Prepared> cache;
  auto key = std::make_pair(layers, m);
  if (auto it = cache.find(key); it != cache.end())
    return *it->second.module;
  static bool registered = [] {
    registerPTrainPasses();
    return true;
  }();
  (void)registered;
  Prepared p;
  DialectRegistry registry;
  registerPTrainDialects(registry);
  p.context = std::make_unique<MLIRContext>(registry);
  p.context->loadAllAvailableDialects();
  std::string path = PTRAIN_BENCH_GPT3_DIR "/gpt3-L" + std::to_string(layers) + ".mlir";
  p.module = parseSourceFile<ModuleOp>(path, p.context.get());
  if (!p.module) {
    std::fprintf(stderr, "cannot parse %s\n", path.c_str());
    std::exit(1);
  }
  PassManager pm(p.context.get());
  std::string pipeline = "ptrain-split-stages{pp=" + std::to_string(kStages) +
                         "},ptrain-build-training-step{micro-batches=" + std::to_string(m) + " dp=8},ptrain-schedule";
  if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(*p.module))) {
    std::fprintf(stderr, "the pipeline failed on %s\n", path.c_str());
    std::exit(1);
  }
  ModuleOp module = *p.module;
  cache.emplace(key, std::move(p));
  return module;
}

void BM_Analysis(benchmark::State &state) {
  ModuleOp module = prepare(state.range(0), state.range(1));
  int64_t events = 0;
  for (auto _ : state) {
    TimingAnalysis analysis(module, cluster());
    if (llvm::Error e = analysis.run()) {
      state.SkipWithError(llvm::toString(std::move(e)).c_str());
      return;
    }
    events = analysis.getTimeline().events;
    benchmark::DoNotOptimize(analysis.getTimeline().iterationTime);
  }
  state.counters["events"] = events;
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(events) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_Simulate(benchmark::State &state) {
  ModuleOp module = prepare(96, state.range(0));
  auto model = buildModuleTimingModel(module, cluster());
  if (!model) {
    state.SkipWithError(llvm::toString(model.takeError()).c_str());
    return;
  }
  int64_t events = 0;
  for (auto _ : state) {
    PipelinePlanIndex index;
    auto plan = buildPipelinePlan(model->costs, index);
    Timeline timeline;
    std::string error;
    if (!plan || !simulate(*plan, timeline, error)) {
      state.SkipWithError("simulation failed");
      return;
    }
    events = timeline.events;
    benchmark::DoNotOptimize(timeline.iterationTime);
  }
  state.counters["events"] = events;
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(events) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

} // namespace

BENCHMARK(BM_Analysis)
    ->ArgsProduct({{24, 48, 96}, {16, 32, 64}})
    ->Unit(benchmark::kMillisecond)
    ->ArgNames({"layers", "micro_batches"});
BENCHMARK(BM_Simulate)
    ->Arg(16)
    ->Arg(32)
    ->Arg(64)
    ->Arg(128)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->ArgName("micro_batches");

BENCHMARK_MAIN();
