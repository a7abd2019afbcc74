//===- ExpandCodecsTest.cpp - --ptrain-expand-codecs on the multi-rank executor -===//
//
// The expanded data-parallel PowerSGD (phase P, all-reduce P, phase Q, all-reduce Q, finish) run on the
// in-process multi-rank executor: its P, P^, Q, output and residuals pinned on 2 ranks with known 4 x 4
// gradients, and whole expanded plans of the bundled GPT bit-equal to the unexpanded ones.
//
//===----------------------------------------------------------------------===//

#include "SourceDir.h"
#include "PlanHarness.h"

#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.h"
#include "ptrain/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"

#include <cmath>

using namespace ptrain_test;
using mlir::ptrain::PowerSGDFinishOp;
using mlir::ptrain::PowerSGDPhaseQOp;

namespace {

Tensor f32(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values) {
  return Tensor::fromFloats(DType::F32, shape, values);
}

void expectNear(const Tensor &t, llvm::ArrayRef<double> expected, double atol, const std::string &what) {
  ASSERT_EQ(t.getNumElements(), static_cast<int64_t>(expected.size())) << what;
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t.getAsDouble(static_cast<int64_t>(i)), expected[i], atol) << what << " element " << i;
}

/// Runs @forward of `module` on its 2 dp ranks, rank r on {g_r, residual 0, warm-start Q0 = e0}.
std::vector<std::vector<Tensor>> runTwoRanks(ModuleOp module, const std::vector<double> &g0,
                                             const std::vector<double> &g1) {
  auto created = MultiRankExecutor::create(module, makeMapStateProvider({}));
  if (!created) {
    ADD_FAILURE() << llvm::toString(created.takeError());
    return {};
  }
  EXPECT_EQ((*created)->getNumRanks(), 2);
  auto results = (*created)->run([](int64_t) { return std::string("forward"); },
                                 [&](int64_t r) {
                                   return std::vector<Tensor>{f32({4, 4}, r == 0 ? g0 : g1),
                                                              f32({4, 4}, std::vector<double>(16, 0.0)),
                                                              f32({4, 1}, {1, 0, 0, 0})};
                                 });
  if (!results) {
    ADD_FAILURE() << llvm::toString(results.takeError());
    return {};
  }
  return std::move(*results);
}

bool runPasses(MLIRContext &context, ModuleOp module, const std::string &pipeline) {
  mlir::ptrain::registerPTrainPasses();
  PassManager pm(&context);
  if (failed(parsePassPipeline(pipeline, pm))) {
    ADD_FAILURE() << "bad pipeline " << pipeline;
    return false;
  }
  return succeeded(pm.run(module));
}

} // namespace

