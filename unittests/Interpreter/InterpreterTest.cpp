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

/// A tiny f64 training step written by hand the way the gradient rules (PTrainGradients.cpp) build it: the
/// forward uses embedding, layer_norm (with bias), gelu (tanh), matmul, a broadcast bias add, softmax, slice,
/// split, concat and cross_entropy; the backward uses every backward op (cross_entropy_grad, slice from the
/// concat rule, concat from the split rule, pad from the slice rule, softmax_grad, sum_to, transpose + matmul,
/// gelu_grad, layer_norm_grad, embedding_grad). The gradients it returns are checked against central finite
/// differences of the loss it returns.
constexpr llvm::StringLiteral kTrainStep = R"mlir(
module {
  ptrain.state @wte key "wte" kind parameter : tensor<5x4xf64>
  ptrain.state @g key "g" kind parameter : tensor<4xf64>
  ptrain.state @b key "b" kind parameter : tensor<4xf64>
  ptrain.state @w key "w" kind parameter : tensor<4x5xf64>
  ptrain.state @bias key "bias" kind parameter : tensor<5xf64>
  func.func @forward(%ids: tensor<2x3xi64>, %labels: tensor<2x2xi64>)
      -> (tensor<f64>, tensor<5x4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4x5xf64>, tensor<5xf64>) {
    %wte = ptrain.state_read @wte : tensor<5x4xf64>
    %g = ptrain.state_read @g : tensor<4xf64>
    %b = ptrain.state_read @b : tensor<4xf64>
    %w = ptrain.state_read @w : tensor<4x5xf64>
    %bias = ptrain.state_read @bias : tensor<5xf64>
    // Forward.
    %h = ptrain.embedding %wte, %ids : tensor<5x4xf64>, tensor<2x3xi64>
    %n = ptrain.layer_norm %h, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>
    %a = ptrain.gelu %n {approximate = #ptrain<gelu_approximation tanh>} : tensor<2x3x4xf64>
    %z = ptrain.matmul %a, %w : tensor<2x3x4xf64>, tensor<4x5xf64>
    %zb = ptrain.binary add %z, %bias : tensor<2x3x5xf64>, tensor<5xf64>
    %p = ptrain.softmax %zb {axis = -1 : i64} : tensor<2x3x5xf64>
    %y = ptrain.binary add %zb, %p : tensor<2x3x5xf64>, tensor<2x3x5xf64>
    %l = ptrain.slice %y {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 2, 5>}
        : tensor<2x3x5xf64> -> tensor<2x2x5xf64>
    %l1, %l2 = ptrain.split %l {axis = -1 : i64, sizes = array<i64: 2, 3>}
        : tensor<2x2x5xf64> -> tensor<2x2x2xf64>, tensor<2x2x3xf64>
    %lc = ptrain.concat %l1, %l2 {axis = 2 : i64}
        : tensor<2x2x2xf64>, tensor<2x2x3xf64> -> tensor<2x2x5xf64>
    %loss = ptrain.cross_entropy %lc, %labels : tensor<2x2x5xf64>, tensor<2x2xi64>
    // Backward, in reverse order.
    %one = arith.constant dense<1.0> : tensor<f64>
    %dlc = ptrain.cross_entropy_grad %one, %lc, %labels : tensor<f64>, tensor<2x2x5xf64>, tensor<2x2xi64>
    %dl1 = ptrain.slice %dlc {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 2, 2>}
        : tensor<2x2x5xf64> -> tensor<2x2x2xf64>
    %dl2 = ptrain.slice %dlc {offsets = array<i64: 0, 0, 2>, sizes = array<i64: 2, 2, 3>}
        : tensor<2x2x5xf64> -> tensor<2x2x3xf64>
    %dl = ptrain.concat %dl1, %dl2 {axis = -1 : i64}
        : tensor<2x2x2xf64>, tensor<2x2x3xf64> -> tensor<2x2x5xf64>
    %dy = ptrain.pad %dl {low = array<i64: 0, 0, 0>, high = array<i64: 0, 1, 0>}
        : tensor<2x2x5xf64> -> tensor<2x3x5xf64>
    %dzb1 = ptrain.softmax_grad %dy, %p {axis = -1 : i64} : tensor<2x3x5xf64>
    %dzb = ptrain.binary add %dy, %dzb1 : tensor<2x3x5xf64>, tensor<2x3x5xf64>
    %dbias = ptrain.sum_to %dzb : tensor<2x3x5xf64> -> tensor<5xf64>
    %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<4x5xf64> -> tensor<5x4xf64>
    %da = ptrain.matmul %dzb, %wt : tensor<2x3x5xf64>, tensor<5x4xf64>
    %at = ptrain.transpose %a {perm = array<i64: 0, 2, 1>} : tensor<2x3x4xf64> -> tensor<2x4x3xf64>
    %dwb = ptrain.matmul %at, %dzb : tensor<2x4x3xf64>, tensor<2x3x5xf64>
    %dw = ptrain.sum_to %dwb : tensor<2x4x5xf64> -> tensor<4x5xf64>
    %dn = ptrain.gelu_grad %da, %n {approximate = #ptrain<gelu_approximation tanh>} : tensor<2x3x4xf64>
    %dh, %dg, %db = ptrain.layer_norm_grad %dn, %h, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : tensor<2x3x4xf64>, tensor<2x3x4xf64>, tensor<4xf64> -> tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>
    %dwte = ptrain.embedding_grad %dh, %ids : tensor<2x3x4xf64>, tensor<2x3xi64> -> tensor<5x4xf64>
    return %loss, %dwte, %dg, %db, %dw, %dbias
        : tensor<f64>, tensor<5x4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4x5xf64>, tensor<5xf64>
  }
}
)mlir";

TEST_F(InterpreterTest, HandWrittenTrainStepMatchesFiniteDifferences) {
  OwningOpRef<ModuleOp> module = parse(kTrainStep);
  ASSERT_TRUE(module);
  // Reproducible parameters; id 4 never occurs, so its row of dwte must be zero.
  std::vector<std::pair<std::string, llvm::SmallVector<int64_t>>> params = {
      {"wte", {5, 4}}, {"g", {4}}, {"b", {4}}, {"w", {4, 5}}, {"bias", {5}}};
  llvm::StringMap<Tensor> states;
  unsigned seed = 1;
  for (auto &[key, shape] : params) {
    std::vector<double> values(mlir::ptrain::interp::numElements(shape));
    for (double &v : values)
      v = std::sin(1.7 * seed++) * (key == "g" ? 0.3 : 1.0) + (key == "g" ? 1.0 : 0.0);
    states[key] = Tensor::fromFloats(DType::F64, shape, values);
  }
  std::vector<Tensor> args = {i64({2, 3}, {0, 1, 3, 2, 2, 1}), i64({2, 2}, {1, 4, 0, 3})};
  std::vector<Tensor> results = run(*module, args, states);
  ASSERT_EQ(results.size(), 6u);
  for (int64_t h = 0; h < 4; ++h)
    EXPECT_EQ(results[1].floats()[4 * 4 + h], 0.0);

  // Central differences of the returned loss; f64 throughout, so 1e-7 is far above the method's ~1e-10 error
  // and far below what a wrong rule (a missing softmax term, 1/N, a transposed matmul) would give.
  const double step = 1e-5;
  for (auto [index, param] : llvm::enumerate(params)) {
    const Tensor &analytic = results[index + 1];
    for (int64_t i = 0, e = analytic.getNumElements(); i < e; ++i) {
      auto loss = [&](double delta) {
        llvm::StringMap<Tensor> probe = states;
        probe[param.first].floats()[i] += delta;
        std::vector<Tensor> out = run(*module, args, std::move(probe));
        return out.empty() ? 0.0 : out[0].floats()[0];
      };
      double numeric = (loss(step) - loss(-step)) / (2 * step);
      EXPECT_NEAR(analytic.floats()[i], numeric, 1e-7) << param.first << " element " << i;
    }
    EXPECT_GT(analytic.maxAbs(), 1e-3) << param.first;
  }
  // Every backward op was evaluated.
  Interpreter interpreter(*module, makeMapStateProvider(states));
  llvm::Expected<std::vector<Tensor>> again = interpreter.run("forward", args);
  ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
  for (llvm::StringRef name : {"ptrain.cross_entropy_grad", "ptrain.slice", "ptrain.concat", "ptrain.pad",
                               "ptrain.softmax_grad", "ptrain.sum_to", "ptrain.gelu_grad", "ptrain.layer_norm_grad",
                               "ptrain.embedding_grad"})
    EXPECT_GT(interpreter.getStatistics().opCounts.count(name.str()), 0u) << name.str();
}

TEST_F(InterpreterTest, GradientOpErrorsNameTheOp) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @forward(%dy: tensor<2x3xf32>, %ids: tensor<2xi64>) -> tensor<4x3xf32> {
      %t = ptrain.embedding_grad %dy, %ids : tensor<2x3xf32>, tensor<2xi64> -> tensor<4x3xf32>
      return %t : tensor<4x3xf32>
    })mlir");
  std::string error;
  run(*module, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({2}, {0, 4})}, {}, &error);
  EXPECT_NE(error.find("'ptrain.embedding_grad': id 4 at flat position 1 is out of range [0, 4)"),
            std::string::npos)
      << error;
}

TEST_F(InterpreterTest, IntegerStepCounter) {
  // An i64 step counter incremented by the step (`ptrain.binary add` on integers).
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @forward(%step: tensor<i64>) -> tensor<i64> {
      %one = arith.constant dense<1> : tensor<i64>
      %next = ptrain.binary add %step, %one : tensor<i64>, tensor<i64>
      return %next : tensor<i64>
    })mlir");
  std::vector<Tensor> results = run(*module, {i64({}, {41})}, {});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].ints()[0], 42);
}

} // namespace
