//===- PlanPasses.cpp - time of the plan passes and schedule tables -------===//
//
// How the plan-level work grows with the pipeline and the micro-batches (issue 6, "Speed"):
//  * BM_ScheduleTable: building and executing (unit costs) the 1F1B / interleaved table of p stages and m
//    micro-batches, the model-independent part of --ptrain-schedule, --ptrain-print-schedule and the timing
//    simulator; GPT-3's plan shape is p = 16, m = 64.
//  * BM_PlanPasses: --ptrain-split-stages, --ptrain-build-training-step (dp = 2), --ptrain-schedule,
//    --ptrain-lower-to-runtime and --ptrain-verify-plan on an L0 module: $PTRAIN_BENCH_MODEL (an .mlir file,
//    e.g. a generated many-layer GPT) or else the bundled GPT (4 layers, imported from ONNX).
//  * BM_Gpt3Plan/layers:L: issue 6's speed target, every pass of the plan pipeline on the GPT-3-shaped graph
//    of L layers (hidden 12288, bench/analysis generates it) with tp 8, pp 16, dp 8 and 64 micro-batches
//    (1,024 ranks): raise, shard-tp, split-stages, build-training-step, schedule, lower-to-runtime,
//    verify-plan, each pass timed alone (counters `<pass>_s` wall and `<pass>_cpu_s` CPU seconds, `all_*`
//    their sums), and the peak RSS of the process after it.
// Reports time per iteration; bench/README.md has the ratios (m = 64 against m = 8, interleaved against 1F1B).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/PipelinePlan.h"
#include "ptrain/Import/ONNX/ImportONNX.h"
#include "ptrain/Tools/Registration.h"
#include "ptrain/Transforms/Passes.h"
#include "ptrain/Plan/ScheduleTable.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/MemoryBuffer.h"

#include <benchmark/benchmark.h>

#include <map>

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>

using namespace mlir;

static void BM_ScheduleTable(benchmark::State &state) {
  const int64_t p = state.range(0), m = state.range(1), v = state.range(2);
  const char *kind = v > 1 ? "interleaved" : "1f1b";
  for (auto _ : state) {
    std::string error, stuck;
    auto table = ptrain::buildScheduleTable(kind, p, v, m, error);
    if (!table) {
      state.SkipWithError(error.c_str());
      return;
    }
    ptrain::PipelinePlanIndex index;
    auto plan = ptrain::buildPipelinePlan(ptrain::getUniformPipelineCosts(*table, v, 1.0, 2.0, 3.0), index);
    if (!plan) {
      state.SkipWithError(llvm::toString(plan.takeError()).c_str());
      return;
    }
    ptrain::Timeline timing;
    if (!ptrain::simulate(*plan, timing, stuck)) {
      state.SkipWithError(stuck.c_str());
      return;
    }
    benchmark::DoNotOptimize(timing);
  }
  state.counters["steps"] = static_cast<double>(p * (2 * m * v + 1));
}
BENCHMARK(BM_ScheduleTable)
    ->Args({4, 8, 1})
    ->Args({16, 64, 1})
    ->Args({16, 64, 2})
    ->Args({16, 512, 1})
    ->Unit(benchmark::kMicrosecond);

namespace {
struct Model {
  Model() {
    DialectRegistry registry;
    ptrain::registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    ptrain::registerPTrainPasses();
    if (const char *path = std::getenv("PTRAIN_BENCH_MODEL")) {
      module = parseSourceFile<ModuleOp>(path, &context);
    } else {
      std::string onnx = std::string(PTRAIN_SOURCE_DIR) + "/models/gpt/gpt.onnx";
      if (auto buffer = llvm::MemoryBuffer::getFile(onnx))
        module = ptrain::importONNX((*buffer)->getBuffer(), onnx, &context);
    }
  }
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};
} // namespace

