//===- InterpreterTest.cpp - the interpreter driver on parsed modules -----===//

#include "ptrain/Interpreter/Interpreter.h"
#include "ptrain/Tools/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::ptrain::interp;

namespace {

class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest() {
    DialectRegistry registry;
    mlir::ptrain::registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parse(llvm::StringRef source) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << "parse failed";
    return module;
  }

  /// Runs @forward and returns the results, or the error message in `error`.
  std::vector<Tensor> run(ModuleOp module, llvm::ArrayRef<Tensor> args, llvm::StringMap<Tensor> states,
                          std::string *error = nullptr) {
    Interpreter interpreter(module, makeMapStateProvider(std::move(states)));
    llvm::Expected<std::vector<Tensor>> results = interpreter.run("forward", args);
    if (!results) {
      std::string message = llvm::toString(results.takeError());
      if (error)
        *error = message;
      else
        ADD_FAILURE() << message;
      return {};
    }
    EXPECT_EQ(error, nullptr) << "expected an error";
    return std::move(*results);
  }

  MLIRContext context;
};

Tensor f32(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values) {
  return Tensor::fromFloats(DType::F32, shape, values);
}
Tensor i64(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> values) {
  return llvm::cantFail(Tensor::fromInts(DType::I64, shape, values));
}

constexpr llvm::StringLiteral kLinear = R"mlir(
module {
  ptrain.state @w key "w" kind parameter : tensor<2x2xf32>
  ptrain.state @b key "b" kind parameter : tensor<2xf32>
  func.func @forward(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<f32>) {
    %w = ptrain.state_read @w : tensor<2x2xf32>
    %b = ptrain.state_read @b : tensor<2xf32>
    %y = ptrain.matmul %x, %w : tensor<3x2xf32>, tensor<2x2xf32>
    %z = ptrain.binary add %y, %b : tensor<3x2xf32>, tensor<2xf32>
    %labels = arith.constant dense<[0, 1, 1]> : tensor<3xi64>
    %loss = ptrain.cross_entropy %z, %labels : tensor<3x2xf32>, tensor<3xi64>
    return %z, %loss : tensor<3x2xf32>, tensor<f32>
  }
}
)mlir";

TEST_F(InterpreterTest, LinearLayerAndLoss) {
  OwningOpRef<ModuleOp> module = parse(kLinear);
  llvm::StringMap<Tensor> states;
  states["w"] = f32({2, 2}, {1, 2, 3, 4});
  states["b"] = f32({2}, {0.5, -0.5});
  std::vector<Tensor> results = run(*module, {f32({3, 2}, {1, 0, 0, 1, 1, 1})}, std::move(states));
  ASSERT_EQ(results.size(), 2u);
  // x @ w + b: rows [1,2]+b, [3,4]+b, [4,6]+b.
  std::vector<double> z = {1.5, 1.5, 3.5, 3.5, 4.5, 5.5};
  for (size_t i = 0; i < z.size(); ++i)
    EXPECT_DOUBLE_EQ(results[0].floats()[i], z[i]);
  // Losses: log 2, log 2, log(1 + e^-1).
  double expected = (2 * std::log(2.0) + std::log1p(std::exp(-1.0))) / 3;
  EXPECT_NEAR(results[1].floats()[0], expected, 1e-6);
}

TEST_F(InterpreterTest, SplatAndNegativeInfinityConstants) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @forward(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
      %mask = arith.constant dense<[[0.0, 0xFF800000], [0.0, 0.0]]> : tensor<2x2xf32>
      %half = arith.constant dense<0.5> : tensor<2x2xf32>
      %m = ptrain.binary add %x, %mask : tensor<2x2xf32>, tensor<2x2xf32>
      %s = ptrain.binary mul %m, %half : tensor<2x2xf32>, tensor<2x2xf32>
      %p = ptrain.softmax %s {axis = -1 : i64} : tensor<2x2xf32>
      return %p : tensor<2x2xf32>
    })mlir");
  std::vector<Tensor> results = run(*module, {f32({2, 2}, {1, 5, 2, 2})}, {});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].floats()[0], 1.0);
  EXPECT_EQ(results[0].floats()[1], 0.0);
  EXPECT_EQ(results[0].floats()[2], 0.5);
}

TEST_F(InterpreterTest, MissingStateIsAnError) {
  OwningOpRef<ModuleOp> module = parse(kLinear);
  llvm::StringMap<Tensor> states;
  states["w"] = f32({2, 2}, {1, 2, 3, 4});
  std::string error;
  run(*module, {f32({3, 2}, {1, 0, 0, 1, 1, 1})}, std::move(states), &error);
  EXPECT_NE(error.find("'ptrain.state_read'"), std::string::npos) << error;
  EXPECT_NE(error.find("no value for state key 'b'"), std::string::npos) << error;
}

