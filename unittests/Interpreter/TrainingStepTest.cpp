//===- TrainingStepTest.cpp - clipping and SGD, kernels and plans ---------===//
//
// Issue 6's training-step options on the reference interpreter and the multi-rank executor
// (docs/TrainingStep.md): the kernels of ptrain.sum_squares, ptrain.clip_scale and ptrain.sgd against
// hand-computed values; global-norm clipping of one rank against the formula scale = C / (norm + 1e-6)
// with the norm read from an unclipped SGD step; and dp / pp / tp plans with clipping active (C a quarter
// of the norm) against the one-rank step, with a control showing that the tolerance separates a 1% change
// of C.
//
//===----------------------------------------------------------------------===//

#include "SourceDir.h"
#include "PlanHarness.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Interpreter/StepKernels.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::ptrain::interp;
using namespace ptrain_test;

namespace {

Tensor f32(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values) {
  return Tensor::fromFloats(DType::F32, shape, values);
}
Tensor step(int64_t t) { return llvm::cantFail(Tensor::fromInts(DType::I64, {}, {t})); }

//===--- Kernels ------------------------------------------------------------===//

TEST(StepKernels, SumSquaresAccumulatesInDouble) {
  llvm::Expected<Tensor> s = evalSumSquares(f32({2, 2}, {1, -2, 3, 0.5}));
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(s->getRank(), 0);
  EXPECT_EQ(s->getAsDouble(0), 14.25);
  // 2^24 + 1 + 1 is not representable step by step in f32 but is the f32 rounding of the f64 sum 2^24 + 2.
  llvm::Expected<Tensor> big = evalSumSquares(f32({3}, {4096, 1, 1}));
  ASSERT_TRUE(static_cast<bool>(big));
  EXPECT_EQ(big->getAsDouble(0), 16777218.0);
}

TEST(StepKernels, ClipScaleIsMegatronsCoefficient) {
  auto scale = [](double sumSquares, double maxNorm) {
    llvm::Expected<Tensor> s = evalClipScale(f32({}, {sumSquares}), maxNorm);
    return s ? s->getAsDouble(0) : (llvm::consumeError(s.takeError()), -1.0);
  };
  EXPECT_FLOAT_EQ(scale(16.0, 1.0), static_cast<float>(1.0 / (4.0 + 1e-6))); // norm 4 > 1: clipped
  EXPECT_EQ(scale(0.25, 1.0), 1.0);                                          // norm 0.5 < 1: unchanged
  EXPECT_EQ(scale(0.0, 1.0), 1.0);                                           // no gradient
  EXPECT_EQ(scale(std::numeric_limits<double>::infinity(), 1.0), 0.0);
  EXPECT_TRUE(std::isnan(scale(std::nan(""), 1.0))); // poisoned, not silently 1
  llvm::Expected<Tensor> bad = evalClipScale(f32({}, {1.0}), 0.0);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("max_norm"), std::string::npos);
}

TEST(StepKernels, SgdWithMomentumAndWeightDecayIsTorchsUpdate) {
  // lr 0.5 constant (warmup 0, min ratio 1); wd 0.1: g = grad + 0.1 p; buf = 0.9 buf + g; p -= 0.5 buf.
  AdamWHyperparameters h{0.5, 0, 10, 1.0, 0, 0, 0, 0};
  Tensor p = f32({2}, {1.0, -2.0}), g = f32({2}, {0.5, 0.25}), buf = f32({2}, {0.0, 1.0});
  llvm::Expected<std::vector<Tensor>> r = evalSGD(p, g, step(3), &buf, h, 0.9, 0.1);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  ASSERT_EQ(r->size(), 2u);
  // element 0: g = 0.6, buf = 0.6, p = 1 - 0.3 = 0.7; element 1: g = 0.05, buf = 0.95, p = -2 - 0.475.
  EXPECT_FLOAT_EQ((*r)[1].getAsDouble(0), 0.6f);
  EXPECT_FLOAT_EQ((*r)[1].getAsDouble(1), 0.95f);
  EXPECT_FLOAT_EQ((*r)[0].getAsDouble(0), 0.7f);
  EXPECT_FLOAT_EQ((*r)[0].getAsDouble(1), -2.475f);
  // No momentum: no buffer, p -= lr (grad + wd p).
  llvm::Expected<std::vector<Tensor>> plain = evalSGD(p, g, step(1), nullptr, h, 0.0, 0.0);
  ASSERT_TRUE(static_cast<bool>(plain));
  ASSERT_EQ(plain->size(), 1u);
  EXPECT_FLOAT_EQ((*plain)[0].getAsDouble(0), 0.75f);
  // A buffer without momentum (or the reverse) is an error.
  llvm::Expected<std::vector<Tensor>> bad = evalSGD(p, g, step(1), nullptr, h, 0.9, 0.0);
  ASSERT_FALSE(static_cast<bool>(bad));
  llvm::consumeError(bad.takeError());
}

