//===- DropoutTest.cpp - ptrain.dropout's mask statistics and gradient ----===//
//
// The counter-based mask of `ptrain.dropout` (PTrainModelOps.td): the fraction dropped matches the ratio,
// kept values are scaled by 1 / (1 - ratio), the mask is a function of (seed, counter) only and independent
// across steps and sites, and the gradient rule applies the same mask to dy; with ptrain.dropout_layout the
// mask is keyed by the global element index (micro-batch rows, replicas, tensor-parallel parts).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Interpreter/DropoutLayout.h"
#include "ptrain/Interpreter/Interpreter.h"
#include "ptrain/Interpreter/Kernels.h"
#include "ptrain/Tools/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

namespace {

Tensor counter(int64_t step) { return llvm::cantFail(Tensor::fromInts(DType::I64, {}, {step})); }

Tensor ones(int64_t n) { return Tensor::fromFloats(DType::F64, {n}, std::vector<double>(n, 1.0)); }

/// The fraction of zeros of `t`.
double droppedFraction(const Tensor &t) {
  int64_t zeros = 0;
  for (double v : t.floats())
    zeros += v == 0.0;
  return static_cast<double>(zeros) / t.getNumElements();
}

TEST(Dropout, MaskStatisticsMatchTheRatio) {
  constexpr int64_t n = 1 << 20;
  for (double ratio : {0.1, 0.5, 0.9}) {
    Tensor y = llvm::cantFail(evalDropout(ones(n), counter(3), ratio, /*seed=*/11));
    // Binomial: the dropped fraction is within 6 standard deviations of the ratio.
    double sigma = std::sqrt(ratio * (1 - ratio) / n);
    EXPECT_NEAR(droppedFraction(y), ratio, 6 * sigma) << "ratio " << ratio;
    for (double v : y.floats()) {
      if (v != 0.0) {
        ASSERT_DOUBLE_EQ(v, 1.0 / (1.0 - ratio));
      }
    }
  }
}

TEST(Dropout, MaskDependsOnSeedAndCounterOnly) {
  constexpr int64_t n = 1 << 18;
  constexpr double ratio = 0.5;
  Tensor a = llvm::cantFail(evalDropout(ones(n), counter(7), ratio, 5));
  Tensor again = llvm::cantFail(evalDropout(ones(n), counter(7), ratio, 5));
  EXPECT_EQ(a.floats(), again.floats());
  // Other steps and other sites: independent masks, so both drop an element with probability ratio^2.
  Tensor nextStep = llvm::cantFail(evalDropout(ones(n), counter(8), ratio, 5));
  Tensor otherSite = llvm::cantFail(evalDropout(ones(n), counter(7), ratio, 6));
  double sigma = std::sqrt(0.25 * 0.75 / n);
  for (const Tensor *other : {&nextStep, &otherSite}) {
    int64_t both = 0;
    for (int64_t i = 0; i < n; ++i)
      both += a.floats()[i] == 0.0 && other->floats()[i] == 0.0;
    EXPECT_NEAR(static_cast<double>(both) / n, ratio * ratio, 6 * sigma);
  }
  // A float32 tensor is rounded once: the kept value is float(2.0 x).
  Tensor f = Tensor::fromFloats(DType::F32, {4}, {0.1, 0.2, 0.3, 0.4});
  Tensor g = llvm::cantFail(evalDropout(f, counter(0), ratio, 1));
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_TRUE(g.floats()[i] == 0.0 || g.floats()[i] == static_cast<double>(static_cast<float>(2.0 * f.floats()[i])));
}

TEST(Dropout, KernelErrors) {
  auto message = [](llvm::Expected<Tensor> r) { return r ? std::string("no error") : llvm::toString(r.takeError()); };
  EXPECT_EQ(message(evalDropout(ones(2), counter(0), 1.0, 0)), "dropout ratio 1.000000 is not in [0, 1)");
  EXPECT_EQ(message(evalDropout(ones(2), ones(1), 0.5, 0)),
            "dropout's counter must be a rank-0 i64 tensor, got tensor<1xf64>");
  EXPECT_EQ(message(evalDropout(counter(1), counter(0), 0.5, 0)), "dropout needs a float tensor, got tensor<i64>");
}

/// The gradient rule, built through GradientOpInterface and run by the interpreter: dx is dy where the
/// forward kept the element (scaled by 1 / (1 - ratio)) and 0 where it dropped it.
TEST(Dropout, GradientAppliesTheSameMask) {
  DialectRegistry registry;
  registerPTrainDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  constexpr int64_t n = 4096;
  constexpr double ratio = 0.3;
  auto type = RankedTensorType::get({n}, b.getF32Type());
  auto counterType = RankedTensorType::get({}, b.getI64Type());
  auto fn = func::FuncOp::create(b, loc, "forward", b.getFunctionType({type, type, counterType}, {type, type}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto dropout = DropoutOp::create(b, loc, body->getArgument(0), body->getArgument(2), b.getF64FloatAttr(ratio),
                                   b.getI64IntegerAttr(99));
  SmallVector<Value> grads;
  ASSERT_TRUE(
      succeeded(cast<GradientOpInterface>(dropout.getOperation()).buildGradients(b, {body->getArgument(1)}, grads)));
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_FALSE(grads[1]) << "no gradient reaches the counter";
  func::ReturnOp::create(b, loc, ValueRange{dropout.getResult(), grads[0]});
  ASSERT_TRUE(succeeded(verify(*module)));

  std::vector<double> x(n), dy(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 1.0 + 0.001 * i; // never 0, so a zero in y is a dropped element
    dy[i] = std::sin(0.1 * i) + 2.0;
  }
  Interpreter interpreter(*module, makeMapStateProvider({}));
  std::vector<Tensor> results = llvm::cantFail(interpreter.run(
      "forward", {Tensor::fromFloats(DType::F32, {n}, x), Tensor::fromFloats(DType::F32, {n}, dy), counter(12)}));
  const Tensor &y = results[0], &dx = results[1];
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool kept = y.floats()[i] != 0.0;
    dropped += !kept;
    double expected = kept ? static_cast<float>(static_cast<float>(dy[i]) / (1.0 - ratio)) : 0.0;
    ASSERT_EQ(dx.floats()[i], expected) << "element " << i;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, n);
}

/// Dropouts with a ptrain.dropout_layout, evaluated on the ranks a coordinate function describes, against
/// the plain dropout of the whole (global) tensor.
class DropoutLayoutTest : public ::testing::Test {
protected:
  DropoutLayoutTest() {
    DialectRegistry registry;
    registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(R"mlir(
      func.func @whole(%x: tensor<6x4x5xf32>, %t: tensor<i64>) -> tensor<6x4x5xf32> {
        %y = ptrain.dropout %x, %t {ratio = 0.5 : f64, seed = 3 : i64} : tensor<6x4x5xf32>, tensor<i64>
        return %y : tensor<6x4x5xf32>
      }
      func.func @rows(%x: tensor<2x4x5xf32>, %t: tensor<i64>) -> tensor<2x4x5xf32> {
        %y = ptrain.dropout %x, %t {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 2>, ratio = 0.5 : f64, seed = 3 : i64}
          : tensor<2x4x5xf32>, tensor<i64>
        return %y : tensor<2x4x5xf32>
      }
      func.func @flat_rows(%x: tensor<8x5xf32>, %t: tensor<i64>) -> tensor<8x5xf32> {
        %y = ptrain.dropout %x, %t {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 2>, ratio = 0.5 : f64, seed = 3 : i64}
          : tensor<8x5xf32>, tensor<i64>
        return %y : tensor<8x5xf32>
      }
      func.func @sharded(%x: tensor<2x2x5xf32>, %t: tensor<i64>) -> tensor<2x2x5xf32> {
        %y = ptrain.dropout %x, %t {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 2, replica_axis = "dp",
          replica_rows = 4, shard_axis = "tp", shard_dim = 1>, ratio = 0.5 : f64, seed = 3 : i64}
          : tensor<2x2x5xf32>, tensor<i64>
        return %y : tensor<2x2x5xf32>
      }
    )mlir",
                                         &context);
  }

  /// The result of @name on ones of its input type at counter value `step`.
  std::vector<double> run(StringRef name, int64_t step) {
    Interpreter interpreter(*module, makeMapStateProvider({}));
    auto type = cast<RankedTensorType>(module->lookupSymbol<func::FuncOp>(name).getArgumentTypes()[0]);
    Tensor x = Tensor::fromFloats(DType::F32, type.getShape(), std::vector<double>(type.getNumElements(), 1.0));
    return llvm::cantFail(interpreter.run(name, {x, counter(step)}))[0].floats().vec();
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

// Micro-batch i of 2 rows (counter = step + 2^32 2i) draws rows [2i, 2i + 2) of the whole batch's mask: the
// micro-batches differ from each other, and together they are the one-rank step's mask.
TEST_F(DropoutLayoutTest, MicroBatchesDrawTheirRowsOfTheWholeBatchsMask) {
  ASSERT_TRUE(module);
  constexpr int64_t step = 5;
  std::vector<double> whole = run("whole", step);
  std::vector<double> micro[3];
  for (int64_t i = 0; i < 3; ++i) {
    micro[i] = run("rows", step + (int64_t(2 * i) << 32));
    std::vector<double> rows(whole.begin() + i * 40, whole.begin() + (i + 1) * 40);
    EXPECT_EQ(micro[i], rows) << "micro-batch " << i;
    // A [b S, H] view of the same rows keys alike (batch_rows = 2 of 8 leading rows).
    EXPECT_EQ(run("flat_rows", step + (int64_t(2 * i) << 32)), rows) << "micro-batch " << i;
  }
  EXPECT_NE(micro[0], micro[1]);
  EXPECT_NE(micro[1], micro[2]);
  // The step still changes the mask.
  EXPECT_NE(run("rows", step + 1), micro[0]);
}

// Replica d (coordinate on dp; 4 rows each) and tp part p (2 of the 4 channels of dimension 1) draw the whole
// tensor's mask on their global elements; the one-rank interpreter, which has no coordinates, is an error.
TEST_F(DropoutLayoutTest, ReplicasAndTensorParallelPartsDrawTheirGlobalElements) {
  ASSERT_TRUE(module);
  constexpr int64_t step = 9;
  std::vector<double> whole = run("whole", step); // [6, 4, 5]: replica 0 holds rows 0-3, replica 1 rows 4-7 (here 4-5)
  auto sharded = module->lookupSymbol<func::FuncOp>("sharded");
  auto dropout = cast<DropoutOp>(&sharded.getBody().front().front());
  Tensor x = Tensor::fromFloats(DType::F32, {2, 2, 5}, std::vector<double>(20, 1.0));
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t row = 0; row < 4 - 2 * d; row += 2)
      for (int64_t p = 0; p < 2; ++p) {
        Tensor c = counter(step + (row << 32));
        auto get = [&](Value v) -> const Tensor & { return v == dropout.getInput() ? x : c; };
        auto coordinate = [&](StringRef axis) -> std::optional<std::pair<int64_t, int64_t>> {
          if (axis == "dp")
            return std::make_pair(d, int64_t(2));
          if (axis == "tp")
            return std::make_pair(p, int64_t(2));
          return std::nullopt;
        };
        std::vector<Tensor> y = llvm::cantFail(evaluateDropout(dropout, get, coordinate));
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t j = 0; j < 2; ++j)
            for (int64_t k = 0; k < 5; ++k)
              ASSERT_EQ(y[0].floats()[(r * 2 + j) * 5 + k], whole[((4 * d + row + r) * 4 + 2 * p + j) * 5 + k])
                  << "replica " << d << ", row " << row + r << ", part " << p << ", channel " << j << ", " << k;
      }
  Interpreter interpreter(*module, makeMapStateProvider({}));
  llvm::Expected<std::vector<Tensor>> oneRank = interpreter.run("sharded", {x, counter(step)});
  ASSERT_FALSE(static_cast<bool>(oneRank));
  EXPECT_NE(llvm::toString(oneRank.takeError()).find("names the grid axis 'tp'"), std::string::npos);
}

} // namespace