TEST_F(InterpreterTest, MistypedStateIsAnError) {
  OwningOpRef<ModuleOp> module = parse(kLinear);
  llvm::StringMap<Tensor> states;
  states["w"] = f32({4}, {1, 2, 3, 4});
  states["b"] = f32({2}, {0, 0});
  std::string error;
  run(*module, {f32({3, 2}, {1, 0, 0, 1, 1, 1})}, std::move(states), &error);
  EXPECT_NE(error.find("is declared tensor<2x2xf32> but its value is tensor<4xf32>"), std::string::npos) << error;
}

TEST_F(InterpreterTest, WrongArgumentsAreErrors) {
  OwningOpRef<ModuleOp> module = parse(kLinear);
  std::string error;
  run(*module, {}, {}, &error);
  EXPECT_NE(error.find("takes 1 arguments, got 0"), std::string::npos) << error;
  run(*module, {i64({3, 2}, {1, 0, 0, 1, 1, 1})}, {}, &error);
  EXPECT_NE(error.find("argument 0 of @forward is tensor<3x2xf32>, got tensor<3x2xi64>"), std::string::npos)
      << error;
  Interpreter interpreter(*module, makeMapStateProvider({}));
  llvm::Expected<std::vector<Tensor>> none = interpreter.run("backward", {});
  ASSERT_FALSE(none);
  EXPECT_NE(llvm::toString(none.takeError()).find("no func.func @backward"), std::string::npos);
}

TEST_F(InterpreterTest, IdOutOfRangeNamesOpAndLocation) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    ptrain.state @wte key "wte.weight" kind parameter : tensor<4x2xf32>
    func.func @forward(%ids: tensor<3xi64>) -> tensor<3x2xf32> {
      %w = ptrain.state_read @wte : tensor<4x2xf32>
      %x = ptrain.embedding %w, %ids : tensor<4x2xf32>, tensor<3xi64> loc("gpt.onnx":7:0)
      return %x : tensor<3x2xf32>
    })mlir");
  llvm::StringMap<Tensor> states;
  states["wte.weight"] = f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  std::string error;
  run(*module, {i64({3}, {0, 4, 1})}, std::move(states), &error);
  EXPECT_EQ(error, "gpt.onnx:7:0: 'ptrain.embedding': id 4 at flat position 1 is out of range [0, 4)");
}

TEST_F(InterpreterTest, UnknownOpIsAnError) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = math.absf %x : tensor<2xf32> loc("m.mlir":3:7)
      return %y : tensor<2xf32>
    })mlir");
  std::string error;
  run(*module, {f32({2}, {1, -1})}, {}, &error);
  EXPECT_EQ(error, "m.mlir:3:7: 'math.absf': the reference interpreter has no rule for this op");
}

TEST_F(InterpreterTest, TiedStateIsLoadedOnce) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    ptrain.state @wte key "wte.weight" kind parameter : tensor<2x2xf32>
    func.func @forward(%ids: tensor<1xi64>) -> tensor<1x2xf32> {
      %w = ptrain.state_read @wte : tensor<2x2xf32>
      %x = ptrain.embedding %w, %ids : tensor<2x2xf32>, tensor<1xi64>
      %w2 = ptrain.state_read @wte : tensor<2x2xf32>
      %wt = ptrain.transpose %w2 {perm = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
      %y = ptrain.matmul %x, %wt : tensor<1x2xf32>, tensor<2x2xf32>
      return %y : tensor<1x2xf32>
    })mlir");
  int loads = 0;
  Interpreter interpreter(*module, [&](llvm::StringRef key, RankedTensorType) -> llvm::Expected<Tensor> {
    ++loads;
    return f32({2, 2}, {1, 2, 3, 4});
  });
  llvm::Expected<std::vector<Tensor>> results = interpreter.run("forward", {i64({1}, {1})});
  ASSERT_TRUE(static_cast<bool>(results)) << llvm::toString(results.takeError());
  EXPECT_EQ(loads, 1);
  // x = [3,4]; x @ w^T = [3*1+4*2, 3*3+4*4] = [11, 25].
  EXPECT_EQ((*results)[0].floats()[0], 11.0);
  EXPECT_EQ((*results)[0].floats()[1], 25.0);
  EXPECT_EQ(interpreter.getStatistics().opCounts.at("ptrain.state_read"), 2);
  EXPECT_EQ(interpreter.getStatistics().statesRead.size(), 1u);
}

} // namespace
