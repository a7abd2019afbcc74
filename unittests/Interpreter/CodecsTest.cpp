//===- CodecsTest.cpp - exact values of the interpreter's codec ops -------===//
//
// ptrain.compress / ptrain.decompress / ptrain.compressed_all_reduce_start run every codec the runtime has a
// kernel for (lib/Interpreter/Codecs.cpp); here their codes, states and results are pinned on small inputs to
// numbers computed independently: by hand in the comments, or by numpy in Inputs/codec_reference.py (its
// output is quoted next to each use).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Interpreter.h"
#include "ptrain/Interpreter/Kernels.h"
#include "ptrain/Runtime/ptrain_runtime.h"
#include "ptrain/Tools/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

namespace {

class CodecsTest : public ::testing::Test {
protected:
  CodecsTest() {
    DialectRegistry registry;
    registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Runs @forward of `source` on `args`; the error message in `error` when given, else a test failure.
  std::vector<Tensor> run(llvm::StringRef source, llvm::ArrayRef<Tensor> args, std::string *error = nullptr) {
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module) {
      ADD_FAILURE() << "parse failed";
      return {};
    }
    Interpreter interpreter(*module, makeMapStateProvider({}));
    llvm::Expected<std::vector<Tensor>> results = interpreter.run("forward", args);
    if (!results) {
      std::string message = llvm::toString(results.takeError());
      if (error)
        *error = message;
      else
        ADD_FAILURE() << message;
      return {};
    }
    return std::move(*results);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

Tensor f32(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values) {
  return Tensor::fromFloats(DType::F32, shape, values);
}
Tensor i64(int64_t value) { return llvm::cantFail(Tensor::fromInts(DType::I64, {}, {value})); }

std::vector<double> values(const Tensor &t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    out.push_back(t.getAsDouble(i));
  return out;
}

void expectNear(const Tensor &t, llvm::ArrayRef<double> expected, double atol, const char *what) {
  ASSERT_EQ(t.getNumElements(), static_cast<int64_t>(expected.size())) << what;
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t.getAsDouble(static_cast<int64_t>(i)), expected[i], atol) << what << " element " << i;
}

// A rank-1 matrix M = u v^T (u = 1, v = [3, -1, 2, 0.5]) with the warm-start Q0 = e0: P = M Q0 = 3 u, P^ =
// u / 2 = 0.5 (exact: |P| = 6), Q = M^T P^ = 2 v, decode P^ Q^T = u v^T = M bit for bit, and the residual
// M - decode = 0. PowerSGD of rank 1 is exact on a rank-1 matrix.
TEST_F(CodecsTest, PowerSgdRank1OnARank1MatrixIsExact) {
  const char *source = R"mlir(
    func.func @forward(%g: tensor<4x4xf32>, %e: tensor<4x4xf32>, %q0: tensor<4x1xf32>)
        -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x4xf32>) {
      %p, %q, %e1, %q1 = ptrain.compress %g state(%e, %q0) {codec = #ptrain.powersgd<rank = 1>, error_feedback}
          : tensor<4x4xf32> state(tensor<4x4xf32>, tensor<4x1xf32>)
          -> (tensor<4x1xf32>, tensor<4x1xf32>) state(tensor<4x4xf32>, tensor<4x1xf32>)
      %d = ptrain.decompress %p, %q {codec = #ptrain.powersgd<rank = 1>}
          : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
      return %p, %q, %e1, %q1, %d : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x4xf32>
    })mlir";
  std::vector<double> m;
  for (int r = 0; r < 4; ++r)
    for (double v : {3.0, -1.0, 2.0, 0.5})
      m.push_back(v);
  std::vector<Tensor> out =
      run(source, {f32({4, 4}, m), f32({4, 4}, std::vector<double>(16, 0.0)), f32({4, 1}, {1, 0, 0, 0})});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{6, -2, 4, 1}));
  EXPECT_EQ(values(out[2]), std::vector<double>(16, 0.0));
  EXPECT_EQ(values(out[3]), (std::vector<double>{6, -2, 4, 1}));
  EXPECT_EQ(values(out[4]), m);
}

