//===- KernelsTest.cpp - reference kernels against hand-computed values ---===//

#include "ptrain/Interpreter/Kernels.h"
#include "ptrain/Interpreter/MixedPrecisionKernels.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

namespace {

Tensor f32(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values) {
  return Tensor::fromFloats(DType::F32, shape, values);
}
Tensor f64(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values) {
  return Tensor::fromFloats(DType::F64, shape, values);
}
Tensor i64(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> values) {
  return llvm::cantFail(Tensor::fromInts(DType::I64, shape, values));
}

/// Unwraps an Expected, failing the test with the error's message.
template <typename T> T ok(llvm::Expected<T> value) {
  if (!value) {
    ADD_FAILURE() << llvm::toString(value.takeError());
    return T();
  }
  return std::move(*value);
}

/// The message of an expected error ("" and a test failure when there was none).
template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(value.takeError());
}

void expectValues(const Tensor &t, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values,
                  double tol = 0.0) {
  ASSERT_EQ(t.getShape(), shape);
  ASSERT_EQ(t.getNumElements(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isinf(values[i]))
      EXPECT_EQ(t.getAsDouble(i), values[i]) << "element " << i;
    else
      EXPECT_NEAR(t.getAsDouble(i), values[i], tol) << "element " << i;
  }
}

//===--- Broadcasting ------------------------------------------------------===//

TEST(Broadcast, Shapes) {
  EXPECT_EQ(ok(broadcastShapes({4, 1, 3}, {2, 1})), (llvm::SmallVector<int64_t>{4, 2, 3}));
  EXPECT_EQ(ok(broadcastShapes({}, {2, 3})), (llvm::SmallVector<int64_t>{2, 3}));
  EXPECT_EQ(ok(broadcastShapes({5, 1}, {1})), (llvm::SmallVector<int64_t>{5, 1}));
  EXPECT_NE(errorOf(broadcastShapes({2, 3}, {4})).find("do not broadcast"), std::string::npos);
}

TEST(Binary, AddBiasRow) {
  // [2,3] + [3]: the bias is added to each row.
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3}, {10, 20, 30});
  expectValues(ok(evalBinary(BinaryKind::Add, x, b)), {2, 3}, {11, 22, 33, 14, 25, 36});
}

TEST(Binary, OuterBroadcastBothSides) {
  // [2,1] - [1,3] -> [2,3]: numpy's outer difference.
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({1, 3}, {10, 20, 30});
  expectValues(ok(evalBinary(BinaryKind::Sub, a, b)), {2, 3}, {-9, -19, -29, -8, -18, -28});
}

TEST(Binary, ScalarAndMiddleDimension) {
  // [2,1,2] * scalar and [2,1,2] / [3,1] -> [2,3,2].
  Tensor x = f32({2, 1, 2}, {1, 2, 3, 4});
  expectValues(ok(evalBinary(BinaryKind::Mul, x, f32({}, {0.5}))), {2, 1, 2}, {0.5, 1, 1.5, 2});
  Tensor d = f32({3, 1}, {1, 2, 4});
  expectValues(ok(evalBinary(BinaryKind::Div, x, d)), {2, 3, 2},
               {1, 2, 0.5, 1, 0.25, 0.5, 3, 4, 1.5, 2, 0.75, 1});
}

TEST(Binary, PowMaxMinAndInfinity) {
  double inf = std::numeric_limits<double>::infinity();
  Tensor a = f32({3}, {2, -inf, 3});
  Tensor b = f32({3}, {3, 1, -1});
  expectValues(ok(evalBinary(BinaryKind::Pow, a, b)), {3}, {8, -inf, 1.0 / 3.0}, 1e-7);
  expectValues(ok(evalBinary(BinaryKind::Max, a, b)), {3}, {3, 1, 3});
  expectValues(ok(evalBinary(BinaryKind::Min, a, b)), {3}, {2, -inf, -1});
  // -inf + x stays -inf (an additive causal mask).
  expectValues(ok(evalBinary(BinaryKind::Add, a, b)), {3}, {5, -inf, 2});
}