//===--- Plans of the bundled GPT ---------------------------------------------===//

/// The bundled GPT, its ONNX initial weights and one global batch of 16 x 64 tokens.
struct Gpt {
  Plans plans;
  OwningOpRef<ModuleOp> l0 = plans.importBundledGpt();
  StateProvider provider = plans.openInitialValues(ptrain_test::sourceDir() + "/models/gpt/gpt.onnx");
  std::vector<Tensor> batches = randomBatches(1, 16, 64, 256, 42);

  PlanRun run(const Plan &plan, double lr) {
    OwningOpRef<ModuleOp> module = plans.lower(*l0, plan, lr);
    if (!module)
      return {};
    return plans.run(*module, provider, batches);
  }
  Tensor initial(llvm::StringRef key) {
    llvm::Expected<Tensor> t = provider(key, RankedTensorType());
    if (!t) {
      ADD_FAILURE() << llvm::toString(t.takeError());
      return Tensor();
    }
    return *t;
  }
};

// SGD without momentum or weight decay at lr = 0.1 (warm-up 1: lr(1) = peak): p1 = p0 - lr * scale * g. The
// unclipped step gives g = (p0 - p1) / lr and the norm N over the 52 parameters (the tied embedding once);
// with clip-norm = N / 4 every parameter must move by lr * C / (N + 1e-6) * g. Tolerance: g is read back
// from f32 parameters (|p| < 4: an ulp of 2.4e-7, so 2.4e-6 in g), so 1e-6 absolute on the parameters.
const char *kSgd = "optimizer=sgd weight-decay=0";

/// The SGD options with clip-norm = `clip`, printed so that the pass reads back exactly `clip`.
std::string clipOptions(double clip) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", clip);
  return std::string(kSgd) + " clip-norm=" + buf;
}

double globalNorm(Gpt &gpt, const PlanRun &unclipped, double lr) {
  double sumSquares = 0;
  for (const auto &entry : unclipped.states[0]) {
    if (entry.getKey().contains('/') || !entry.getValue().isFloat()) // moments, the step counter
      continue;
    Tensor p0 = gpt.initial(entry.getKey());
    for (int64_t i = 0, e = p0.getNumElements(); i < e; ++i) {
      double g = (p0.getAsDouble(i) - entry.getValue().getAsDouble(i)) / lr;
      sumSquares += g * g;
    }
  }
  return std::sqrt(sumSquares);
}

TEST(GlobalNormClipping, OneRankScalesEveryGradientByCOverTheNorm) {
  const double lr = 0.1;
  Gpt gpt;
  ASSERT_TRUE(gpt.l0 && gpt.provider);
  PlanRun unclipped = gpt.run(Plan{1, 1, 4, "1f1b", 1, 1, kSgd}, lr);
  ASSERT_EQ(unclipped.states.size(), 1u);
  const double norm = globalNorm(gpt, unclipped, lr), clip = norm / 4;
  ASSERT_GT(norm, 0.0);
  PlanRun clipped = gpt.run(Plan{1, 1, 4, "1f1b", 1, 1, clipOptions(clip)}, lr);
  ASSERT_EQ(clipped.states.size(), 1u);
  EXPECT_EQ(clipped.losses, unclipped.losses); // the loss is computed before the update
  const double scale = clip / (norm + 1e-6);
  int64_t compared = 0;
  double worst = 0;
  for (const auto &entry : clipped.states[0]) {
    if (entry.getKey().contains('/') || !entry.getValue().isFloat())
      continue;
    Tensor p0 = gpt.initial(entry.getKey());
    const Tensor &full = unclipped.states[0].lookup(entry.getKey());
    for (int64_t i = 0, e = p0.getNumElements(); i < e; ++i) {
      double want = p0.getAsDouble(i) - scale * (p0.getAsDouble(i) - full.getAsDouble(i));
      worst = std::max(worst, std::fabs(entry.getValue().getAsDouble(i) - want));
    }
    ++compared;
  }
  EXPECT_EQ(compared, 52);
  EXPECT_LE(worst, 1e-6);
  std::printf("global norm %.6g, clip-norm %.6g, scale %.6g, worst parameter difference %.3g\n", norm, clip, scale,
              worst);
}