// Data-parallel PowerSGD on 2 ranks, rank 1, avg, error feedback, warm-start Q0 = e0 (Vogels et al. 2019,
// Algorithm 2). Inputs/codec_reference.py (numpy, fp64):
//   P^ = [0.23570226, 0.23570226, 0.94280904, 0]  (= [1, 1, 4, 0] / sqrt(18))
//   Q  = [4.24264069, -0.23570226, 2.82842712, 0] (summed over the ranks; warm-start Q / N = Q / 2)
//   out = 0.5 P^ Q^T = [[1/2, -1/36, 1/3, 0], [1/2, -1/36, 1/3, 0], [2, -1/9, 4/3, 0], [0, 0, 0, 0]]
//   e_i = g_i - 0.5 P^ Q^T.
TEST_F(CodecsTest, DataParallelPowerSgdOnTwoRanksIsPinned) {
  const char *source = R"mlir(
    ptrain.grid @grid(dp = 2)
    func.func @forward(%g: tensor<4x4xf32>, %e: tensor<4x4xf32>, %q0: tensor<4x1xf32>) -> tensor<4x4xf32> {
      %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q0) on @grid axes [dp] reduction = avg
          {codec = #ptrain.powersgd<rank = 1>, error_feedback}
          : tensor<4x4xf32> state(tensor<4x4xf32>, tensor<4x1xf32>) -> state(tensor<4x4xf32>, tensor<4x1xf32>)
      %out = ptrain.wait %r : !ptrain.request<tensor<4x4xf32>>
      return %out : tensor<4x4xf32>
    })mlir";
  module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  CompressedAllReduceStartOp op;
  module->walk([&](CompressedAllReduceStartOp c) { op = c; });
  ASSERT_TRUE(op);
  const std::vector<double> g0 = {1, 2, 0, -1, 0, 1, 3, 2, 2, -1, 1, 0, 1, 0, -2, 1};
  const std::vector<double> g1 = {0, 1, 1, 2, 1, -1, 0, 1, 2, 0, 1, -1, -1, 2, 1, 0};
  Tensor in0 = f32({4, 4}, g0), in1 = f32({4, 4}, g1);
  std::vector<std::vector<Tensor>> states(
      2, std::vector<Tensor>{f32({4, 4}, std::vector<double>(16, 0.0)), f32({4, 1}, {1, 0, 0, 0})});
  auto results = evalCompressedAllReduce(op, {&in0, &in1}, states);
  ASSERT_TRUE(static_cast<bool>(results)) << llvm::toString(results.takeError());
  ASSERT_EQ(results->size(), 2u);
  const double third = 1.0 / 3.0, a = -1.0 / 36.0, b = -1.0 / 9.0;
  const std::vector<double> out = {0.5, a, third, 0, 0.5, a, third, 0, 2, b, 4 * third, 0, 0, 0, 0, 0};
  std::vector<double> e0(16), e1(16);
  for (int i = 0; i < 16; ++i) {
    e0[i] = g0[i] - out[i];
    e1[i] = g1[i] - out[i];
  }
  const std::vector<double> warmQ = {2.121320343559643, -0.11785113019775793, 1.4142135623730951, 0.0};
  for (int r = 0; r < 2; ++r) {
    expectNear((*results)[r].first, out, 1e-6, "output");
    ASSERT_EQ((*results)[r].second.size(), 2u);
    expectNear((*results)[r].second[0], r == 0 ? e0 : e1, 1e-6, "residual");
    expectNear((*results)[r].second[1], warmQ, 1e-6, "warm-start Q");
  }
  // P^ and the summed Q of the phases the op runs (ptrain_powersgd_phase_p/q, as CompressedCollectives.cpp).
  std::vector<float> m0(g0.begin(), g0.end()), m1(g1.begin(), g1.end()), e0f(16, 0.0f), e1f(16, 0.0f);
  std::vector<float> q0a = {1, 0, 0, 0}, q0b = {1, 0, 0, 0}, p0(4), p1(4), qa(4), qb(4);
  ASSERT_EQ(ptrain_powersgd_phase_p_f32(m0.data(), e0f.data(), q0a.data(), 1, 4, 4, 1, 0, p0.data(), qa.data()), 0);
  ASSERT_EQ(ptrain_powersgd_phase_p_f32(m1.data(), e1f.data(), q0b.data(), 1, 4, 4, 1, 0, p1.data(), qb.data()), 0);
  std::vector<float> p(4);
  for (int i = 0; i < 4; ++i)
    p[i] = p0[i] + p1[i];
  std::vector<float> pa = p, pb = p;
  ASSERT_EQ(ptrain_powersgd_phase_q_f32(e0f.data(), 1, 4, 4, 1, pa.data(), qa.data()), 0);
  ASSERT_EQ(ptrain_powersgd_phase_q_f32(e1f.data(), 1, 4, 4, 1, pb.data(), qb.data()), 0);
  const std::vector<double> pHat = {0.23570226039551587, 0.23570226039551587, 0.9428090415820635, 0.0};
  const std::vector<double> qSum = {4.242640687119286, -0.23570226039551587, 2.8284271247461903, 0.0};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(pa[i], pHat[i], 1e-7) << "P^ " << i;
    EXPECT_NEAR(qa[i] + qb[i], qSum[i], 1e-6) << "Q " << i;
  }
}

