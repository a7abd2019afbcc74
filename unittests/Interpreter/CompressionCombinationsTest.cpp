//===- CompressionCombinationsTest.cpp - compression techniques combined ---===//
//
// Issue 8 beyond its text (docs/Compression.md, "Combinations and their tests"): the combinations of
// compression techniques and parallelisms that no other test runs, each executed on the in-process
// multi-rank executor (the bundled GPT, one repeated batch of 16 x 64 tokens, lr 1e-3):
// * mcbench's TP site under data parallelism (dp = 2 x tp = 2, 4 ranks): identity TP codecs bit-equal to the
//   uncompressed plan, 8-bit TP codecs with error feedback train, a residual per backward site on every
//   (dp, tp) rank;
// * FE (fused embedding sync) and SC (data-parallel PowerSGD) under the interleaved schedule (dp = 2 x pp = 2
//   x v = 2, 4 ranks; llama_tiny_8l at dp = 2 x pp = 4 x v = 2, 8 ranks);
// * --ptrain-expand-codecs on a plan with the gathered codecs (8-bit TP codecs, top-k on a dp gradient) and
//   PowerSGD on the TP sites and on dp gradients at dp = 2 x tp = 2: every one expanded, bit-equal.
//
//===----------------------------------------------------------------------===//

#include "PlanHarness.h"
#include "SourceDir.h"

#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::ptrain::interp;
using namespace ptrain_test;