class ClippedPlan : public ::testing::TestWithParam<Plan> {};

/// Every parameter of every rank of `actual` against the one-rank `expected` (tp slices cut from it); the
/// worst absolute difference.
double worstParameterDifference(ModuleOp planned, const PlanRun &expected, const PlanRun &actual, int64_t tp) {
  llvm::StringMap<mlir::ptrain::TPSliceAttr> slices;
  for (auto state : planned.getOps<mlir::ptrain::StateOp>())
    if (auto slice = mlir::ptrain::getTPSlice(state))
      slices[state.getKey()] = slice;
  double worst = 0;
  for (auto [r, states] : llvm::enumerate(actual.states))
    for (const auto &entry : states) {
      if (entry.getKey().contains('/'))
        continue;
      Tensor want = expected.states[0].lookup(entry.getKey());
      if (mlir::ptrain::TPSliceAttr slice = slices.lookup(entry.getKey()))
        want = llvm::cantFail(tensorParallelSlice(want, slice.getDim(), slice.getGroups(), tp,
                                                  static_cast<int64_t>(r) % tp));
      EXPECT_EQ(want.getShape(), entry.getValue().getShape()) << entry.getKey().str();
      if (want.getShape() == entry.getValue().getShape())
        worst = std::max(worst, maxAbsDiff(entry.getValue(), want));
    }
  return worst;
}

// The plan with clipping active (C = N / 4, N the one-rank norm) equals the one-rank clipped step: the norm
// counts the tied embedding once over pp, replicated parameters once over tp, and dp replicas not at all
// (their averaged gradients are equal). Tolerance 2e-6 absolute on the parameters (SGD, lr 0.1: 2e-5 of
// the gradient; the plans' gradients differ by f32 summation order, 2.6e-7 of max |g| at most under tp).
// Control: the one-rank step with C 1% larger differs from the one with C by more than the tolerance, so a
// norm counted twice (the tied 256 x 128 embedding, every LayerNorm under tp) could not pass.
TEST_P(ClippedPlan, MatchesTheOneRankClippedStep) {
  const Plan base = GetParam();
  const double lr = 0.1, tolerance = 2e-6;
  Gpt gpt;
  ASSERT_TRUE(gpt.l0 && gpt.provider);
  const int64_t m = base.m * base.dp;
  // The one-rank runs, shared by the plans of one global batch (m micro-batches of 4 rows).
  struct OneRank {
    double norm = 0, clip = 0;
    std::string options;
    PlanRun expected, control;
  };
  static std::map<int64_t, OneRank> oneRank;
  if (!oneRank.count(m)) {
    OneRank o;
    PlanRun unclipped = gpt.run(Plan{1, 1, m, "1f1b", 1, 1, kSgd}, lr);
    ASSERT_EQ(unclipped.states.size(), 1u);
    o.norm = globalNorm(gpt, unclipped, lr);
    o.clip = o.norm / 4;
    o.options = clipOptions(o.clip);
    o.expected = gpt.run(Plan{1, 1, m, "1f1b", 1, 1, o.options}, lr);
    o.control = gpt.run(Plan{1, 1, m, "1f1b", 1, 1, clipOptions(o.clip * 1.01)}, lr);
    oneRank[m] = std::move(o);
  }
  const OneRank &o = oneRank[m];
  const double norm = o.norm, clip = o.clip;
  const std::string &options = o.options;
  const PlanRun &expected = o.expected, &control = o.control;
  Plan plan = base;
  plan.build = options;
  OwningOpRef<ModuleOp> planned = gpt.plans.lower(*gpt.l0, plan, lr);
  ASSERT_TRUE(planned);
  PlanRun actual = gpt.plans.run(*planned, gpt.provider, gpt.batches);
  ASSERT_EQ(expected.states.size(), 1u);
  ASSERT_EQ(control.states.size(), 1u);
  ASSERT_EQ(actual.losses.size(), 1u);
  EXPECT_NEAR(actual.losses[0], expected.losses[0], 1e-6 * std::fabs(expected.losses[0]));
  double controlDiff = 0;
  for (const auto &entry : expected.states[0])
    if (!entry.getKey().contains('/'))
      controlDiff = std::max(controlDiff, maxAbsDiff(entry.getValue(), control.states[0].lookup(entry.getKey())));
  EXPECT_GT(controlDiff, 5 * tolerance);
  double worst = worstParameterDifference(*planned, expected, actual, plan.tp);
  EXPECT_LE(worst, tolerance);
  std::printf("%s: norm %.6g, clip-norm %.6g, worst parameter difference %.3g (C + 1%%: %.3g)\n",
              planName(plan).c_str(), norm, clip, worst, controlDiff);
}