// Top-k (k = 3) with error feedback on [0.5, -3, 1, 2.5, -0.25, 3]: the three largest magnitudes, indices
// ascending; the residual keeps what was not sent; decode scatters into zeros. k = 1 on a tie |3| = |-3|
// keeps the smaller index.
TEST_F(CodecsTest, TopKCodesArePinned) {
  const char *source = R"mlir(
    func.func @forward(%g: tensor<6xf32>, %e: tensor<6xf32>)
        -> (tensor<3xf32>, tensor<3xi32>, tensor<6xf32>, tensor<6xf32>) {
      %v, %i, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.topk<k = 3>, error_feedback}
          : tensor<6xf32> state(tensor<6xf32>) -> (tensor<3xf32>, tensor<3xi32>) state(tensor<6xf32>)
      %d = ptrain.decompress %v, %i {codec = #ptrain.topk<k = 3>} : (tensor<3xf32>, tensor<3xi32>) -> tensor<6xf32>
      return %v, %i, %e1, %d : tensor<3xf32>, tensor<3xi32>, tensor<6xf32>, tensor<6xf32>
    })mlir";
  std::vector<Tensor> out = run(source, {f32({6}, {0.5, -3, 1, 2.5, -0.25, 3}), f32({6}, {0, 0, 0, 0, 0, 0})});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{-3, 2.5, 3}));
  EXPECT_EQ(out[1].getDType(), DType::I32);
  EXPECT_EQ(values(out[1]), (std::vector<double>{1, 3, 5}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{0.5, 0, 1, 0, -0.25, 0}));
  EXPECT_EQ(values(out[3]), (std::vector<double>{0, -3, 0, 2.5, 0, 3}));

  const char *tie = R"mlir(
    func.func @forward(%g: tensor<2xf32>) -> (tensor<1xf32>, tensor<1xi32>) {
      %v, %i = ptrain.compress %g {codec = #ptrain.topk<k = 1>} : tensor<2xf32> -> (tensor<1xf32>, tensor<1xi32>)
      return %v, %i : tensor<1xf32>, tensor<1xi32>
    })mlir";
  out = run(tie, {f32({2}, {3, -3})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{3}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{0}));
}