namespace {

using Model = RepeatedBatchModel;

/// Every loss of `run` within `tolerance` relative of `plain`'s, and falling from step to step.
void expectTrainsNear(const PlanRun &plain, const PlanRun &run, double tolerance, const std::string &what) {
  ASSERT_EQ(run.losses.size(), plain.losses.size()) << what;
  for (size_t k = 0; k < plain.losses.size(); ++k) {
    std::printf("%s step %zu: loss %.6f uncompressed, %.6f compressed (%+.4f%%)\n", what.c_str(), k, plain.losses[k],
                run.losses[k], 100 * (run.losses[k] / plain.losses[k] - 1));
    EXPECT_NEAR(run.losses[k], plain.losses[k], tolerance * plain.losses[k]) << what << " step " << k;
    if (k > 0) {
      EXPECT_LT(run.losses[k], run.losses[k - 1]) << what << " step " << k;
    }
  }
}

/// The losses within 1e-6 relative and every state within 1e-5 absolute (1e-2 of lr) of `plain`: FE regroups
/// the tied gradient's sum over dp x pp, the same numbers added in another order.
void expectSameSumRegrouped(const PlanRun &plain, const PlanRun &fused, const std::string &what) {
  ASSERT_EQ(fused.losses.size(), plain.losses.size()) << what;
  ASSERT_EQ(fused.states.size(), plain.states.size()) << what;
  for (size_t k = 0; k < plain.losses.size(); ++k) {
    std::printf("%s step %zu: loss %.8f two-step sync, %.8f FE\n", what.c_str(), k, plain.losses[k], fused.losses[k]);
    EXPECT_NEAR(fused.losses[k], plain.losses[k], 1e-6 * plain.losses[k]) << what << " step " << k;
  }
  double worst = 0;
  for (auto [r, states] : llvm::enumerate(plain.states))
    for (const auto &entry : states) {
      const double diff = maxAbsDiff(entry.getValue(), fused.states[r].lookup(entry.getKey()));
      worst = std::max(worst, diff);
      EXPECT_LE(diff, 1e-5) << what << ": rank " << r << " state " << entry.getKey().str();
    }
  std::printf("%s: max |state difference| FE vs the two-step sync %.3g\n", what.c_str(), worst);
}

/// The ranks that hold `key`, and whether its value is bit-equal on all of them.
std::vector<size_t> holdersOf(const PlanRun &run, llvm::StringRef key) {
  std::vector<size_t> holders;
  for (size_t r = 0; r < run.states.size(); ++r)
    if (run.states[r].count(key))
      holders.push_back(r);
  for (size_t r : holders)
    EXPECT_TRUE(bitEqual(run.states[r].lookup(key), run.states[holders[0]].lookup(key)))
        << key.str() << " differs between ranks " << holders[0] << " and " << r;
  return holders;
}

/// The [dp, pp] all-reduces of the optimizer steps of `module` by the sending rank's pipeline stage.
std::map<int64_t, int64_t> fusedSyncsPerStage(ModuleOp module) {
  std::map<int64_t, int64_t> syncs;
  module->walk([&](mlir::ptrain::AllReduceStartOp op) {
    auto fn = op->getParentOfType<func::FuncOp>();
    auto stage = mlir::ptrain::getStage(fn);
    auto axes = llvm::to_vector(op.getGridAxes().getAsValueRange<StringAttr>());
    if (stage && fn.getSymName().ends_with("_optimizer_step") && axes == SmallVector<StringRef>{"dp", "pp"})
      ++syncs[stage.getIndex()];
  });
  return syncs;
}

//===----------------------------------------------------------------------===//
// mcbench's TP site under data parallelism.
//===----------------------------------------------------------------------===//

const Plan kDp2Tp2{2, 1, 2, "1f1b", 1, 2};

// Identity TP codecs at dp = 2 x tp = 2 (ranks row-major over (dp, tp)): top-k keeping every element on the
// forward sites (gathered over each replica's tp pair, decoded and summed in member order) and rand-k keeping
// every element on the backward sites with error feedback (summed at the shared positions; the residual stays
// 0), then the ordinary dp all-reduces of the gradients: two steps bit-equal to the uncompressed dp2 x tp2
// plan (losses and every state of every rank). PowerSGD at its exact rank on both directions too.
TEST(CompressionCombinations, IdentityTensorParallelCodecsUnderDataParallelAreBitEqual) {
  Model gpt;
  openBundledGpt(gpt);
  ASSERT_TRUE(gpt.l0 && gpt.provider);
  PlanRun plain = gpt.run(kDp2Tp2, "", 2);
  ASSERT_EQ(plain.states.size(), 4u);
  PlanRun identity = gpt.run(kDp2Tp2, "policy=mcbench tp-fwd-codec=topk:ratio=1 tp-bwd-codec=randk:ratio=1,seed=3", 2);
  expectBitEqualRuns(plain, identity, "dp2 x tp2 top-k/rand-k");
  for (size_t r = 0; r < identity.states.size(); ++r)
    EXPECT_TRUE(identity.states[r].count("tp/layer3/mlp_in/residual")) << "rank " << r << " has no TP residual";
  expectBitEqualRuns(plain,
                     gpt.run(kDp2Tp2,
                             "policy=mcbench tp-fwd-codec=powersgd:rank=128,warm-start=false "
                             "tp-bwd-codec=powersgd:rank=128",
                             2),
                     "dp2 x tp2 powersgd exact");
}

// 8-bit per-channel TP codecs on every forward and backward TP site at dp = 2 x tp = 2 with error feedback on
// the backward sites (the default): the run trains within 0.1% of the uncompressed plan over 3 steps, the
// replicas agree on every parameter (the dp all-reduce gives both the same update), and every backward site
// holds its residual on all four ranks, nonzero and different on each (each keeps what its own partial sum of
// its own replica's data lost).
TEST(CompressionCombinations, EightBitTensorParallelCodecsUnderDataParallelTrain) {
  Model gpt;
  openBundledGpt(gpt);
  ASSERT_TRUE(gpt.l0 && gpt.provider);
  const int64_t steps = 3;
  PlanRun plain = gpt.run(kDp2Tp2, "", steps);
  PlanRun q8 = gpt.run(kDp2Tp2, "policy=mcbench tp-fwd-codec=quant:bits=8 tp-bwd-codec=quant:bits=8", steps);
  ASSERT_EQ(plain.losses.size(), size_t(steps));
  expectTrainsNear(plain, q8, 1e-3, "dp2 x tp2 8-bit TP codecs");
  EXPECT_NE(q8.losses.back(), plain.losses.back()) << "8-bit TP codecs compressed nothing";
  ASSERT_EQ(q8.states.size(), 4u);
  for (size_t r = 2; r < 4; ++r)
    for (const char *key : {"wte.weight", "blocks.0.attn.qkv.weight", "blocks.3.mlp.proj.weight"})
      EXPECT_TRUE(bitEqual(q8.states[r].lookup(key), q8.states[r - 2].lookup(key)))
          << key << ": replicas " << r - 2 << " and " << r << " differ";
  for (int64_t l = 0; l < 4; ++l)
    for (const char *role : {"attn_in", "mlp_in"}) {
      const std::string key = "tp/layer" + std::to_string(l) + "/" + role + "/residual";
      for (size_t r = 0; r < 4; ++r) {
        ASSERT_TRUE(q8.states[r].count(key)) << key << " on rank " << r;
        EXPECT_GT(l2Norm(q8.states[r].lookup(key)), 0.0) << key << " on rank " << r;
        for (size_t o = 0; o < r; ++o)
          EXPECT_FALSE(bitEqual(q8.states[r].lookup(key), q8.states[o].lookup(key)))
              << key << ": ranks " << o << " and " << r << " hold the same residual";
      }
    }
}

//===----------------------------------------------------------------------===//
// FE and SC under the interleaved schedule.
//===----------------------------------------------------------------------===//

// dp = 2 x pp = 2 x v = 2 (4 ranks, 2 micro-batches per replica): the tied wte.weight is used by virtual stage
// 0 (rank 0's chunk 0) and virtual stage 3 (rank 1's chunk 1), so both pipeline ranks hold it and FE is one
// [dp, pp] all-reduce per rank (the whole group: no subgroup at pp = 2). Over two steps FE equals the two-step
// sync (dp average, then [pp] sum) up to the regrouped sum (losses 1e-6 relative, states 1e-5), and the tied
// embedding and both AdamW moments are bit-equal on all four holders.
TEST(CompressionCombinations, FusedEmbeddingSyncUnderInterleaved) {
  Model gpt;
  openBundledGpt(gpt);
  ASSERT_TRUE(gpt.l0 && gpt.provider);
  const Plan plan{2, 2, 2, "interleaved", 2};
  OwningOpRef<ModuleOp> fusedPlan = gpt.plans.lower(*gpt.l0, plan, 1e-3, "cb=false sc=false");
  ASSERT_TRUE(fusedPlan);
  EXPECT_EQ(fusedSyncsPerStage(*fusedPlan), (std::map<int64_t, int64_t>{{0, 1}, {1, 1}}))
      << "one fused [dp, pp] sync of the tied matrix per pipeline rank";
  PlanRun twoStep = gpt.run(plan, "cb=false sc=false fe=false", 2);
  PlanRun fused = gpt.run(*fusedPlan, 2);
  expectSameSumRegrouped(twoStep, fused, "dp2 pp2 v2 interleaved");
  for (const char *key : {"wte.weight", "wte.weight/adam_m", "wte.weight/adam_v"})
    EXPECT_EQ(holdersOf(fused, key), (std::vector<size_t>{0, 1, 2, 3})) << key;
}

// SC under the interleaved schedule at dp = 2 x pp = 2 x v = 2: on its exact path (rank above min(n, m): the
// codes carry every gradient, one compressed all-reduce per gradient of both chunks of a rank) three steps are
// bit-equal to the uncompressed interleaved plan. At rank 8 with error feedback on every stage (CB and FE off)
// the interleaved run trains and gives the 1F1B plan's losses (the same gradients, compressed the same way)
// within 1e-5 relative (measured 2026-12-02: equal to 8 digits), and both chunks' gradients hold a nonzero
// residual.
TEST(CompressionCombinations, DataParallelPowerSgdUnderInterleaved) {
  Model gpt;
  openBundledGpt(gpt);
  ASSERT_TRUE(gpt.l0 && gpt.provider);
  const Plan plan{2, 2, 2, "interleaved", 2};
  const int64_t steps = 3;
  PlanRun plain = gpt.run(plan, "", steps);
  ASSERT_EQ(plain.losses.size(), size_t(steps));
  expectBitEqualRuns(plain, gpt.run(plan, "cb=false fe=false sc-all=true sc-rank=100000", steps),
                     "dp2 pp2 v2 SC exact path");
  const std::string sc = "cb=false fe=false sc-all=true sc-rank=8";
  PlanRun interleaved = gpt.run(plan, sc, steps);
  PlanRun oneFOneB = gpt.run(Plan{2, 2, 2, "1f1b"}, sc, steps);
  ASSERT_EQ(interleaved.losses.size(), size_t(steps));
  ASSERT_EQ(oneFOneB.losses.size(), size_t(steps));
  for (int64_t k = 0; k < steps; ++k) {
    std::printf("dp2 pp2 SC rank 8 step %lld: loss %.8f interleaved v2, %.8f 1F1B, %.8f uncompressed\n",
                static_cast<long long>(k), interleaved.losses[k], oneFOneB.losses[k], plain.losses[k]);
    EXPECT_NEAR(interleaved.losses[k], oneFOneB.losses[k], 1e-5 * oneFOneB.losses[k]) << "step " << k;
    if (k > 0) {
      EXPECT_LT(interleaved.losses[k], interleaved.losses[k - 1]) << "step " << k;
    }
  }
  EXPECT_NE(interleaved.losses.back(), plain.losses.back()) << "SC compressed nothing";
  // Rank 0 holds chunk 0 (layer 0) and chunk 1 (layer 2): a residual for a gradient of each.
  for (const char *key : {"sc/blocks.0.mlp.fc.weight/grad/residual", "sc/blocks.2.mlp.fc.weight/grad/residual"}) {
    ASSERT_TRUE(interleaved.states[0].count(key)) << key;
    EXPECT_GT(l2Norm(interleaved.states[0].lookup(key)), 0.0) << key;
  }
}

// llama_tiny_8l (8 layers, hidden 32, untied head) at dp = 2 x pp = 4 x v = 2 (8 ranks, 4 micro-batches per
// replica, one layer per virtual stage): SC's exact path on every stage is bit-equal to the uncompressed
// interleaved plan after three steps, and SC at rank 4 (error feedback) trains within 2% (measured 2026-12-02:
// +0.23% and +0.44% after steps 1 and 2).
TEST(CompressionCombinations, DataParallelPowerSgdUnderInterleavedPp4) {
  Model llama;
  openLlamaTiny8l(llama, 16);
  ASSERT_TRUE(llama.l0 && llama.provider);
  const Plan plan{2, 4, 4, "interleaved", 2};
  const int64_t steps = 3;
  PlanRun plain = llama.run(plan, "", steps);
  ASSERT_EQ(plain.losses.size(), size_t(steps));
  expectBitEqualRuns(plain, llama.run(plan, "cb=false fe=false sc-all=true sc-rank=100000", steps),
                     "llama dp2 pp4 v2 SC exact path");
  PlanRun sc = llama.run(plan, "cb=false sc-all=true sc-rank=4", steps);
  expectTrainsNear(plain, sc, 0.02, "llama dp2 pp4 v2 SC rank 4");
  EXPECT_NE(sc.losses.back(), plain.losses.back()) << "SC compressed nothing";
}

//===----------------------------------------------------------------------===//
// --ptrain-expand-codecs with every kind of compressed all-reduce in one plan.
//===----------------------------------------------------------------------===//

// dp = 2 x tp = 2 with 8-bit codecs on the forward TP sites (gathered), PowerSGD rank 8 with error feedback
// on the backward TP sites, and by parameter overrides PowerSGD rank 4 and top-k 10% with error feedback
// (gathered) on two dp gradients: --ptrain-expand-codecs expands every one of them, PowerSGD over [tp] and
// over [dp] into its phases (a finish each), 8-bit and top-k into a ptrain.compress, one all-gather per code
// and a decode of each member's code; no compressed all-reduce is left. Two steps of the expanded plan (after
// --ptrain-verify-plan) are bit-equal to the unexpanded plan (both groups have two members: the plain
// all-reduce's double sum rounded once is the fp32 sum; the gathered decodes are added in member order in
// both).
TEST(CompressionCombinations, ExpandCodecsOnTensorAndDataParallelCodecs) {
  Model gpt;
  openBundledGpt(gpt);
  ASSERT_TRUE(gpt.l0 && gpt.provider);
  const std::string overrides = ptrain_test::sourceDir() + "/unittests/Interpreter/Inputs/mixed-overrides-dp.json";
  OwningOpRef<ModuleOp> lowered =
      gpt.plans.lower(*gpt.l0, kDp2Tp2, 1e-3,
                      "policy=mcbench tp-fwd-codec=quant:bits=8 tp-bwd-codec=powersgd:rank=8 overrides=" + overrides);
  ASSERT_TRUE(lowered);
  OwningOpRef<ModuleOp> expanded(cast<ModuleOp>((*lowered)->clone()));
  PassManager pm(&gpt.plans.context);
  ASSERT_TRUE(succeeded(parsePassPipeline("ptrain-expand-codecs, ptrain-verify-plan", pm)));
  ASSERT_TRUE(succeeded(pm.run(*expanded)));
  auto count = [](ModuleOp module) {
    std::map<std::string, int64_t> counts;
    module->walk([&](mlir::ptrain::CompressedAllReduceStartOp op) {
      std::string axes, codec;
      for (StringRef axis : op.getGridAxes().getAsValueRange<StringAttr>())
        axes += axis.str();
      llvm::raw_string_ostream os(codec);
      os << op.getCodec();
      ++counts[axes + " " + codec.substr(0, codec.find('<'))];
    });
    module->walk([&](mlir::ptrain::PowerSGDFinishOp) { ++counts["finish"]; });
    module->walk([&](mlir::ptrain::AllGatherStartOp) { ++counts["all_gather_start"]; });
    return counts;
  };
  std::map<std::string, int64_t> before = count(*lowered), after = count(*expanded);
  for (const auto &[what, n] : before)
    std::printf("before expansion: %s x %lld\n", what.c_str(), static_cast<long long>(n));
  for (const auto &[what, n] : after)
    std::printf("after expansion: %s x %lld\n", what.c_str(), static_cast<long long>(n));
  const int64_t tpPowerSgd = before["tp #ptrain.powersgd"], dpPowerSgd = before["dp #ptrain.powersgd"];
  const int64_t tpQuant = before["tp #ptrain.quant"], dpTopk = before["dp #ptrain.topk"];
  EXPECT_GT(tpPowerSgd, 0);
  EXPECT_GT(dpPowerSgd, 0);
  EXPECT_GT(tpQuant, 0);
  EXPECT_GT(dpTopk, 0);
  EXPECT_EQ(before["all_gather_start"], 0);
  EXPECT_EQ(after["finish"], tpPowerSgd + dpPowerSgd);
  // Per-channel symmetric 8-bit: packed bytes and scales; top-k: values and indices.
  EXPECT_EQ(after["all_gather_start"], 2 * tpQuant + 2 * dpTopk);
  EXPECT_EQ(after.size(), 2u) << "a compressed all-reduce is left after the expansion";
  expectBitEqualRuns(gpt.run(*lowered, 2), gpt.run(*expanded, 2), "expanded dp2 x tp2 plan");
}

} // namespace