// Data-parallel PowerSGD on 2 ranks, rank 1, avg, error feedback, warm-start Q0 = e0 (Vogels et al. 2019,
// Algorithm 1 with Algorithm 2's error feedback), expanded into its phases and run on the executor. By hand
// (CodecsTest's DataParallelPowerSgdOnTwoRanksIsPinned checks the same numbers with numpy's,
// Inputs/codec_reference.py):
//   g0 + g1 = [[1, 3, 1, 1], [1, 0, 3, 3], [4, -1, 2, -1], [0, 2, -1, 1]]
//   P_r = M_r Q0 = the first column of g_r: P = P_0 + P_1 = [1, 1, 4, 0]; |P| = sqrt(18)
//   P^ = [1, 1, 4, 0] / sqrt(18)
//   Q = M_0^T P^ + M_1^T P^ = (g0 + g1)^T P^ = (row0 + row1 + 4 row2) / sqrt(18) = [18, -1, 12, 0] / sqrt(18)
//   out = P^ Q^T / 2 = [1, 1, 4, 0]^T [1/2, -1/36, 1/3, 0]
//   e_r = g_r - out (the residual against the averaged approximation), warm-start Q = Q / 2.
// The expanded plan's values equal the unexpanded op's bit for bit (both run the runtime's phase kernels; the
// plain all-reduce of two floats rounds once, as the fp32 sum does).
TEST(ExpandCodecs, DataParallelPowerSgdOnTwoRanksIsPinned) {
  Plans plans;
  const char *source = R"mlir(
    ptrain.grid @grid(dp = 2)
    func.func @forward(%g: tensor<4x4xf32>, %e: tensor<4x4xf32>, %q0: tensor<4x1xf32>)
        -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x1xf32>) {
      %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q0) on @grid axes [dp] reduction = avg
          {codec = #ptrain.powersgd<rank = 1>, error_feedback}
          : tensor<4x4xf32> state(tensor<4x4xf32>, tensor<4x1xf32>) -> state(tensor<4x4xf32>, tensor<4x1xf32>)
      %out = ptrain.wait %r : !ptrain.request<tensor<4x4xf32>>
      return %out, %e1, %q1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x1xf32>
    })mlir";
  OwningOpRef<ModuleOp> plain = parseSourceString<ModuleOp>(source, &plans.context);
  ASSERT_TRUE(plain);
  OwningOpRef<ModuleOp> expanded(cast<ModuleOp>((*plain)->clone()));
  ASSERT_TRUE(runPasses(plans.context, *expanded, "ptrain-expand-codecs"));
  // The intermediate values become results too: the summed P (phase Q's operand), P^ and the summed Q.
  PowerSGDPhaseQOp phaseQ;
  PowerSGDFinishOp finish;
  expanded->walk([&](PowerSGDPhaseQOp op) { phaseQ = op; });
  expanded->walk([&](PowerSGDFinishOp op) { finish = op; });
  ASSERT_TRUE(phaseQ && finish);
  auto fn = expanded->lookupSymbol<func::FuncOp>("forward");
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  ret->insertOperands(ret.getNumOperands(), {phaseQ.getP(), phaseQ.getPHat(), finish.getQ()});
  fn.setFunctionType(FunctionType::get(&plans.context, fn.getArgumentTypes(), ret.getOperandTypes()));
  ASSERT_TRUE(succeeded(verify(*expanded)));

  const std::vector<double> g0 = {1, 2, 0, -1, 0, 1, 3, 2, 2, -1, 1, 0, 1, 0, -2, 1};
  const std::vector<double> g1 = {0, 1, 1, 2, 1, -1, 0, 1, 2, 0, 1, -1, -1, 2, 1, 0};
  std::vector<std::vector<Tensor>> before = runTwoRanks(*plain, g0, g1), after = runTwoRanks(*expanded, g0, g1);
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(after.size(), 2u);
  const double s18 = std::sqrt(18.0), third = 1.0 / 3.0, a = -1.0 / 36.0;
  const std::vector<double> out = {0.5, a, third, 0, 0.5, a, third, 0, 2, 4 * a, 4 * third, 0, 0, 0, 0, 0};
  for (int64_t r = 0; r < 2; ++r) {
    const std::string rank = "rank " + std::to_string(r) + ": ";
    ASSERT_EQ(after[r].size(), 6u);
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(bitEqual(after[r][i], before[r][i])) << rank << "result " << i << " differs from the unexpanded op";
    expectNear(after[r][3], {1, 1, 4, 0}, 1e-6, rank + "summed P");
    expectNear(after[r][4], {1 / s18, 1 / s18, 4 / s18, 0}, 1e-6, rank + "P^");
    expectNear(after[r][5], {18 / s18, -1 / s18, 12 / s18, 0}, 1e-6, rank + "summed Q");
    expectNear(after[r][0], out, 1e-6, rank + "output");
    std::vector<double> e(16);
    for (int i = 0; i < 16; ++i)
      e[i] = (r == 0 ? g0 : g1)[i] - out[i];
    expectNear(after[r][1], e, 1e-6, rank + "residual");
    expectNear(after[r][2], {9 / s18, -0.5 / s18, 6 / s18, 0}, 1e-6, rank + "warm-start Q");
  }
}