// 4-bit symmetric, one scale: s = amax / 7 = 1, u = rn(v / s) + 8 with ties to even: -7 -> 1, 3.5 -> 4 + 8 = 12,
// 1.5 -> 2 + 8 = 10, 7 -> 15; packed LSB first two per byte: 1 | 12 << 4 = 0xC1 (i8 -63), 10 | 15 << 4 = 0xFA
// (i8 -6); decoded (u - 8) s = [-7, 4, 2, 7]. 2-bit, one scale: s = 1 / 1, u = rn(v) + 2 on [-1, 0, 1, 0.5] =
// [1, 2, 3, 2] (0.5 ties to 0), one byte 1 | 2 << 2 | 3 << 4 | 2 << 6 = 185 (i8 -71), decoded [-1, 0, 1, 0].
TEST_F(CodecsTest, QuantizationCodesArePinned) {
  const char *source = R"mlir(
    func.func @forward(%g: tensor<4xf32>) -> (tensor<2xi8>, tensor<1xf32>, tensor<4xf32>) {
      %p, %s = ptrain.compress %g {codec = #ptrain.quant<bits = 4, granularity = tensor>}
          : tensor<4xf32> -> (tensor<2xi8>, tensor<1xf32>)
      %d = ptrain.decompress %p, %s {codec = #ptrain.quant<bits = 4, granularity = tensor>}
          : (tensor<2xi8>, tensor<1xf32>) -> tensor<4xf32>
      return %p, %s, %d : tensor<2xi8>, tensor<1xf32>, tensor<4xf32>
    })mlir";
  std::vector<Tensor> out = run(source, {f32({4}, {-7, 3.5, 1.5, 7})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].getDType(), DType::I8);
  EXPECT_EQ(values(out[0]), (std::vector<double>{-63, -6}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{1}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{-7, 4, 2, 7}));

  const char *twoBit = R"mlir(
    func.func @forward(%g: tensor<4xf32>) -> (tensor<1xi8>, tensor<4xf32>) {
      %p, %s = ptrain.compress %g {codec = #ptrain.quant<bits = 2, granularity = tensor>}
          : tensor<4xf32> -> (tensor<1xi8>, tensor<1xf32>)
      %d = ptrain.decompress %p, %s {codec = #ptrain.quant<bits = 2, granularity = tensor>}
          : (tensor<1xi8>, tensor<1xf32>) -> tensor<4xf32>
      return %p, %d : tensor<1xi8>, tensor<4xf32>
    })mlir";
  out = run(twoBit, {f32({4}, {-1, 0, 1, 0.5})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{-71}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{-1, 0, 1, 0}));
}

// TAH-Quant in the executor equals the runtime kernel it calls, bit for bit: codes (packed bytes, scales, zero
// points, tile flags) and the decode, on 4 x 32 at 16-element tiles (T = 8, round(0.8 T) = 6 high tiles at 4 bits,
// 2 at 3: (6 x 4 + 2 x 3) x 16 / 8 = 60 packed bytes), with an outlier tile so that the rotation runs.
TEST_F(CodecsTest, TahQuantEqualsTheRuntimeKernel) {
  const char *source = R"mlir(
    func.func @forward(%g: tensor<4x32xf32>)
        -> (tensor<60xi8>, tensor<8xf32>, tensor<8xf32>, tensor<8xi8>, tensor<4x32xf32>) {
      %p, %s, %z, %f = ptrain.compress %g {codec = #ptrain.tahquant<tile_size = 16>}
          : tensor<4x32xf32> -> (tensor<60xi8>, tensor<8xf32>, tensor<8xf32>, tensor<8xi8>)
      %d = ptrain.decompress %p, %s, %z, %f {codec = #ptrain.tahquant<tile_size = 16>}
          : (tensor<60xi8>, tensor<8xf32>, tensor<8xf32>, tensor<8xi8>) -> tensor<4x32xf32>
      return %p, %s, %z, %f, %d : tensor<60xi8>, tensor<8xf32>, tensor<8xf32>, tensor<8xi8>, tensor<4x32xf32>
    })mlir";
  std::vector<double> input(128);
  for (int i = 0; i < 128; ++i)
    input[i] = static_cast<float>(std::sin(0.37 * i) * (1 + i % 5));
  input[21] = 30; // tile 1's outlier
  std::vector<Tensor> out = run(source, {f32({4, 32}, input)});
  ASSERT_EQ(out.size(), 5u);
  std::vector<float> g(input.begin(), input.end()), scales(8), zeros(8), decoded(128);
  std::vector<uint8_t> packed(60), flags(8);
  ASSERT_EQ(ptrain_tahquant_encode_f32(g.data(), nullptr, 128, 16, 3, 4, 6, packed.data(), scales.data(),
                                       zeros.data(), flags.data()),
            PTRAIN_OK);
  ASSERT_EQ(ptrain_tahquant_decode_f32(packed.data(), scales.data(), zeros.data(), flags.data(), 128, 16, 3, 4, 6,
                                       decoded.data()),
            PTRAIN_OK);
  auto asI8 = [](const std::vector<uint8_t> &bytes) {
    std::vector<double> v;
    for (uint8_t b : bytes)
      v.push_back(static_cast<int8_t>(b));
    return v;
  };
  auto asDouble = [](const std::vector<float> &f) { return std::vector<double>(f.begin(), f.end()); };
  EXPECT_EQ(values(out[0]), asI8(packed));
  EXPECT_EQ(values(out[1]), asDouble(scales));
  EXPECT_EQ(values(out[2]), asDouble(zeros));
  EXPECT_EQ(values(out[3]), asI8(flags));
  EXPECT_EQ(values(out[4]), asDouble(decoded));
  EXPECT_NE(flags[1] & 0x40, 0) << "the outlier tile is rotated";
}

// Rand-k, n = 8, k = 3, seed 7: the positions of counter 0 are [3, 5, 6] and of counter 1 [0, 1, 3]
// (Inputs/codec_reference.py reimplements RandK.cpp's rule). Encoder and decoder advance their counters.
TEST_F(CodecsTest, RandKCodesArePinned) {
  const char *source = R"mlir(
    func.func @forward(%g: tensor<8xf32>, %c: tensor<i64>, %dc: tensor<i64>)
        -> (tensor<3xf32>, tensor<i64>, tensor<8xf32>, tensor<i64>) {
      %v, %c1 = ptrain.compress %g state(%c) {codec = #ptrain.randk<k = 3, seed = 7>}
          : tensor<8xf32> state(tensor<i64>) -> (tensor<3xf32>) state(tensor<i64>)
      %d, %dc1 = ptrain.decompress %v state(%dc) {codec = #ptrain.randk<k = 3, seed = 7>}
          : (tensor<3xf32>) state(tensor<i64>) -> tensor<8xf32> state(tensor<i64>)
      return %v, %c1, %d, %dc1 : tensor<3xf32>, tensor<i64>, tensor<8xf32>, tensor<i64>
    })mlir";
  Tensor g = f32({8}, {10, 11, 12, 13, 14, 15, 16, 17});
  std::vector<Tensor> out = run(source, {g, i64(0), i64(0)});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{13, 15, 16}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{1}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{0, 0, 0, 13, 0, 15, 16, 0}));
  EXPECT_EQ(values(out[3]), (std::vector<double>{1}));
  out = run(source, {g, i64(1), i64(1)});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{10, 11, 13}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{10, 11, 0, 13, 0, 0, 0, 0}));
}