INSTANTIATE_TEST_SUITE_P(Plans, ClippedPlan,
                         ::testing::Values(Plan{1, 2, 4, "1f1b"}, Plan{2, 1, 2, "1f1b"}, Plan{1, 1, 4, "1f1b", 1, 2},
                                           Plan{2, 2, 2, "gpipe"}, Plan{1, 2, 4, "1f1b", 1, 2},
                                           Plan{1, 2, 4, "interleaved", 2}),
                         [](const ::testing::TestParamInfo<Plan> &info) { return planName(info.param); });

// SGD with momentum 0.9 and weight decay 0.01 for two steps (the buffer carries step 1 into step 2), each with
// two different global batches: pp=2 (the tied embedding's buffer on both stages) and tp=2 x pp=2 against one
// rank, parameters and momentum buffers (`<param>/sgd_momentum`, sliced like their parameter under tp) within
// 2e-6 absolute (lr 0.1; the gradients differ by f32 summation order only).
TEST(Sgd, MomentumPlansMatchTheOneRankSteps) {
  const double lr = 0.1, tolerance = 2e-6;
  Gpt gpt;
  ASSERT_TRUE(gpt.l0 && gpt.provider);
  gpt.batches = randomBatches(2, 16, 64, 256, 11);
  const std::string options = "optimizer=sgd momentum=0.9 weight-decay=0.01";
  PlanRun expected = gpt.run(Plan{1, 1, 4, "1f1b", 1, 1, options}, lr);
  ASSERT_EQ(expected.states.size(), 1u);
  ASSERT_EQ(expected.losses.size(), 2u);
  EXPECT_LT(expected.losses[1], expected.losses[0]);
  int64_t buffers = 0;
  for (const auto &entry : expected.states[0])
    buffers += entry.getKey().ends_with("/sgd_momentum");
  EXPECT_EQ(buffers, 52);
  for (Plan plan : {Plan{1, 2, 4, "1f1b"}, Plan{1, 2, 4, "1f1b", 1, 2}}) {
    plan.build = options;
    OwningOpRef<ModuleOp> planned = gpt.plans.lower(*gpt.l0, plan, lr);
    ASSERT_TRUE(planned);
    PlanRun actual = gpt.plans.run(*planned, gpt.provider, gpt.batches);
    ASSERT_EQ(actual.losses.size(), 2u);
    for (int k = 0; k < 2; ++k)
      EXPECT_NEAR(actual.losses[k], expected.losses[k], 1e-6 * std::fabs(expected.losses[k]));
    // The buffers compare like parameters: rename them so that worstParameterDifference sees them.
    PlanRun bufferRun, bufferExpected;
    auto buffersOf = [](const llvm::StringMap<Tensor> &states) {
      llvm::StringMap<Tensor> out;
      for (const auto &entry : states)
        if (entry.getKey().ends_with("/sgd_momentum"))
          out[entry.getKey().drop_back(strlen("/sgd_momentum"))] = entry.getValue();
      return out;
    };
    bufferExpected.states.push_back(buffersOf(expected.states[0]));
    for (const auto &states : actual.states)
      bufferRun.states.push_back(buffersOf(states));
    double worst = worstParameterDifference(*planned, expected, actual, plan.tp);
    double worstBuffer = worstParameterDifference(*planned, bufferExpected, bufferRun, plan.tp);
    EXPECT_LE(worst, tolerance);
    EXPECT_LE(worstBuffer, tolerance / lr);
    std::printf("%s: losses %.9g %.9g, worst parameter difference %.3g, worst momentum-buffer difference %.3g\n",
                planName(plan).c_str(), actual.losses[0], actual.losses[1], worst, worstBuffer);
  }
}

} // namespace
