//===- LlamaPlanTest.cpp - LLaMA-style pipeline plans against the one-rank step -===//
//
// Issue 6: the LLaMA-style model of python/ptrain_fixtures/export_newest.py (RMSNorm, rotary q/k read from the
// rope.cos / rope.sin parameters by constant positions, grouped-query attention with 4 query heads on 2
// key/value heads, SwiGLU) under pipeline plans, alone and with dp and tp, against the one-rank step over the
// same global batch: llama_tiny (2 layers) at pp = 2, llama_tiny_4l (4 layers, one per stage) at pp = 4 and
// interleaved pp = 2 x v = 2 (also with dp = 4), llama_tiny_8l (8 layers of hidden 32) at interleaved
// pp = 4 x v = 2 (one layer per virtual stage). Every stage recomputes the rotary tables' lookups and the
// causal mask; the rotary tables are read by every stage, so their gradients are summed by the tied sync over pp.
//
// docs/Plan.md once listed LLaMA's pp = 2 as differing from pp = 1 (step-3 loss 4.79493952 vs 4.76282883 by
// ptrain-interpret --random-tokens). The plans were right: --random-tokens took the vocabulary from the
// module's last ptrain.embedding, the rotary table of 16 positions under pp = 2, so the two runs trained on
// different tokens (test/Interpreter/multi-rank-llama-pipeline.test). Here both runs get the same batch.
//
//===----------------------------------------------------------------------===//

#include "SourceDir.h"
#include "PlanHarness.h"

using namespace mlir;
using namespace mlir::ptrain::interp;

using namespace ptrain_test;

namespace {

struct LlamaPlan {
  std::string model; // a file of test/Import/ONNX/opset18+/Inputs, without ".onnx"
  Plan plan;
  int64_t layers;
};

void PrintTo(const LlamaPlan &p, std::ostream *os) { *os << p.model << "_" << planName(p.plan); }

class LlamaPipelinePlan : public ::testing::TestWithParam<LlamaPlan> {};

// One step (AdamW lr 1e-3, warm-up 1) of the plan against the one-rank step with dp x m micro-batches of the
// export's 2 x 16 tokens, over token ids below the vocabulary of 128. Tolerances are those of
// expectTensorParallelStepMatches (PlanHarness.h): the loss within 1e-6 relative, every gradient (AdamW's first
// moment) within 1e-4 of its tensor's max |g|, every parameter within 2e-5 absolute; measured (printed): pipeline
// plans without tp and with dp <= 2 equal to the last bit, with tp or dp = 4 the worst gradient 1.9e-7 of its
// max |g|, the worst parameter 2.7e-7.
TEST_P(LlamaPipelinePlan, OneStepMatchesTheOneRankStep) {
  const LlamaPlan &p = GetParam();
  Plans plans;
  std::string path = ptrain_test::sourceDir() + "/test/Import/ONNX/opset18+/Inputs/" + p.model + ".onnx";
  OwningOpRef<ModuleOp> l0 = plans.importWithSignature(path);
  StateProvider provider = plans.openInitialValues(path);
  ASSERT_TRUE(l0 && provider);
  // The one-rank reference is not raised by Plans::lower (tp = 1); raising changes no value of the fused model.
  PassManager pm(&plans.context);
  ASSERT_TRUE(succeeded(parsePassPipeline("ptrain-raise", pm)) && succeeded(pm.run(*l0)));
  // Per layer 9 parameters (2 norms, q, k, v, o, gate, up, down), of which 7 are sliced over tp; the embedding,
  // the final norm and the LM head. The rotary cos/sin tables are constants (gathered by position ids:
  // docs/ImportONNX.md, "Parameters and constants"), not parameters; the import must say so.
  const int64_t params = 9 * p.layers + 3;
  ASSERT_EQ(countParameters(*l0), params);
  const int64_t rows = p.plan.dp * p.plan.m * 2;
  expectTensorParallelStepMatches(plans, *l0, provider, randomBatches(1, rows, 16, 128, 3), p.plan,
                                  p.plan.tp > 1 ? 7 * p.layers : 0, params);
}

INSTANTIATE_TEST_SUITE_P(Plans, LlamaPipelinePlan,
                         ::testing::Values(LlamaPlan{"llama_tiny", Plan{1, 2, 2, "1f1b"}, 2},
                                           LlamaPlan{"llama_tiny", Plan{1, 2, 2, "gpipe"}, 2},
                                           LlamaPlan{"llama_tiny", Plan{2, 2, 1, "1f1b"}, 2},
                                           LlamaPlan{"llama_tiny", Plan{1, 2, 2, "1f1b", 1, 2}, 2},
                                           LlamaPlan{"llama_tiny_unfused", Plan{1, 2, 2, "1f1b", 1, 2}, 2},
                                           LlamaPlan{"llama_tiny", Plan{2, 2, 1, "1f1b", 1, 2}, 2},
                                           LlamaPlan{"llama_tiny_4l", Plan{1, 4, 4, "1f1b"}, 4},
                                           LlamaPlan{"llama_tiny_4l", Plan{1, 4, 4, "gpipe"}, 4},
                                           LlamaPlan{"llama_tiny_4l", Plan{1, 2, 2, "interleaved", 2}, 4},
                                           LlamaPlan{"llama_tiny_4l", Plan{4, 2, 2, "interleaved", 2}, 4},
                                           LlamaPlan{"llama_tiny_4l", Plan{1, 4, 2, "1f1b", 1, 2}, 4},
                                           LlamaPlan{"llama_tiny_8l", Plan{1, 4, 4, "interleaved", 2}, 8}),
                         [](const ::testing::TestParamInfo<LlamaPlan> &info) {
                           return info.param.model + "_" + planName(info.param.plan);
                         });

// More stages than layers is a compile error naming the count, not a plan (2 layers, pp = 4).
TEST(LlamaPipeline, MoreStagesThanLayersIsAnError) {
  Plans plans;
  std::string path = ptrain_test::sourceDir() + "/test/Import/ONNX/opset18+/Inputs/llama_tiny.onnx";
  OwningOpRef<ModuleOp> l0 = plans.importWithSignature(path);
  ASSERT_TRUE(l0);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&plans.context, [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  PassManager pm(&plans.context);
  ASSERT_TRUE(succeeded(parsePassPipeline("ptrain-split-stages{pp=4}", pm)));
  EXPECT_TRUE(failed(pm.run(*l0)));
  EXPECT_NE(diagnostics.find("pp = 4 needs 3 cut points but @forward has only 1 layer boundaries"), std::string::npos)
      << diagnostics;
}

} // namespace