TEST(Binary, RoundsToF32) {
  // 1/3 in f32 is not 1/3 in f64.
  Tensor q = ok(evalBinary(BinaryKind::Div, f32({}, {1}), f32({}, {3})));
  EXPECT_EQ(q.floats()[0], static_cast<double>(1.0f / 3.0f));
  Tensor q64 = ok(evalBinary(BinaryKind::Div, f64({}, {1}), f64({}, {3})));
  EXPECT_EQ(q64.floats()[0], 1.0 / 3.0);
}

TEST(Binary, Integers) {
  Tensor a = i64({3}, {7, -7, 2});
  Tensor b = i64({3}, {2, 2, 10});
  expectValues(ok(evalBinary(BinaryKind::Div, a, b)), {3}, {3, -3, 0});
  expectValues(ok(evalBinary(BinaryKind::Pow, a, i64({}, {2}))), {3}, {49, 49, 4});
  EXPECT_NE(errorOf(evalBinary(BinaryKind::Div, a, i64({}, {0}))).find("division by zero"), std::string::npos);
}

TEST(Binary, Errors) {
  EXPECT_NE(errorOf(evalBinary(BinaryKind::Add, f32({2}, {1, 2}), f32({3}, {1, 2, 3}))).find("broadcast"),
            std::string::npos);
  EXPECT_NE(errorOf(evalBinary(BinaryKind::Add, f32({2}, {1, 2}), i64({2}, {1, 2}))).find("element types"),
            std::string::npos);
}

//===--- Unary and gelu ----------------------------------------------------===//

TEST(Unary, EveryKind) {
  Tensor x = f64({3}, {0.25, 1.0, 4.0});
  expectValues(ok(evalUnary(UnaryKind::Neg, x)), {3}, {-0.25, -1, -4});
  expectValues(ok(evalUnary(UnaryKind::Exp, x)), {3}, {1.2840254166877414, 2.718281828459045, 54.598150033144236},
               1e-12);
  expectValues(ok(evalUnary(UnaryKind::Log, x)), {3}, {-1.3862943611198906, 0, 1.3862943611198906}, 1e-12);
  expectValues(ok(evalUnary(UnaryKind::Sqrt, x)), {3}, {0.5, 1, 2});
  expectValues(ok(evalUnary(UnaryKind::Rsqrt, x)), {3}, {2, 1, 0.5});
  expectValues(ok(evalUnary(UnaryKind::Reciprocal, x)), {3}, {4, 1, 0.25});
  expectValues(ok(evalUnary(UnaryKind::Erf, x)), {3}, {0.2763263901682369, 0.8427007929497149, 0.9999999845827421},
               1e-12);
  expectValues(ok(evalUnary(UnaryKind::Tanh, x)), {3}, {0.24491866240370913, 0.7615941559557649, 0.999329299739067},
               1e-12);
  expectValues(ok(evalUnary(UnaryKind::Relu, f64({3}, {-2, 0, 3}))), {3}, {0, 0, 3});
  EXPECT_TRUE(std::isnan(ok(evalUnary(UnaryKind::Log, f64({}, {-1}))).floats()[0]));
  EXPECT_NE(errorOf(evalUnary(UnaryKind::Exp, i64({1}, {1}))).find("float"), std::string::npos);
}

TEST(Gelu, ErfAndTanhForms) {
  Tensor x = f64({4}, {-1.0, 0.0, 0.5, 2.0});
  // torch.nn.functional.gelu(x) in float64.
  expectValues(ok(evalGelu(GeluApproximation::None, x)), {4},
               {-0.15865525393145707, 0.0, 0.34573123063700656, 1.9544997361036416}, 1e-12);
  // torch.nn.functional.gelu(x, approximate="tanh") in float64.
  expectValues(ok(evalGelu(GeluApproximation::Tanh, x)), {4},
               {-0.15880800939172324, 0.0, 0.34571400982514394, 1.9545976940871754}, 1e-12);
}

