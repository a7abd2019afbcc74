//===- PlanHarness.h - plans of the bundled GPT on the multi-rank executor -*- C++ -*-===//
//
// Shared by the executor tests (MultiRankExecutorTest.cpp, TrainingStepTest.cpp, LlamaPlanTest.cpp,
// Issue6CoverageTest.cpp, the compression tests): a plan (dp, pp, tp, micro-batches, schedule, further training-step
// options) lowered from an L0 module through the pass pipeline, run for some steps on the in-process multi-rank
// executor, and the helpers that compare runs (expectTensorParallelStepMatches: one step of any dp x pp x tp plan,
// every parameter and gradient slice, against the one-rank step).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_UNITTESTS_INTERPRETER_PLANHARNESS_H
#define PTRAIN_UNITTESTS_INTERPRETER_PLANHARNESS_H

#include "SourceDir.h"
#include "ptrain/Interpreter/MultiRankExecutor.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

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
#include <cstdio>
#include <cstring>
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
    std::string path = ptrain_test::sourceDir() + "/models/gpt/gpt.onnx";
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
                          : "ptrain-critical-path{cluster=" + ptrain_test::sourceDir() + "/" + cluster +
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

/// A model, its initial values and one fixed global batch repeated every step (the compression tests: the
/// loss falls within a few steps).
struct RepeatedBatchModel {
  Plans plans;
  OwningOpRef<ModuleOp> l0;
  StateProvider provider;
  Tensor batch;

  PlanRun run(const Plan &plan, const std::string &compress, int64_t steps, double lr = 1e-3) {
    OwningOpRef<ModuleOp> module = plans.lower(*l0, plan, lr, compress);
    if (!module)
      return {};
    return run(*module, steps);
  }
  PlanRun run(ModuleOp module, int64_t steps) { return plans.run(module, provider, std::vector<Tensor>(steps, batch)); }
};

/// The bundled GPT (4 layers, hidden 128, tied embedding) with a batch of 16 x 64 tokens.
inline void openBundledGpt(RepeatedBatchModel &model) {
  model.l0 = model.plans.importBundledGpt();
  model.provider = model.plans.openInitialValues(ptrain_test::sourceDir() + "/models/gpt/gpt.onnx");
  model.batch = randomBatches(1, 16, 64, 256, 7)[0];
}

/// llama_tiny_8l (8 layers, hidden 32, untied head), raised, with a batch of `rows` x 16 tokens below its
/// vocabulary 128.
inline void openLlamaTiny8l(RepeatedBatchModel &model, int64_t rows) {
  std::string path = ptrain_test::sourceDir() + "/test/Import/ONNX/opset18+/Inputs/llama_tiny_8l.onnx";
  model.l0 = model.plans.importWithSignature(path);
  model.provider = model.plans.openInitialValues(path);
  if (!model.l0)
    return;
  PassManager pm(&model.plans.context);
  if (failed(parsePassPipeline("ptrain-raise", pm)) || failed(pm.run(*model.l0)))
    model.l0 = nullptr;
  model.batch = randomBatches(1, rows, 16, 128, 3)[0];
}

