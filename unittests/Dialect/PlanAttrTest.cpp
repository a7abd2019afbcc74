//===- PlanAttrTest.cpp - the typed plan attributes through their C++ API -===//
//
// #ptrain.tp_slice as the passes build it (TPSliceAttr::getChecked) and read it (getTPSlice, getPaddedSize):
// what the parser cannot reach, an empty shape (C2), and the accessors of PTrainPlanAttrs.h (pipeline, stage,
// schedule, compression, tp_slice). The textual
// constraints are lit tests: test/Dialect/PTrain/plan-attrs{,-invalid}.mlir.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

class PlanAttrTest : public ::testing::Test {
protected:
  PlanAttrTest() { ctx.loadDialect<PTrainDialect, func::FuncDialect>(); }

  /// Private functions @forward_stage0 and @forward_stage1 at the end of `module`, each with its #ptrain.stage
  /// when `withStages`; their symbols in order.
  SmallVector<FlatSymbolRefAttr> addStageFunctions(OpBuilder &b, ModuleOp module, bool withStages) {
    b.setInsertionPointToEnd(module.getBody());
    SmallVector<FlatSymbolRefAttr> stages;
    for (StringRef name : {"forward_stage0", "forward_stage1"}) {
      auto fn = func::FuncOp::create(b, b.getUnknownLoc(), name, b.getFunctionType({}, {}));
      fn.setPrivate();
      if (withStages)
        setStage(fn, static_cast<int64_t>(stages.size()));
      stages.push_back(FlatSymbolRefAttr::get(fn.getSymNameAttr()));
    }
    return stages;
  }

  /// The message of the first diagnostic `build` reports, "" when none.
  std::string messageOf(llvm::function_ref<void()> build) {
    std::string message;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    build();
    return message;
  }

  MLIRContext ctx;
};

TEST_F(PlanAttrTest, TPSliceNeedsAShape) {
  // (C2) an empty shape: the parser never makes one (a list needs an element), a pass could.
  auto emitError = [&] { return mlir::emitError(UnknownLoc::get(&ctx)); };
  EXPECT_EQ(messageOf([&] { EXPECT_FALSE(TPSliceAttr::getChecked(emitError, &ctx, "tp", 0, 1, {}, 0)); }),
            "tp_slice shape must be a non-empty list of sizes >= 1");
  EXPECT_EQ(messageOf([&] { EXPECT_TRUE(TPSliceAttr::getChecked(emitError, &ctx, "tp", 0, 1, {8, 4}, 0)); }), "");
}

TEST_F(PlanAttrTest, PaddedSizeIsTheSplitSize) {
  EXPECT_EQ(TPSliceAttr::get(&ctx, "tp", 0, 1, {9, 4}, 10).getPaddedSize(), 10);
  EXPECT_EQ(TPSliceAttr::get(&ctx, "tp", 1, 3, {8, 24}, 0).getPaddedSize(), 24);
}

TEST_F(PlanAttrTest, AccessorsRoundTripOnAState) {
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  auto type = RankedTensorType::get({8, 12}, b.getF32Type());
  auto state = StateOp::create(b, b.getUnknownLoc(), "qkv", "h.0.attn.c_attn.weight", StateKind::Parameter, type);
  EXPECT_FALSE(getTPSlice(state));
  auto slice = TPSliceAttr::get(&ctx, "tp", 1, 3, {8, 24}, 0);
  setTPSlice(state, slice);
  EXPECT_EQ(getTPSlice(state), slice);
  EXPECT_TRUE(succeeded(verify(*module)));
  // (C9) on the verifier: 24 is not a multiple of a local 10.
  setTPSlice(state, TPSliceAttr::get(&ctx, "tp", 1, 1, {8, 24}, 0));
  state.setTypeAttr(TypeAttr::get(RankedTensorType::get({8, 10}, b.getF32Type())));
  EXPECT_EQ(messageOf([&] { EXPECT_TRUE(failed(verify(*module))); }),
            "'ptrain.tp_slice' the state's size 10 in dimension 1 must be a multiple of groups (1) and divide 24");
}