//===--- Matmul and embedding ----------------------------------------------===//

TEST(Matmul, TwoByTwo) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  expectValues(ok(evalMatmul(a, b)), {2, 2}, {58, 64, 139, 154});
}

TEST(Matmul, BroadcastBatch) {
  // [2,1,2,2] x [3,2,1] -> [2,3,2,1]: lhs batch (2,1) and rhs batch (3) broadcast to (2,3).
  Tensor a = f32({2, 1, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2});
  Tensor b = f32({3, 2, 1}, {1, 2, 3, 4, 5, 6});
  expectValues(ok(evalMatmul(a, b)), {2, 3, 2, 1}, {1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12});
}

TEST(Matmul, AccumulatesInDouble) {
  // 1 + 2^-30 - 1 is lost in f32 summation order (1 + 2^-30) but exact in double: the sum is 2^-30.
  double tiny = std::ldexp(1.0, -30);
  Tensor a = f32({1, 3}, {1, tiny, -1});
  Tensor b = f32({3, 1}, {1, 1, 1});
  expectValues(ok(evalMatmul(a, b)), {1, 1}, {tiny});
}

TEST(Matmul, Errors) {
  EXPECT_NE(errorOf(evalMatmul(f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 2, 3, 4, 5, 6})))
                .find("contracted"),
            std::string::npos);
  EXPECT_NE(errorOf(evalMatmul(f32({3}, {1, 2, 3}), f32({3, 1}, {1, 2, 3}))).find("rank >= 2"),
            std::string::npos);
}

Tensor bf16(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values) {
  return Tensor::fromFloats(DType::BF16, shape, values);
}

TEST(MatmulBf16, AccumulatesInFp32InVdpbf16psOrder) {
  // k = 3 in pairs (1, 2^-24) and (2^-24, 0): 0 + 2^-24 * 1, then + 1 * 1 ties to 1; + 0, then + 2^-24 ties to 1.
  // Accumulated in double (ptrain.matmul) the sum would be 1 + 2^-23.
  const double tiny = std::ldexp(1.0, -24);
  Tensor a = bf16({1, 3}, {1, tiny, tiny});
  Tensor b = bf16({3, 1}, {1, 1, 1});
  Tensor out = ok(evalMatmulHalf(a, b));
  EXPECT_EQ(out.getDType(), DType::F32);
  expectValues(out, {1, 1}, {1.0});
  expectValues(ok(evalMatmul(f32({1, 3}, {1, tiny, tiny}), f32({3, 1}, {1, 1, 1}))),
               {1, 1}, {1.0 + 2 * tiny});
}