/// The Euclidean norm of `t`.
inline double l2Norm(const Tensor &t) {
  double sum = 0;
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    sum += t.getAsDouble(i) * t.getAsDouble(i);
  return std::sqrt(sum);
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

/// Whether the two runs give bit-equal losses and bit-equal states (every state of `plain` on every rank).
inline void expectBitEqualRuns(const PlanRun &plain, const PlanRun &other, const std::string &what) {
  ASSERT_FALSE(plain.losses.empty()) << what;
  EXPECT_EQ(other.losses, plain.losses) << what;
  ASSERT_EQ(other.states.size(), plain.states.size()) << what;
  for (auto [r, states] : llvm::enumerate(plain.states))
    for (const auto &entry : states)
      EXPECT_TRUE(bitEqual(entry.getValue(), other.states[r].lookup(entry.getKey())))
          << what << ": rank " << r << " state " << entry.getKey().str();
}

/// The number of parameters of `module`.
inline int64_t countParameters(ModuleOp module) {
  int64_t params = 0;
  for (auto state : module.getOps<mlir::ptrain::StateOp>())
    params += state.getKind() == mlir::ptrain::StateKind::Parameter;
  return params;
}

/// Part `part` of `global` in the layout of the state's `ptrain.tp_slice` (padded first when it is).
inline Tensor sliceLike(const Tensor &global, mlir::ptrain::TPSliceAttr slice, int64_t parts, int64_t part) {
  const int64_t dim = slice.getDim();
  Tensor padded = global;
  if (slice.getPadded())
    padded = llvm::cantFail(padTensorParallel(global, dim, slice.getPadded()));
  return llvm::cantFail(tensorParallelSlice(padded, dim, slice.getGroups(), parts, part));
}

/// One step of `plan` (tp >= 1) on `l0` against the one-rank step over the same global batch `batches[0]`
/// ([16 or more rows, S]), with `slicedParams` parameters sliced over tp and `params` parameters in all. Each
/// tp rank's slice of a sliced parameter (and of its first moment) is compared with the same slice of the
/// reference's; replicated parameters must be bit-equal on the tp ranks of a (dp, pp) coordinate: f hands
/// every rank the same whole activation gradient, so each computes the same whole gradient.
///
/// Tolerances (f32, lr 1e-3): the loss within 1e-6 relative; every gradient, read as AdamW's first moment
/// after one step ((1 - beta1) g), within 1e-4 of its tensor's max |g|, or of 1e-3 of the model's largest
/// |g| where that is more (measured: 2.6e-7 at most on the bundled GPT); every parameter within 2e-5 absolute (2e-2 of
/// lr). The row-parallel linears and the f all-reduces sum over tp parts in another order than one rank's matmul;
/// AdamW's first step, g / (|g| + eps), amplifies those f32 ulps where |g| is near eps = 1e-8 (measured: 9.7e-6 at
/// most, in blocks.2.mlp.proj.weight).
inline void expectTensorParallelStepMatches(Plans &plans, ModuleOp l0, const StateProvider &provider,
                                            const std::vector<Tensor> &batches, const Plan &plan, size_t slicedParams,
                                            int64_t params) {
  const double lr = 1e-3;
  OwningOpRef<ModuleOp> reference = plans.lower(l0, Plan{1, 1, plan.m * plan.dp, "1f1b"}, lr);
  OwningOpRef<ModuleOp> planned = plans.lower(l0, plan, lr);
  ASSERT_TRUE(reference && planned);
  llvm::StringMap<mlir::ptrain::TPSliceAttr> slices;
  for (auto state : planned->getOps<mlir::ptrain::StateOp>())
    if (auto slice = mlir::ptrain::getTPSlice(state))
      slices[state.getKey()] = slice;
  EXPECT_EQ(slices.size(), slicedParams);
  PlanRun expected = plans.run(*reference, provider, batches);
  PlanRun actual = plans.run(*planned, provider, batches);
  ASSERT_EQ(expected.losses.size(), 1u);
  ASSERT_EQ(actual.losses.size(), 1u);
  EXPECT_NEAR(actual.losses[0], expected.losses[0], 1e-6 * std::fabs(expected.losses[0]));
  int64_t compared = 0, comparedMoments = 0;
  double worst = 0, worstMoment = 0;
  std::string worstKey;
  // A gradient that is zero up to rounding (BERT's attention key biases: the softmax does not see a shift
  // of every score of a row) is compared against 1e-3 of the largest gradient of the model instead of its own.
  double modelScale = 0;
  for (const auto &entry : expected.states[0])
    if (entry.getKey().ends_with("/adam_m"))
      for (int64_t i = 0, e = entry.getValue().getNumElements(); i < e; ++i)
        modelScale = std::max(modelScale, std::fabs(entry.getValue().getAsDouble(i)));
  for (auto [r, states] : llvm::enumerate(actual.states)) {
    const int64_t part = static_cast<int64_t>(r) % plan.tp; // tp is the grid's last (fastest) axis
    for (const auto &entry : states) {
      auto it = expected.states[0].find(entry.getKey());
      if (it == expected.states[0].end())
        continue;
      Tensor want = it->second;
      // The first moment after one step is (1 - beta1) g: the gradient itself, free of AdamW's amplification.
      if (entry.getKey().ends_with("/adam_m")) {
        llvm::StringRef param = entry.getKey().drop_back(strlen("/adam_m"));
        if (mlir::ptrain::TPSliceAttr slice = slices.lookup(param))
          want = sliceLike(want, slice, plan.tp, part);
        double scale = 0;
        for (int64_t i = 0, e = want.getNumElements(); i < e; ++i)
          scale = std::max(scale, std::fabs(want.getAsDouble(i)));
        double relative = maxAbsDiff(entry.getValue(), want) / std::max({scale, 1e-3 * modelScale, 1e-30});
        worstMoment = std::max(worstMoment, relative);
        EXPECT_LE(relative, 1e-4) << "gradient (first moment) of " << param.str() << " on rank " << r;
        ++comparedMoments;
        continue;
      }
      if (entry.getKey().contains('/'))
        continue;
      if (mlir::ptrain::TPSliceAttr slice = slices.lookup(entry.getKey())) {
        want = sliceLike(want, slice, plan.tp, part);
      } else if (part > 0) {
        EXPECT_TRUE(bitEqual(entry.getValue(), actual.states[r - part].lookup(entry.getKey())))
            << "replicated parameter " << entry.getKey().str() << " differs between tp ranks " << r - part << " and "
            << r;
      }
      ASSERT_EQ(entry.getValue().getShape(), want.getShape()) << entry.getKey().str();
      double diff = maxAbsDiff(entry.getValue(), want);
      if (diff > worst) {
        worst = diff;
        worstKey = entry.getKey().str();
      }
      EXPECT_LE(diff, 2e-5) << "parameter " << entry.getKey().str() << " on rank " << r;
      ++compared;
    }
  }
  EXPECT_GE(compared, params * plan.dp * plan.tp);
  EXPECT_GE(comparedMoments, params * plan.dp * plan.tp);
  std::printf("%s: loss %.9g (one rank %.9g), worst parameter difference %.3g (%s), worst gradient difference "
              "%.3g of its max |g|\n",
              planName(plan).c_str(), actual.losses[0], expected.losses[0], worst, worstKey.c_str(), worstMoment);
}

} // namespace ptrain_test

#endif // PTRAIN_UNITTESTS_INTERPRETER_PLANHARNESS_H