TEST_F(PlanAttrTest, PipelineStageAndScheduleThroughTheirAccessors) {
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  SmallVector<FlatSymbolRefAttr> stages = addStageFunctions(b, *module, /*withStages=*/true);
  EXPECT_FALSE(getPipeline(*module));
  auto split = PipelineAttr::get(&ctx, 2, 1, stages, std::nullopt, false, false);
  setPipeline(*module, split);
  EXPECT_EQ(getPipeline(*module).getNumStageFunctions(), 2);
  EXPECT_FALSE(getPipeline(*module).getMicroBatches());
  // --ptrain-build-training-step's addition keeps the split.
  PipelineAttr built = split.withTrainingStep(4, true, true);
  EXPECT_EQ(built.getStages(), split.getStages());
  EXPECT_EQ(built.getMicroBatches(), std::optional<int64_t>(4));
  EXPECT_TRUE(built.getLabels());
  EXPECT_TRUE(built.getDeterministicDp());
  setPipeline(*module, built);
  auto fn = module->lookupSymbol<func::FuncOp>("forward_stage1");
  ASSERT_TRUE(getStage(fn));
  EXPECT_EQ(getStage(fn).getIndex(), 1);
  // A schedule and the same schedule after --ptrain-critical-path, without its results again.
  auto row = [&](ArrayRef<StringRef> steps) {
    SmallVector<Attribute> attrs;
    for (StringRef step : steps)
      attrs.push_back(b.getStringAttr(step));
    return b.getArrayAttr(attrs);
  };
  ArrayAttr table = b.getArrayAttr({row({"F0", "B0", "O"}), row({"FB0", "O"})});
  auto plain = ScheduleAttr::get(&ctx, "1f1b", 4, 1, table, {}, {}, {}, {}, {}, {}, {}, {});
  setSchedule(*module, plain);
  EXPECT_FALSE(getSchedule(*module).hasCriticalPath());
  EXPECT_EQ(getSchedule(*module).getRow(1).size(), 2u);
  ArrayAttr flags = b.getArrayAttr({b.getArrayAttr({b.getBoolAttr(true), b.getBoolAttr(false), b.getBoolAttr(false)}),
                                    b.getArrayAttr({b.getBoolAttr(true), b.getBoolAttr(false)})});
  auto analysed = ScheduleAttr::get(&ctx, "1f1b", 4, 1, table, {}, {}, {}, flags, {}, {}, {}, {});
  EXPECT_TRUE(analysed.hasCriticalPath());
  EXPECT_EQ(analysed.withoutCriticalPath(), plain);
  EXPECT_TRUE(succeeded(verify(*module)));
  // (C4) of #ptrain.stage where it sits: rank 2 of a 2-rank pipeline.
  setStage(fn, 2);
  EXPECT_EQ(messageOf([&] { EXPECT_TRUE(failed(verify(*module))); }),
            "'ptrain.stage' index 2 is not a rank of the module's pipeline (pp = 2)");
}

TEST_F(PlanAttrTest, CompressionThroughItsAccessors) {
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  SmallVector<FlatSymbolRefAttr> stages = addStageFunctions(b, *module, /*withStages=*/false);
  setPipeline(*module, PipelineAttr::get(&ctx, 2, 1, stages, 1, false, false));
  EXPECT_FALSE(getCompression(*module));
  ArrayAttr off = b.getArrayAttr({b.getBoolAttr(false), b.getBoolAttr(false)});
  ArrayAttr sends = b.getArrayAttr({b.getArrayAttr({b.getBoolAttr(false)}), b.getArrayAttr({b.getBoolAttr(true)})});
  auto codec = cast<CodecAttrInterface>(CastAttr::get(&ctx, b.getBF16Type()));
  auto record =
      CompressionAttr::get(&ctx, "mcbench", sends, codec, true, {}, {}, false, off, 128, true, {}, false, 0, {}, 0);
  setCompression(*module, record);
  EXPECT_EQ(getCompression(*module).getBackwardCodec(), codec);
  EXPECT_TRUE(succeeded(verify(*module)));
  // The tensor-parallel sites keep the rest of the record.
  CompressionAttr tp = record.withTensorParallel(b.getArrayAttr({b.getDictionaryAttr({})}), 1);
  EXPECT_EQ(tp.getBackwardSends(), sends);
  EXPECT_EQ(tp.getTpSkipLayers(), 1);
  removeCompression(*module);
  EXPECT_FALSE(getCompression(*module));
  // (C11) where it sits: a compressed gradient out of stage 0.
  ArrayAttr first = b.getArrayAttr({b.getArrayAttr({b.getBoolAttr(true)}), b.getArrayAttr({b.getBoolAttr(false)})});
  setCompression(*module, CompressionAttr::get(&ctx, "mcbench", first, codec, true, {}, {}, false, off, 128, true, {},
                                               false, 0, {}, 0));
  EXPECT_EQ(messageOf([&] { EXPECT_TRUE(failed(verify(*module))); }),
            "'ptrain.compression' compresses a gradient out of stage 0, which sends none backward");
}

} // namespace