/// [2,1,3,5] x [3,5,4] -> [2,3,3,4] of `dtype` (BF16 or F16): each entry of evalMatmulHalf's result is the runtime
/// GEMM `gemm` (ptrain_gemm_bf16 or _f16) of its operands' entries, bit for bit; `narrow` gives the operands' bits.
void expectRuntimeGemmBits(DType dtype, decltype(&ptrain_cast_f32_bf16) narrow, decltype(&ptrain_gemm_bf16) gemm) {
  std::vector<double> av(2 * 3 * 5), bv(3 * 5 * 4);
  for (size_t i = 0; i < av.size(); ++i)
    av[i] = std::ldexp(static_cast<double>((i * 37) % 255) - 127, -5);
  for (size_t i = 0; i < bv.size(); ++i)
    bv[i] = std::ldexp(static_cast<double>((i * 91) % 253) - 126, -7);
  Tensor a = Tensor::fromFloats(dtype, {2, 1, 3, 5}, av), b = Tensor::fromFloats(dtype, {3, 5, 4}, bv);
  Tensor out = ok(evalMatmulHalf(a, b));
  ASSERT_EQ(out.getShape(), llvm::ArrayRef<int64_t>({2, 3, 3, 4}));
  auto bits = [&](llvm::ArrayRef<double> v) { // exact: the values are bf16 / f16 values
    std::vector<float> wide(v.begin(), v.end());
    std::vector<uint16_t> out(v.size());
    EXPECT_EQ(narrow(wide.data(), static_cast<int64_t>(wide.size()), out.data()), PTRAIN_OK);
    return out;
  };
  const std::vector<uint16_t> ab = bits(a.floats()), bb = bits(b.floats());
  for (int64_t x = 0; x < 2; ++x)
    for (int64_t y = 0; y < 3; ++y) {
      float c[12];
      ASSERT_EQ(gemm(0, 0, 1, 3, 4, 5, 1.0f, ab.data() + x * 15, 0, bb.data() + y * 20, 0, 0.0f, c, 0), PTRAIN_OK);
      for (int64_t e = 0; e < 12; ++e)
        EXPECT_EQ(out.floats()[(x * 3 + y) * 12 + e], static_cast<double>(c[e])) << x << ", " << y << ", " << e;
    }
}

TEST(MatmulBf16, BroadcastBatchGivesTheRuntimeKernelsBits) {
  expectRuntimeGemmBits(DType::BF16, ptrain_cast_f32_bf16, ptrain_gemm_bf16);
}

TEST(MatmulBf16, Errors) {
  EXPECT_NE(errorOf(evalMatmulHalf(f32({1, 1}, {1}), bf16({1, 1}, {1}))).find("two bf16 or two f16 tensors"),
            std::string::npos);
  EXPECT_NE(
      errorOf(evalMatmulHalf(bf16({2, 3}, {1, 2, 3, 4, 5, 6}), bf16({2, 3}, {1, 2, 3, 4, 5, 6}))).find("contracted"),
      std::string::npos);
}

Tensor f16(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values) {
  return Tensor::fromFloats(DType::F16, shape, values);
}

TEST(MatmulF16, AccumulatesInFp32InOrderOfK) {
  // k = 3: 2^15 + 2^-9 ties to 2^15 in fp32 (ulp 2^-8), twice; in double (ptrain.matmul) the sum is 2^15 + 2^-8.
  const double big = std::ldexp(1.0, 15), half = std::ldexp(1.0, -9);
  Tensor out = ok(evalMatmulHalf(f16({1, 3}, {big, half, half}), f16({3, 1}, {1, 1, 1})));
  EXPECT_EQ(out.getDType(), DType::F32);
  expectValues(out, {1, 1}, {big});
  expectValues(ok(evalMatmul(f32({1, 3}, {big, half, half}), f32({3, 1}, {1, 1, 1}))), {1, 1}, {big + 2 * half});
}

TEST(MatmulF16, BroadcastBatchGivesTheRuntimeKernelsBits) {
  expectRuntimeGemmBits(DType::F16, ptrain_cast_f32_f16, ptrain_gemm_f16);
}

TEST(MatmulF16, Errors) {
  EXPECT_NE(errorOf(evalMatmulHalf(bf16({1, 1}, {1}), f16({1, 1}, {1}))).find("two bf16 or two f16 tensors"),
            std::string::npos);
}

TEST(Embedding, LooksUpRows) {
  Tensor table = f32({3, 2}, {0, 1, 10, 11, 20, 21});
  Tensor ids = i64({2, 2}, {2, 0, 1, 2});
  expectValues(ok(evalEmbedding(table, ids)), {2, 2, 2}, {20, 21, 0, 1, 10, 11, 20, 21});
}

