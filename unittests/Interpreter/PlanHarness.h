//===- PlanHarness.h - plans of the bundled GPT on the multi-rank executor -*- C++ -*-===//
//
// Shared by the executor tests (MultiRankExecutorTest.cpp, TrainingStepTest.cpp): a plan (dp, pp, tp,
// micro-batches, schedule, further training-step options) lowered from an L0 module through the pass
// pipeline, run for some steps on the in-process multi-rank executor, and the helpers that compare runs.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_UNITTESTS_INTERPRETER_PLANHARNESS_H
#define PTRAIN_UNITTESTS_INTERPRETER_PLANHARNESS_H

#include "ptrain/Interpreter/MultiRankExecutor.h"

#include "ptrain/Import/ONNX/ImportONNX.h"
#include "ptrain/Import/ONNX/Initializers.h"
#include "ptrain/Tools/Registration.h"
#include "ptrain/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <map>
#include <ostream>
#include <random>

namespace ptrain_test {

using namespace mlir;
using namespace mlir::ptrain::interp;

/// One plan: data-parallel replicas, pipeline stages, micro-batches per replica, schedule, chunks per stage,
/// tensor-parallel ranks.
struct Plan {
  int64_t dp, pp, m;
  std::string schedule;
  int64_t v = 1;
  int64_t tp = 1;
  /// Further options of --ptrain-build-training-step ("clip-norm=0.05 optimizer=sgd"), appended.
  std::string build = "";
  /// More options of --ptrain-shard-tp (e.g. "vocab-parallel=true").
  std::string tpOptions = "";
};

inline std::string planName(const Plan &p) {
  return "dp" + std::to_string(p.dp) + "_pp" + std::to_string(p.pp) + "_m" + std::to_string(p.m) + "_" + p.schedule +
         (p.v > 1 ? "_v" + std::to_string(p.v) : "") + (p.tp > 1 ? "_tp" + std::to_string(p.tp) : "") +
         (p.tpOptions.find("vocab-parallel=true") != std::string::npos ? "_vocab" : "");
}

/// gtest's name of a plan in messages and CTest (instead of its bytes).
inline void PrintTo(const Plan &p, std::ostream *os) { *os << planName(p); }

/// What one run of a plan leaves: the step losses and every rank's states after the last step.
struct PlanRun {
  std::vector<double> losses;
  std::vector<llvm::StringMap<Tensor>> states;
};

class Plans {
public:
  Plans() {
    DialectRegistry registry;
    mlir::ptrain::registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    mlir::ptrain::registerPTrainPasses();
  }

  /// The L0 module of the bundled GPT (ONNX import).
  OwningOpRef<ModuleOp> importBundledGpt() {
    std::string path = std::string(PTRAIN_SOURCE_DIR) + "/models/gpt/gpt.onnx";
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      ADD_FAILURE() << "cannot read " << path;
      return nullptr;
    }
    return mlir::ptrain::importONNX((*buffer)->getBuffer(), path, &context);
  }

  OwningOpRef<ModuleOp> parseFile(const std::string &path) { return parseSourceFile<ModuleOp>(path, &context); }