// Whole plans of the bundled GPT at dp = 2 x pp = 2 (2 micro-batches, 1F1B), lowered, then expanded
// (--ptrain-expand-codecs, --ptrain-verify-plan): SC with error feedback on both stages at rank 4 (the matrices
// through phase P, Q and finish; the 1-D gradients on the exact path) and at rank 100000 (clamped to min(n, m):
// every gradient on the exact path). Two steps of each are bit-equal to the unexpanded plan: the losses and every
// state of every rank (parameters, moments, residuals, warm-start Qs).
TEST(ExpandCodecs, ExpandedScPlansAreBitEqualToTheUnexpandedOnes) {
  Plans plans;
  OwningOpRef<ModuleOp> l0 = plans.importBundledGpt();
  StateProvider provider = plans.openInitialValues(ptrain_test::sourceDir() + "/models/gpt/gpt.onnx");
  ASSERT_TRUE(l0 && provider);
  const Plan plan{2, 2, 2, "1f1b"};
  std::vector<Tensor> batches(2, randomBatches(1, 16, 64, 256, 7)[0]);
  for (const char *options : {"cb=false fe=false sc-all=true sc-rank=4", "cb=false sc-all=true sc-rank=100000"}) {
    OwningOpRef<ModuleOp> lowered = plans.lower(*l0, plan, 1e-3, options);
    ASSERT_TRUE(lowered) << options;
    OwningOpRef<ModuleOp> expanded(cast<ModuleOp>((*lowered)->clone()));
    ASSERT_TRUE(runPasses(plans.context, *expanded, "ptrain-expand-codecs, ptrain-verify-plan")) << options;
    int64_t compressed = 0, finishes = 0;
    (*lowered)->walk([&](mlir::ptrain::CompressedAllReduceStartOp) { ++compressed; });
    (*expanded)->walk([&](PowerSGDFinishOp) { ++finishes; });
    EXPECT_GT(compressed, 0) << options;
    EXPECT_EQ(finishes, compressed) << options;
    PlanRun before = plans.run(*lowered, provider, batches), after = plans.run(*expanded, provider, batches);
    ASSERT_EQ(before.losses.size(), 2u) << options;
    EXPECT_EQ(after.losses, before.losses) << options;
    ASSERT_EQ(after.states.size(), before.states.size()) << options;
    for (auto [r, states] : llvm::enumerate(before.states)) {
      EXPECT_EQ(after.states[r].size(), states.size()) << options << ": rank " << r;
      for (const auto &entry : states)
        EXPECT_TRUE(bitEqual(entry.getValue(), after.states[r].lookup(entry.getKey())))
            << options << ": rank " << r << " state " << entry.getKey().str();
    }
  }
}

// With more than two members the executor's plain all-reduce (double, rounded once) and the compressed one
// (fp32 in member order) may round a sum differently: at dp = 4, rank 2 on 8 x 6 gradients (avg, error
// feedback, warm start drawn from the seed), the expanded output, residuals and warm-start Q agree with the
// unexpanded op's within 1e-6 of their largest magnitude on every rank.
TEST(ExpandCodecs, FourMembersAgreeWithin1e6) {
  Plans plans;
  const char *source = R"mlir(
    ptrain.grid @grid(dp = 4)
    func.func @forward(%g: tensor<8x6xf32>, %e: tensor<8x6xf32>, %q0: tensor<6x2xf32>)
        -> (tensor<8x6xf32>, tensor<8x6xf32>, tensor<6x2xf32>) {
      %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q0) on @grid axes [dp] reduction = avg
          {codec = #ptrain.powersgd<rank = 2>, error_feedback}
          : tensor<8x6xf32> state(tensor<8x6xf32>, tensor<6x2xf32>) -> state(tensor<8x6xf32>, tensor<6x2xf32>)
      %out = ptrain.wait %r : !ptrain.request<tensor<8x6xf32>>
      return %out, %e1, %q1 : tensor<8x6xf32>, tensor<8x6xf32>, tensor<6x2xf32>
    })mlir";
  OwningOpRef<ModuleOp> plain = parseSourceString<ModuleOp>(source, &plans.context);
  ASSERT_TRUE(plain);
  OwningOpRef<ModuleOp> expanded(cast<ModuleOp>((*plain)->clone()));
  ASSERT_TRUE(runPasses(plans.context, *expanded, "ptrain-expand-codecs"));
  auto runAll = [&](ModuleOp module) -> std::vector<std::vector<Tensor>> {
    auto created = MultiRankExecutor::create(module, makeMapStateProvider({}));
    if (!created) {
      ADD_FAILURE() << llvm::toString(created.takeError());
      return {};
    }
    auto results = (*created)->run(
        [](int64_t) { return std::string("forward"); },
        [&](int64_t r) {
          std::vector<double> g(48), e(48);
          for (int i = 0; i < 48; ++i) {
            g[i] = std::sin(0.37 * i + 1.3 * r) * (1 + r);
            e[i] = 0.1 * std::cos(0.11 * i * (r + 1));
          }
          return std::vector<Tensor>{f32({8, 6}, g), f32({8, 6}, e), f32({6, 2}, std::vector<double>(12, 0.0))};
        });
    if (!results) {
      ADD_FAILURE() << llvm::toString(results.takeError());
      return {};
    }
    return std::move(*results);
  };
  std::vector<std::vector<Tensor>> before = runAll(*plain), after = runAll(*expanded);
  ASSERT_EQ(before.size(), 4u);
  ASSERT_EQ(after.size(), 4u);
  for (size_t r = 0; r < 4; ++r)
    for (size_t i = 0; i < 3; ++i) {
      double scale = before[r][i].maxAbs();
      ASSERT_GT(scale, 0.0) << "rank " << r << " result " << i;
      EXPECT_LE(maxAbsDiff(after[r][i], before[r][i]), 1e-6 * scale) << "rank " << r << " result " << i;
    }
}