// Casts round to nearest even: 0.1 is 0.0999755859375 in f16 and 0.10009765625 in bf16; 65520 overflows f16
// to inf; bf16 keeps it (65536).
TEST_F(CodecsTest, CastCodesArePinned) {
  const char *source = R"mlir(
    func.func @forward(%g: tensor<3xf32>) -> (tensor<3xf16>, tensor<3xf32>, tensor<3xbf16>) {
      %h = ptrain.compress %g {codec = #ptrain.cast<f16>} : tensor<3xf32> -> (tensor<3xf16>)
      %d = ptrain.decompress %h {codec = #ptrain.cast<f16>} : (tensor<3xf16>) -> tensor<3xf32>
      %b = ptrain.compress %g {codec = #ptrain.cast<bf16>} : tensor<3xf32> -> (tensor<3xbf16>)
      return %h, %d, %b : tensor<3xf16>, tensor<3xf32>, tensor<3xbf16>
    })mlir";
  std::vector<Tensor> out = run(source, {f32({3}, {1.0, 0.1, 65520.0})});
  ASSERT_EQ(out.size(), 3u);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(values(out[0]), (std::vector<double>{1.0, 0.0999755859375, inf}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{1.0, 0.0999755859375, inf}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{1.0, 0.10009765625, 65536.0}));
}

/// The compressed all-reduce of `codec` (spelled as in MLIR) over two members of 3 elements, sum.
std::vector<std::pair<Tensor, std::vector<Tensor>>> allReduce(MLIRContext &context, const std::string &codec,
                                                              const std::string &stateTypes, const Tensor &a,
                                                              const Tensor &b, std::vector<std::vector<Tensor>> states,
                                                              bool errorFeedback) {
  std::string source =
      "ptrain.grid @grid(dp = 2)\nfunc.func @forward(%g: tensor<3xf32>" +
      std::string(stateTypes.empty() ? "" : ", %s: " + stateTypes) + ") {\n  %r" + (stateTypes.empty() ? "" : ", %n") +
      " = ptrain.compressed_all_reduce_start %g" + (stateTypes.empty() ? "" : " state(%s)") +
      " on @grid axes [dp] reduction = sum {codec = " + codec + (errorFeedback ? ", error_feedback" : "") +
      "} : tensor<3xf32>" + (stateTypes.empty() ? "" : " state(" + stateTypes + ") -> state(" + stateTypes + ")") +
      "\n  return\n}";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  if (!module) {
    ADD_FAILURE() << "parse failed: " << source;
    return {};
  }
  CompressedAllReduceStartOp op;
  module->walk([&](CompressedAllReduceStartOp c) { op = c; });
  auto results = evalCompressedAllReduce(op, {&a, &b}, states);
  if (!results) {
    ADD_FAILURE() << llvm::toString(results.takeError());
    return {};
  }
  return std::move(*results);
}

// Compressed all-reduces (sum) of codes that are not PowerSGD factors, on [1, -5, 2] and [4, 0, -1]:
// top-k (k = 1) is gathered, decoded and summed ([0, -5, 0] + [4, 0, 0]) with local residuals; rand-k with a
// shared seed sums the kept values at the same positions on both members; the f16 cast sums decoded codes in
// fp32; 8-bit quantization (one scale: amax / 127) is gathered, decoded and summed.
TEST_F(CodecsTest, CompressedAllReducesOfEveryCodec) {
  Tensor a = f32({3}, {1, -5, 2}), b = f32({3}, {4, 0, -1});
  Tensor zero = f32({3}, {0, 0, 0});
  auto topk = allReduce(context, "#ptrain.topk<k = 1>", "tensor<3xf32>", a, b, {{zero}, {zero}}, true);
  ASSERT_EQ(topk.size(), 2u);
  for (auto &member : topk)
    EXPECT_EQ(values(member.first), (std::vector<double>{4, -5, 0}));
  EXPECT_EQ(values(topk[0].second[0]), (std::vector<double>{1, 0, 2}));
  EXPECT_EQ(values(topk[1].second[0]), (std::vector<double>{0, 0, -1}));

  // Rand-k n = 3, k = 2, seed 1, counter 5: both members keep the same two positions; the third stays 0.
  auto randk = allReduce(context, "#ptrain.randk<k = 2, seed = 1>", "tensor<i64>", a, b, {{i64(5)}, {i64(5)}}, false);
  ASSERT_EQ(randk.size(), 2u);
  std::vector<double> sum = values(randk[0].first), full = {5, -5, 1};
  int kept = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(sum[i] == 0 || sum[i] == full[i]) << i;
    kept += sum[i] == full[i] && full[i] != 0;
  }
  EXPECT_EQ(kept, 2);
  EXPECT_EQ(values(randk[1].first), sum);
  EXPECT_EQ(values(randk[0].second[0]), (std::vector<double>{6}));

  auto cast = allReduce(context, "#ptrain.cast<f16>", "", a, b, {{}, {}}, false);
  ASSERT_EQ(cast.size(), 2u);
  EXPECT_EQ(values(cast[0].first), full);

  // 8-bit, one scale each: s_a = 5 / 127, s_b = 4 / 127; every value here is a multiple of its scale up to
  // rounding: decode(a) + decode(b) within one step (5 / 127) of the exact sum.
  auto quant = allReduce(context, "#ptrain.quant<bits = 8, granularity = tensor>", "", a, b, {{}, {}}, false);
  ASSERT_EQ(quant.size(), 2u);
  expectNear(quant[0].first, full, 5.0 / 127.0, "8-bit sum");
  EXPECT_EQ(values(quant[1].first), values(quant[0].first));
}

// The linear autoencoder has no runtime kernel: a clear error, not a crash.
TEST_F(CodecsTest, LinearAutoencoderIsAnError) {
  const char *source = R"mlir(
    func.func @forward(%g: tensor<2x4xf32>, %w: tensor<4x2xf32>) -> tensor<2x2xf32> {
      %c = ptrain.compress %g params(%w) {codec = #ptrain.linear_ae<dim = 2>}
          : tensor<2x4xf32> params(tensor<4x2xf32>) -> (tensor<2x2xf32>)
      return %c : tensor<2x2xf32>
    })mlir";
  std::string error;
  run(source, {f32({2, 4}, std::vector<double>(8, 1.0)), f32({4, 2}, std::vector<double>(8, 1.0))}, &error);
  EXPECT_NE(error.find("the runtime has no kernel for the codec #ptrain.linear_ae<dim = 2>"), std::string::npos)
      << error;
}

} // namespace