  /// The L0 module of the ONNX file `path` with the training signature applied and `bindings` bound.
  OwningOpRef<ModuleOp> importWithSignature(const std::string &path, std::map<std::string, int64_t> bindings = {}) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      ADD_FAILURE() << "cannot read " << path;
      return nullptr;
    }
    mlir::ptrain::ImportONNXOptions options;
    options.bindings = std::move(bindings);
    options.applySignature = true;
    return mlir::ptrain::importONNX((*buffer)->getBuffer(), path, &context, options);
  }

  /// More options of --ptrain-shard-tp for plans with tp > 1 (" replicate-indivisible-mlp=true").
  std::string shardOptions;
  /// Passes run between --ptrain-split-stages and --ptrain-build-training-step, each followed by ", "
  /// ("ptrain-insert-linear-ae{dim=64}, ").
  std::string afterSplit;

  /// The initial values in the ONNX file `path` (kept open by this object), or null after a failure.
  StateProvider openInitialValues(const std::string &path) {
    auto opened = mlir::ptrain::onnx_data::ONNXInitializers::open(path);
    if (!opened) {
      ADD_FAILURE() << llvm::toString(opened.takeError());
      return nullptr;
    }
    initializers.push_back(std::make_unique<mlir::ptrain::onnx_data::ONNXInitializers>(std::move(*opened)));
    mlir::ptrain::onnx_data::ONNXInitializers *values = initializers.back().get();
    return [values](llvm::StringRef key, RankedTensorType) { return values->read(key); };
  }

  /// Splits, builds, schedules, lowers and verifies `plan` on a clone of `l0` (raised and sharded first when
  /// plan.tp > 1); with `compress` (the options of --ptrain-compress), times the schedule on `cluster` (a path
  /// under the source tree; the H200 node by default) and compresses before lowering, and `edit` (if any)
  /// sees the module between compression and lowering.
  OwningOpRef<ModuleOp> lower(ModuleOp l0, const Plan &plan, double lr, const std::string &compress = "",
                              const std::string &cluster = "clusters/h200-node.json",
                              std::function<void(ModuleOp)> edit = nullptr) {
    OwningOpRef<ModuleOp> module(cast<ModuleOp>(l0->clone()));
    std::string pipeline =
        (plan.tp > 1 ? "ptrain-raise, ptrain-shard-tp{tp=" + std::to_string(plan.tp) + " " + plan.tpOptions +
                           shardOptions + "}, "
                     : std::string()) +
        "ptrain-split-stages{pp=" + std::to_string(plan.pp) + " virtual-stages=" + std::to_string(plan.v) + "}, " +
        afterSplit + "ptrain-build-training-step{micro-batches=" + std::to_string(plan.m) +
        " dp=" + std::to_string(plan.dp) + " bucket-bytes=100000 warmup-steps=1 lr=" + std::to_string(lr) +
        (plan.build.empty() ? std::string() : " " + plan.build) + "}, ptrain-schedule{schedule=" + plan.schedule +
        "}, " +
        (compress.empty() ? std::string()
                          : "ptrain-critical-path{cluster=" + std::string(PTRAIN_SOURCE_DIR) + "/" + cluster +
                                "}, ptrain-compress{" + compress + "}, ");
    const std::string lowering = "ptrain-lower-to-runtime, ptrain-verify-plan";
    for (const std::string &passes : edit ? std::vector<std::string>{pipeline.substr(0, pipeline.size() - 2), lowering}
                                          : std::vector<std::string>{pipeline + lowering}) {
      PassManager pm(&context);
      if (failed(parsePassPipeline(passes, pm))) {
        ADD_FAILURE() << "bad pipeline " << passes;
        return nullptr;
      }
      if (failed(pm.run(*module))) {
        ADD_FAILURE() << "the pipeline failed for " << planName(plan);
        return nullptr;
      }
      if (edit && passes != lowering)
        edit(*module);
    }
    return module;
  }

  /// Runs `steps` train steps of every rank; step k's global batch is `batches[k]` ([dp R, S]), of which
  /// replica d gets rows [d R, (d + 1) R). `afterStep` sees the executor after every step.
  PlanRun run(ModuleOp module, StateProvider provider, const std::vector<Tensor> &batches,
              std::function<void(MultiRankExecutor &, int64_t step)> afterStep = nullptr) {
    PlanRun result;
    auto created = MultiRankExecutor::create(module, provider);
    if (!created) {
      ADD_FAILURE() << llvm::toString(created.takeError());
      return result;
    }
    MultiRankExecutor &executor = **created;
    for (auto [k, global] : llvm::enumerate(batches)) {
      auto entries = std::vector<std::string>();
      for (int64_t r = 0; r < executor.getNumRanks(); ++r) {
        llvm::Expected<std::string> entry = executor.entryForRank(r, "train");
        if (!entry) {
          ADD_FAILURE() << llvm::toString(entry.takeError());
          return result;
        }
        entries.push_back(*entry);
      }
      int64_t dp = 1;
      for (const std::string &axis : executor.getAxisNames())
        if (axis == "dp")
          dp = executor.getCoordinate(executor.getNumRanks() - 1, "dp") + 1;
      const int64_t rows = global.getShape()[0] / dp, seq = global.getShape()[1];
      auto results =
          executor.run([&](int64_t r) { return entries[r]; },
                       [&](int64_t r) {
                         int64_t d = executor.getCoordinate(r, "dp");
                         std::vector<int64_t> ids(global.ints().begin() + d * rows * seq,
                                                  global.ints().begin() + (d + 1) * rows * seq);
                         return std::vector<Tensor>{llvm::cantFail(Tensor::fromInts(DType::I64, {rows, seq}, ids))};
                       });
      if (!results) {
        ADD_FAILURE() << llvm::toString(results.takeError());
        return result;
      }
      for (const std::vector<Tensor> &rank : *results)
        EXPECT_EQ(rank.at(0).getAsDouble(0), (*results)[0].at(0).getAsDouble(0)) << "ranks disagree on the loss";
      result.losses.push_back((*results)[0].at(0).getAsDouble(0));
      if (afterStep)
        afterStep(executor, k);
    }
    for (int64_t r = 0; r < executor.getNumRanks(); ++r)
      result.states.push_back(executor.getStates(r));
    return result;
  }

  MLIRContext context;
  std::vector<std::unique_ptr<mlir::ptrain::onnx_data::ONNXInitializers>> initializers;
};

/// `count` global batches of `rows` x `seq` token ids below `vocab`, from a fixed seed.
inline std::vector<Tensor> randomBatches(int64_t count, int64_t rows, int64_t seq, int64_t vocab, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> batches;
  for (int64_t k = 0; k < count; ++k) {
    std::vector<int64_t> ids(rows * seq);
    for (int64_t &id : ids)
      id = static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab));
    batches.push_back(llvm::cantFail(Tensor::fromInts(DType::I64, {rows, seq}, ids)));
  }
  return batches;
}

/// max |a - b| over the elements.
inline double maxAbsDiff(const Tensor &a, const Tensor &b) {
  double worst = 0;
  for (int64_t i = 0, e = a.getNumElements(); i < e; ++i)
    worst = std::max(worst, std::fabs(a.getAsDouble(i) - b.getAsDouble(i)));
  return worst;
}

inline bool bitEqual(const Tensor &a, const Tensor &b) {
  return a.getShape() == b.getShape() && a.getDType() == b.getDType() &&
         (a.isFloat() ? a.floats() == b.floats() : a.ints() == b.ints());
}

} // namespace ptrain_test

#endif // PTRAIN_UNITTESTS_INTERPRETER_PLANHARNESS_H
