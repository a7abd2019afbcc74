//===- OpBuildersTest.cpp - building ptrain IR from C++ -------------------===//
//
// Passes build ptrain ops from C++ with the MLIR 22 `OpTy::create` API; these tests build a small training
// step fragment (grid, state, compress with error feedback, pipeline send, compressed DP all-reduce, waits)
// and check that it verifies, prints and parses back, and that the verifier catches what it must.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Tools/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

class OpBuildersTest : public ::testing::Test {
protected:
  OpBuildersTest() {
    DialectRegistry registry;
    registerPTrainDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, Float32Type::get(&ctx)); }

  /// Verifies `module`, returning the first diagnostic or "" when it verifies.
  std::string verifyMessage(ModuleOp module) {
    std::string message;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    return succeeded(verify(module)) ? "" : message;
  }

  MLIRContext ctx;
};

TEST_F(OpBuildersTest, BuildsAVerifiedStepFragment) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(b, loc);
  b.setInsertionPointToEnd(module->getBody());

  auto act = f32({4, 64, 128});
  GridOp::create(b, loc, "grid", b.getStrArrayAttr({"dp", "pp"}), b.getDenseI64ArrayAttr({2, 2}));
  StateOp::create(b, loc, "resid", "cb/link1->0/residual", StateKind::CodecResidual, act);
  StateOp::create(b, loc, "q", "cb/link1->0/q", StateKind::CodecWarmStart, f32({128, 4}));

  auto fn = func::FuncOp::create(b, loc, "backward_send", b.getFunctionType({act}, {}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value grad = fn.getArgument(0);
  Value resid = StateReadOp::create(b, loc, act, "resid");
  Value q = StateReadOp::create(b, loc, f32({128, 4}), "q");

  // Compressed backpropagation on the pipeline link: PowerSGD rank 4 with error feedback.
  auto codec = cast<CodecAttrInterface>(PowerSGDAttr::get(&ctx, 4, nullptr, nullptr));
  SmallVector<Type> codeTypes = codec.getCodeTypes(act);
  SmallVector<Type> stateTypes = {act, f32({128, 4})};
  auto compress = CompressOp::create(b, loc, codeTypes, stateTypes, grad, ValueRange{resid, q}, ValueRange{},
                                     codec, b.getUnitAttr());
  StateWriteOp::create(b, loc, compress.getNewState()[0], "resid");
  StateWriteOp::create(b, loc, compress.getNewState()[1], "q");
  SmallVector<Value> waits;
  for (Value code : compress.getCodes())
    waits.push_back(SendStartOp::create(b, loc, code, "grid", "pp", -1));

  // The DP gradient all-reduce, compressed with a bf16 cast.
  auto dp = CompressedAllReduceStartOp::create(b, loc, grad, ValueRange{}, ValueRange{}, "grid", {"dp"},
                                               ReductionKind::Avg, CastAttr::get(&ctx, b.getBF16Type()),
                                               /*errorFeedback=*/false);
  waits.push_back(dp.getRequest());
  for (Value request : waits)
    WaitOp::create(b, loc, request);
  func::ReturnOp::create(b, loc);

  ASSERT_EQ(verifyMessage(*module), "");
  EXPECT_EQ(compress.getCodes().size(), 2u);
  EXPECT_EQ(compress.getCodes()[0].getType(), f32({256, 4}));
  EXPECT_EQ(cast<RequestType>(dp.getRequest().getType()).getValueType(), act);

  // Prints and parses back to the same text.
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  OwningOpRef<ModuleOp> reparsed = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(reparsed);
  std::string again;
  llvm::raw_string_ostream os2(again);
  reparsed->print(os2);
  EXPECT_EQ(text, again);
}

TEST_F(OpBuildersTest, GridAnswersAxisQueries) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(b, loc);
  b.setInsertionPointToEnd(module->getBody());
  auto grid = GridOp::create(b, loc, "grid", b.getStrArrayAttr({"dp", "pp", "tp"}),
                             b.getDenseI64ArrayAttr({2, 4, 8}));
  EXPECT_EQ(grid.getNumRanks(), 64);
  EXPECT_EQ(grid.getAxisIndex("pp"), 1u);
  EXPECT_FALSE(grid.getAxisIndex("ep").has_value());
  EXPECT_EQ(grid.getGroupSize(b.getStrArrayAttr({"dp", "tp"})), 16);
}

TEST_F(OpBuildersTest, VerifierRejectsWaitingTwice) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(b, loc);
  b.setInsertionPointToEnd(module->getBody());
  GridOp::create(b, loc, "grid", b.getStrArrayAttr({"dp"}), b.getDenseI64ArrayAttr({2}));
  auto fn = func::FuncOp::create(b, loc, "f", b.getFunctionType({f32({8})}, {}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  auto ar = AllReduceStartOp::create(b, loc, fn.getArgument(0), "grid", b.getStrArrayAttr({"dp"}),
                                     ReductionKind::Sum);
  WaitOp::create(b, loc, ar.getRequest());
  WaitOp::create(b, loc, ar.getRequest());
  func::ReturnOp::create(b, loc);
  EXPECT_NE(verifyMessage(*module).find("waited on 2 times"), std::string::npos);
}

TEST_F(OpBuildersTest, VerifierRejectsDuplicateStateKeys) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(b, loc);
  b.setInsertionPointToEnd(module->getBody());
  StateOp::create(b, loc, "a", "h.0.w", StateKind::Parameter, f32({4}));
  StateOp::create(b, loc, "b", "h.0.w", StateKind::OptimizerMoment, f32({4}));
  EXPECT_EQ(verifyMessage(*module), "'ptrain.state' op state key \"h.0.w\" is already used by @a");
}

} // namespace
