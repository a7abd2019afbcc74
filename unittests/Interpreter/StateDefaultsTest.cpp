//===- StateDefaultsTest.cpp - ptrain.init: the generator and its use by the interpreter ---===//
//
// The orthogonal generator of include/ptrain/Runtime/StateInit.h (the same object code the runtime's
// ptrain_state_init_onnx calls), and the interpreter's rule: a parameter's source wins, its init fills in only
// a key the source does not hold, and a missing key without an init stays an error.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/StateDefaults.h"
#include "ptrain/Interpreter/Interpreter.h"
#include "ptrain/Runtime/StateInit.h"
#include "ptrain/Tools/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

using namespace mlir;
using namespace mlir::ptrain::interp;

namespace {

std::vector<float> orthogonal(int64_t rows, int64_t cols, uint64_t seed, bool transposed = false) {
  std::vector<float> out(static_cast<size_t>(rows * cols), -7.0f);
  EXPECT_TRUE(::ptrain::runtime::orthogonalInit(out.data(), rows, cols, seed, transposed));
  return out;
}

/// max |M^T M - I| over the k x k Gram matrix of the k orthonormal vectors of a rows x cols matrix (its columns
/// when rows >= cols, else its rows), computed in double.
double gramError(const std::vector<float> &m, int64_t rows, int64_t cols) {
  const bool byColumn = rows >= cols;
  const int64_t n = byColumn ? rows : cols, k = byColumn ? cols : rows;
  auto at = [&](int64_t vector, int64_t i) { return byColumn ? m[i * cols + vector] : m[vector * cols + i]; };
  double worst = 0;
  for (int64_t a = 0; a < k; ++a)
    for (int64_t b = 0; b < k; ++b) {
      double dot = 0;
      for (int64_t i = 0; i < n; ++i)
        dot += static_cast<double>(at(a, i)) * at(b, i);
      worst = std::max(worst, std::abs(dot - (a == b ? 1.0 : 0.0)));
    }
  return worst;
}

/// Whether the rows x cols matrix `a` is the transpose of the cols x rows matrix `b`, bit for bit.
bool isTranspose(const std::vector<float> &a, const std::vector<float> &b, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (a[i * cols + j] != b[j * rows + i])
        return false;
  return true;
}

TEST(StateDefaults, OrthogonalMatricesOfOneSeedAreExactTransposes) {
  // The autoencoder's pair: encoder H x D `orthogonal`, decoder D x H `orthogonal_transposed`.
  const std::vector<float> encoder = orthogonal(128, 64, 3), decoder = orthogonal(64, 128, 3, true);
  EXPECT_TRUE(isTranspose(encoder, decoder, 128, 64));
  EXPECT_EQ(orthogonal(64, 128, 3), decoder) << "a wide shape is the transpose either way";
  EXPECT_LT(gramError(encoder, 128, 64), 1e-6) << "orthonormal columns up to f32 rounding";
  EXPECT_LT(gramError(decoder, 64, 128), 1e-6) << "orthonormal rows";
  // Square (D = H): the shapes cannot tell encoder and decoder apart, the transposed generator does; both
  // orthogonal, so W_e W_d = I up to f32 rounding.
  const std::vector<float> square = orthogonal(128, 128, 3), squareT = orthogonal(128, 128, 3, true);
  EXPECT_TRUE(isTranspose(square, squareT, 128, 128));
  EXPECT_NE(square, squareT);
  EXPECT_LT(gramError(square, 128, 128), 1e-6);
  // The same seed gives the same bits; another seed other values.
  EXPECT_EQ(orthogonal(128, 64, 3), encoder);
  const std::vector<float> other = orthogonal(128, 64, 4);
  EXPECT_NE(other, encoder);
  EXPECT_LT(gramError(other, 128, 64), 1e-6);
  // Entries of a random orthonormal basis, not a structured one: mean 0 within 3 standard deviations (each
  // entry has variance 1/128).
  double sum = 0;
  for (float v : encoder)
    sum += v;
  EXPECT_NEAR(sum / encoder.size(), 0.0, 3.0 / std::sqrt(128.0 * encoder.size()));
  // Degenerate shapes are refused, writing nothing.
  std::vector<float> untouched(4, -7.0f);
  EXPECT_FALSE(::ptrain::runtime::orthogonalInit(untouched.data(), 0, 4, 1));
  EXPECT_EQ(untouched, std::vector<float>(4, -7.0f));
}

class StateDefaultsInterpreter : public ::testing::Test {
protected:
  StateDefaultsInterpreter() {
    DialectRegistry registry;
    mlir::ptrain::registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(R"mlir(
      ptrain.state @enc key "ae/0->1/encoder" kind parameter {ptrain.init = {kind = "orthogonal", seed = 5 : i64}} : tensor<8x3xf32>
      ptrain.state @dec key "ae/0->1/decoder" kind parameter {ptrain.init = {kind = "orthogonal_transposed", seed = 5 : i64}} : tensor<3x8xf32>
      ptrain.state @w key "w" kind parameter : tensor<3x8xf32>
      func.func @forward() -> (tensor<8x3xf32>, tensor<3x8xf32>) {
        %e = ptrain.state_read @enc : tensor<8x3xf32>
        %d = ptrain.state_read @dec : tensor<3x8xf32>
        return %e, %d : tensor<8x3xf32>, tensor<3x8xf32>
      }
      func.func @plain() -> tensor<3x8xf32> {
        %w = ptrain.state_read @w : tensor<3x8xf32>
        return %w : tensor<3x8xf32>
      }
    )mlir",
                                         &context);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(StateDefaultsInterpreter, TheSourceWinsTheInitFillsInAMissingKeyAndNoInitIsAnError) {
  ASSERT_TRUE(module);
  // Nothing in the source: both weights from their init, W_d = W_e^T.
  Interpreter fresh(*module, makeMapStateProvider({}));
  llvm::Expected<std::vector<Tensor>> results = fresh.run("forward", {});
  ASSERT_TRUE(static_cast<bool>(results)) << llvm::toString(results.takeError());
  const std::vector<float> expected = orthogonal(8, 3, 5);
  ASSERT_EQ((*results)[0].floats().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ((*results)[0].floats()[i], static_cast<double>(expected[i])) << i;
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ((*results)[0].floats()[i * 3 + j], (*results)[1].floats()[j * 8 + i]);

  // A source that holds the key (a checkpoint, trained values) wins over the init.
  llvm::StringMap<Tensor> trained;
  trained["ae/0->1/encoder"] = Tensor::fromFloats(DType::F32, {8, 3}, std::vector<double>(24, 0.25));
  Interpreter resumed(*module, makeMapStateProvider(std::move(trained)));
  results = resumed.run("forward", {});
  ASSERT_TRUE(static_cast<bool>(results)) << llvm::toString(results.takeError());
  EXPECT_EQ((*results)[0].floats()[0], 0.25);
  EXPECT_EQ((*results)[1].floats()[0], static_cast<double>(orthogonal(3, 8, 5, true)[0]));

  // Without an init a missing key is the source's error, named with the state.
  results = fresh.run("plain", {});
  ASSERT_FALSE(static_cast<bool>(results));
  const std::string message = llvm::toString(results.takeError());
  EXPECT_NE(message.find("state @w (key 'w'): no value for state key 'w'"), std::string::npos) << message;

  // Any other failure of the source (a malformed file) is not papered over by the init.
  Interpreter broken(*module, [](llvm::StringRef key, RankedTensorType) -> llvm::Expected<Tensor> {
    return makeError("model.onnx: initializer '" + key + "' is truncated");
  });
  results = broken.run("forward", {});
  ASSERT_FALSE(static_cast<bool>(results));
  const std::string other = llvm::toString(results.takeError());
  EXPECT_NE(other.find("initializer 'ae/0->1/encoder' is truncated"), std::string::npos) << other;
}

} // namespace