TEST(Embedding, IdOutOfRangeIsAnError) {
  Tensor table = f32({3, 2}, {0, 1, 10, 11, 20, 21});
  std::string message = errorOf(evalEmbedding(table, i64({2}, {1, 3})));
  EXPECT_NE(message.find("id 3 at flat position 1 is out of range [0, 3)"), std::string::npos) << message;
  EXPECT_NE(errorOf(evalEmbedding(table, i64({1}, {-1}))).find("id -1"), std::string::npos);
}

//===--- Normalization -----------------------------------------------------===//

TEST(LayerNorm, MatchesNaiveFormula) {
  // Rows of [2,4], normalized over the last axis, biased variance.
  std::vector<double> x = {1, 2, 3, 4, -1, 0.5, 7, 2};
  std::vector<double> g = {1, 2, 0.5, -1}, b = {0, 1, -1, 0.25};
  double eps = 1e-5;
  Tensor bias = f64({4}, b);
  Tensor y = ok(evalLayerNorm(f64({2, 4}, x), f64({4}, g), &bias, -1, eps));
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < 4; ++j)
      mean += x[r * 4 + j] / 4;
    for (int j = 0; j < 4; ++j)
      var += (x[r * 4 + j] - mean) * (x[r * 4 + j] - mean) / 4;
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(y.floats()[r * 4 + j], (x[r * 4 + j] - mean) / std::sqrt(var + eps) * g[j] + b[j], 1e-12);
  }
  // Hand value: row [1,2,3,4] has mean 2.5, variance 1.25; element 0 is -1.5/sqrt(1.25 + 1e-5).
  EXPECT_NEAR(y.floats()[0], -1.5 / std::sqrt(1.25 + 1e-5), 1e-12);
}

TEST(LayerNorm, OverTwoTrailingDimsWithoutBias) {
  // axis 1 of [1,2,2]: all four elements form one group; mean 2.5, variance 1.25.
  Tensor y = ok(evalLayerNorm(f64({1, 2, 2}, {1, 2, 3, 4}), f64({2, 2}, {1, 1, 1, 1}), nullptr, 1, 1e-5));
  double s = 1.0 / std::sqrt(1.25 + 1e-5);
  expectValues(y, {1, 2, 2}, {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 1e-12);
}

TEST(LayerNorm, Errors) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_NE(errorOf(evalLayerNorm(x, f32({3}, {1, 1, 1}), nullptr, -1, 1e-5)).find("normalized shape"),
            std::string::npos);
  EXPECT_NE(errorOf(evalLayerNorm(x, f32({2}, {1, 1}), nullptr, 2, 1e-5)).find("out of range"),
            std::string::npos);
  EXPECT_NE(errorOf(evalLayerNorm(x, f32({2}, {1, 1}), nullptr, -1, 0.0)).find("epsilon"), std::string::npos);
}

TEST(Softmax, MatchesNaiveFormulaOnEachAxis) {
  std::vector<double> x = {1, 2, 3, -1, 0, 5};
  // Axis 1 of [2,3] (rows) and axis 0 (columns).
  Tensor rows = ok(evalSoftmax(f64({2, 3}, x), -1));
  Tensor cols = ok(evalSoftmax(f64({2, 3}, x), 0));
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int c = 0; c < 3; ++c)
      sum += std::exp(x[r * 3 + c]);
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(rows.floats()[r * 3 + c], std::exp(x[r * 3 + c]) / sum, 1e-12);
  }
  for (int c = 0; c < 3; ++c) {
    double sum = std::exp(x[c]) + std::exp(x[3 + c]);
    for (int r = 0; r < 2; ++r)
      EXPECT_NEAR(cols.floats()[r * 3 + c], std::exp(x[r * 3 + c]) / sum, 1e-12);
  }
}

TEST(Softmax, LargeValuesAndMaskedEntries) {
  // Without max subtraction exp(1000) overflows; -inf (a causal mask) gets probability 0.
  double inf = std::numeric_limits<double>::infinity();
  Tensor y = ok(evalSoftmax(f32({3}, {1000, 1000, -inf}), 0));
  expectValues(y, {3}, {0.5, 0.5, 0.0});
}