static void BM_PlanPasses(benchmark::State &state) {
  static Model model;
  if (!model.module) {
    state.SkipWithError("cannot load the model ($PTRAIN_BENCH_MODEL or models/gpt/gpt.onnx)");
    return;
  }
  const int64_t pp = state.range(0), m = state.range(1), v = state.range(2);
  std::string pipeline = "ptrain-split-stages{pp=" + std::to_string(pp) + " virtual-stages=" + std::to_string(v) +
                         "}, ptrain-build-training-step{micro-batches=" + std::to_string(m) +
                         " dp=2}, ptrain-schedule{schedule=" + (v > 1 ? "interleaved" : "1f1b") +
                         "}, ptrain-lower-to-runtime, ptrain-verify-plan";
  for (auto _ : state) {
    state.PauseTiming();
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(model.module->clone()));
    PassManager pm(&model.context);
    if (failed(parsePassPipeline(pipeline, pm))) {
      state.SkipWithError("bad pipeline");
      return;
    }
    state.ResumeTiming();
    if (failed(pm.run(*copy))) {
      state.SkipWithError("a pass failed");
      return;
    }
  }
}
BENCHMARK(BM_PlanPasses)
    ->Args({2, 8, 1})
    ->Args({2, 64, 1})
    ->Args({2, 64, 2})
    ->Args({4, 64, 1})
    ->Unit(benchmark::kMillisecond);

/// The GPT-3-shaped L0 model of `layers` layers, parsed once per layer count.
static ModuleOp gpt3Model(int64_t layers) {
  static Model context; // for the registry; its own module is not used
  static std::map<int64_t, OwningOpRef<ModuleOp>> models;
  OwningOpRef<ModuleOp> &model = models[layers];
  if (!model)
    model =
        parseSourceFile<ModuleOp>(PTRAIN_BENCH_GPT3_DIR "/gpt3-L" + std::to_string(layers) + ".mlir", &context.context);
  return model ? *model : ModuleOp();
}

static void BM_Gpt3Plan(benchmark::State &state) {
  ModuleOp model = gpt3Model(state.range(0));
  if (!model) {
    state.SkipWithError("cannot parse " PTRAIN_BENCH_GPT3_DIR "/gpt3-L<layers>.mlir (ninja ptrain-bench-gpt3-models)");
    return;
  }
  const std::vector<std::pair<std::string, std::string>> passes = {
      {"raise", "ptrain-raise"},
      {"shard_tp", "ptrain-shard-tp{tp=8}"},
      {"split", "ptrain-split-stages{pp=16}"},
      {"training_step", "ptrain-build-training-step{micro-batches=64 dp=8}"},
      {"schedule", "ptrain-schedule{schedule=1f1b}"},
      {"lower", "ptrain-lower-to-runtime"},
      {"verify", "ptrain-verify-plan"},
  };
  // Per pass: wall seconds and CPU seconds of the process (user + system; the shared machine's load inflates
  // the wall time, not the CPU time).
  std::vector<double> seconds(passes.size(), 0.0), cpuSeconds(passes.size(), 0.0);
  auto cpuNow = [] {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    auto s = [](const timeval &t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
    return s(usage.ru_utime) + s(usage.ru_stime);
  };
  for (auto _ : state) {
    state.PauseTiming();
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(model->clone()));
    state.ResumeTiming();
    for (auto [i, pass] : llvm::enumerate(passes)) {
      PassManager pm(model->getContext());
      if (failed(parsePassPipeline(pass.second, pm))) {
        state.SkipWithError(("bad pipeline " + pass.second).c_str());
        return;
      }
      auto start = std::chrono::steady_clock::now();
      double cpuStart = cpuNow();
      if (failed(pm.run(*copy))) {
        state.SkipWithError((pass.second + " failed").c_str());
        return;
      }
      seconds[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      cpuSeconds[i] += cpuNow() - cpuStart;
    }
    state.PauseTiming();
    copy = nullptr; // freeing the lowered module is not a pass
    state.ResumeTiming();
  }
  const double n = static_cast<double>(state.iterations());
  double total = 0.0, totalCpu = 0.0;
  for (auto [i, pass] : llvm::enumerate(passes)) {
    state.counters[pass.first + "_s"] = seconds[i] / n;
    state.counters[pass.first + "_cpu_s"] = cpuSeconds[i] / n;
    total += seconds[i] / n;
    totalCpu += cpuSeconds[i] / n;
  }
  state.counters["all_s"] = total;
  state.counters["all_cpu_s"] = totalCpu;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_Gpt3Plan)->ArgName("layers")->Arg(24)->Arg(48)->Arg(96)->Iterations(1)->Unit(benchmark::kSecond);

BENCHMARK_MAIN();