TEST(Softmax, FullyMaskedRowIsZero) {
  // A row that is -inf everywhere (an attention row its mask hides) is 0, as in onnxruntime, not NaN; along a
  // non-last axis too. Its gradient (softmax_grad of y = 0) is 0.
  double inf = std::numeric_limits<double>::infinity();
  Tensor y = ok(evalSoftmax(f32({2, 3}, {-inf, -inf, -inf, 0, 0, -inf}), -1));
  expectValues(y, {2, 3}, {0, 0, 0, 0.5, 0.5, 0});
  Tensor cols = ok(evalSoftmax(f32({2, 2}, {-inf, 1, -inf, 1}), 0));
  expectValues(cols, {2, 2}, {0, 0.5, 0, 0.5});
  Tensor dx = ok(evalSoftmaxGrad(f32({2, 3}, {1, 2, 3, 4, 5, 6}), y, -1));
  expectValues(dx, {2, 3}, {0, 0, 0, -0.25, 0.25, 0});
}

TEST(CrossEntropy, HandValue) {
  // Two positions, three classes. Position 0: logits [0,0,0], label 1 -> log 3. Position 1: [1,2,3], label 2
  // -> log(e + e^2 + e^3) - 3 = 0.40760596444438.
  Tensor logits = f64({2, 3}, {0, 0, 0, 1, 2, 3});
  Tensor loss = ok(evalCrossEntropy(logits, i64({2}, {1, 2})));
  ASSERT_EQ(loss.getRank(), 0);
  EXPECT_NEAR(loss.floats()[0], (std::log(3.0) + 0.40760596444437977) / 2, 1e-12);
}

TEST(CrossEntropy, Errors) {
  Tensor logits = f32({2, 3}, {0, 0, 0, 1, 2, 3});
  EXPECT_NE(errorOf(evalCrossEntropy(logits, i64({2}, {1, 3}))).find("label 3"), std::string::npos);
  EXPECT_NE(errorOf(evalCrossEntropy(logits, i64({3}, {1, 1, 1}))).find("leading shape"), std::string::npos);
}

//===--- Data movement -----------------------------------------------------===//

TEST(Reshape, KeepsRowMajorOrder) {
  Tensor y = ok(evalReshape(f32({2, 3}, {1, 2, 3, 4, 5, 6}), {3, 2}));
  expectValues(y, {3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_NE(errorOf(evalReshape(f32({2, 3}, {1, 2, 3, 4, 5, 6}), {4})).find("cannot reshape"), std::string::npos);
}

TEST(Transpose, Permutes) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectValues(ok(evalTranspose(x, {1, 0})), {3, 2}, {1, 4, 2, 5, 3, 6});
  // [1,2,2,2] with perm (0,2,1,3): the head and sequence dimensions swap.
  Tensor h = i64({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expectValues(ok(evalTranspose(h, {0, 2, 1, 3})), {1, 2, 2, 2}, {0, 1, 4, 5, 2, 3, 6, 7});
  EXPECT_NE(errorOf(evalTranspose(x, {0, 0})).find("permutation"), std::string::npos);
}

TEST(Split, ConsecutivePieces) {
  Tensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<Tensor> pieces = ok(evalSplit(x, -1, {1, 3}));
  ASSERT_EQ(pieces.size(), 2u);
  expectValues(pieces[0], {2, 1}, {1, 5});
  expectValues(pieces[1], {2, 3}, {2, 3, 4, 6, 7, 8});
  std::vector<Tensor> rows = ok(evalSplit(x, 0, {1, 1}));
  expectValues(rows[1], {1, 4}, {5, 6, 7, 8});
  EXPECT_NE(errorOf(evalSplit(x, 1, {1, 2})).find("add up to 3"), std::string::npos);
}

} // namespace
