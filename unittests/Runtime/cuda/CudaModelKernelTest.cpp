//===- CudaModelKernelTest.cpp - The model kernels of compiled CUDA steps -===//
//
// Each ptrain_cuda_* model kernel (what --emit-cuda calls, docs/CodegenCuda.md)
// against its CPU counterpart on the same inputs: data movement, integer ops,
// embedding forward and AdamW bit for bit; the rest within 1e-5 relative to
// the largest CPU magnitude (sums in another order; GEMM through cuBLAS
// within 1e-5 too at these sizes). An id outside the vocabulary is reported
// by ptrain_cuda_check_indices by position. The kernels beyond the GPT core
// (reduce, broadcast_to, cast, gather, log-softmax, SGD, global-norm
// clipping, the vocabulary-parallel embedding and cross-entropy parts, the
// weighted / ignore_index / sum cross-entropy) the same way: bit for bit where the CPU's result has one rounding of an
// exact value, else within 1e-6 / 1e-5. The bf16 and f16 casts bit for bit and the bf16 and f16 GEMMs within
// 1e-5. Skipped (77) without a device.
//
//===----------------------------------------------------------------------===//

#include "CudaTest.h"

#include <cmath>
#include <random>

namespace {
using namespace ptrain::testing;

void expectClose(const std::vector<float> &cpu, const std::vector<float> &gpu, const char *what,
                 double tolerance = 1e-5) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  double scale = 0.0, worst = 0.0;
  for (float v : cpu)
    scale = std::max(scale, std::fabs(static_cast<double>(v)));
  for (size_t i = 0; i < cpu.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(cpu[i]) - gpu[i]));
  EXPECT_LE(worst, tolerance * (scale > 0 ? scale : 1.0))
      << what << ": max |cpu - gpu| " << worst << ", scale " << scale;
}

TEST(CudaModelKernels, GemmBatchedAndBroadcast) {
  // [3, 5, 7] x [7, 4] (the weight broadcast over the batch) and both transposes.
  const int64_t batch = 3, m = 5, n = 4, k = 7;
  const std::vector<float> a = randomValues(batch * m * k, 1), b = randomValues(k * n, 2);
  for (int32_t ta = 0; ta < 2; ++ta)
    for (int32_t tb = 0; tb < 2; ++tb) {
      std::vector<float> cpu(batch * m * n);
      DeviceArray<float> da(a), db(b), dc(cpu.size());
      ASSERT_EQ(ptrain_gemm_f32(ta, tb, batch, m, n, k, 1.5f, a.data(), m * k, b.data(), 0, 0.0f, cpu.data(), m * n),
                PTRAIN_OK);
      ASSERT_EQ(ptrain_cuda_gemm_f32(ta, tb, batch, m, n, k, 1.5f, da.get(), m * k, db.get(), 0, 0.0f, dc.get(), m * n),
                PTRAIN_OK)
          << ptrain_last_error();
      expectClose(cpu, dc.download(), "gemm");
    }
}

/// The CPU and CUDA calls of one 16-bit format (bf16 or f16): its casts and its GEMM with fp32 accumulation.
struct HalfCalls {
  ptrain_dtype_t dtype;
  ptrain_status_t (*narrow)(const float *, int64_t, uint16_t *);
  ptrain_status_t (*widen)(const uint16_t *, int64_t, float *);
  decltype(&ptrain_gemm_bf16) cpuGemm;
  decltype(&ptrain_cuda_gemm_bf16) cudaGemm;
  const char *what;
};

/// The casts bit for bit against the CPU's (round to nearest even, exact widening), then the 16-bit GEMM with fp32
/// accumulation against the CPU's on the same operands: the products are exact in fp32, so only the summation
/// order differs (1e-5 relative).
void checkHalfGemmAndCasts(const HalfCalls &calls) {
  const int64_t batch = 3, m = 5, n = 4, k = 33;
  const std::vector<float> a = randomValues(batch * m * k, 11), b = randomValues(k * n, 12);
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  ASSERT_EQ(calls.narrow(a.data(), static_cast<int64_t>(a.size()), a16.data()), PTRAIN_OK);
  ASSERT_EQ(calls.narrow(b.data(), static_cast<int64_t>(b.size()), b16.data()), PTRAIN_OK);
  DeviceArray<float> da(a), db(b);
  DeviceArray<uint16_t> da16(a.size()), db16(b.size());
  ASSERT_EQ(ptrain_cuda_cast_encode_f32(da.get(), nullptr, static_cast<int64_t>(a.size()), calls.dtype, da16.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  ASSERT_EQ(ptrain_cuda_cast_encode_f32(db.get(), nullptr, static_cast<int64_t>(b.size()), calls.dtype, db16.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  EXPECT_EQ(da16.download(), a16) << calls.what;
  EXPECT_EQ(db16.download(), b16) << calls.what;
  std::vector<float> widened(a.size());
  DeviceArray<float> dwide(a.size());
  ASSERT_EQ(calls.widen(a16.data(), static_cast<int64_t>(a.size()), widened.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_cast_decode_f32(da16.get(), static_cast<int64_t>(a.size()), calls.dtype, dwide.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  EXPECT_EQ(dwide.download(), widened) << calls.what;
  for (int32_t ta = 0; ta < 2; ++ta)
    for (int32_t tb = 0; tb < 2; ++tb) {
      std::vector<float> cpu(batch * m * n);
      DeviceArray<float> dc(cpu.size());
      ASSERT_EQ(calls.cpuGemm(ta, tb, batch, m, n, k, 1.0f, a16.data(), m * k, b16.data(), 0, 0.0f, cpu.data(), m * n),
                PTRAIN_OK);
      ASSERT_EQ(calls.cudaGemm(ta, tb, batch, m, n, k, 1.0f, da16.get(), m * k, db16.get(), 0, 0.0f, dc.get(), m * n),
                PTRAIN_OK)
          << ptrain_last_error();
      expectClose(cpu, dc.download(), calls.what);
    }
}

TEST(CudaModelKernels, GemmBf16AndCasts) {
  // --precision bf16 (docs/MixedPrecision.md).
  checkHalfGemmAndCasts({PTRAIN_DTYPE_BF16, ptrain_cast_f32_bf16, ptrain_cast_bf16_f32, ptrain_gemm_bf16,
                         ptrain_cuda_gemm_bf16, "gemm_bf16"});
}

TEST(CudaModelKernels, GemmF16AndCasts) {
  // --precision fp16 (docs/MixedPrecision.md): IEEE binary16 operands, cuBLAS's CUDA_R_16F.
  checkHalfGemmAndCasts(
      {PTRAIN_DTYPE_F16, ptrain_cast_f32_f16, ptrain_cast_f16_f32, ptrain_gemm_f16, ptrain_cuda_gemm_f16, "gemm_f16"});
}

TEST(CudaModelKernels, BroadcastingBinaryUnarySumTo) {
  const int64_t ad[3] = {2, 1, 5}, bd[2] = {3, 5}, od[3] = {2, 3, 5};
  const std::vector<float> a = randomValues(10, 3), b = randomValues(15, 4);
  DeviceArray<float> da(a), db(b);
  for (int32_t kind = PTRAIN_BINARY_ADD; kind <= PTRAIN_BINARY_MIN; ++kind) {
    std::vector<float> cpu(30);
    DeviceArray<float> out(30);
    const float *lhs = kind == PTRAIN_BINARY_POW ? nullptr : a.data();
    std::vector<float> absA(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      absA[i] = std::fabs(a[i]) + 0.5f;
    DeviceArray<float> dabs(absA);
    ASSERT_EQ(ptrain_binary_f32(kind, lhs ? lhs : absA.data(), 3, ad, b.data(), 2, bd, 3, od, cpu.data()), PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_binary_f32(kind, lhs ? da.get() : dabs.get(), 3, ad, db.get(), 2, bd, 3, od, out.get()),
              PTRAIN_OK)
        << ptrain_last_error();
    expectClose(cpu, out.download(), "binary");
  }
  const std::vector<float> x = randomValues(30, 5);
  DeviceArray<float> dx(x);
  for (int32_t kind = PTRAIN_UNARY_NEG; kind <= PTRAIN_UNARY_RELU; ++kind) {
    std::vector<float> in = x;
    if (kind == PTRAIN_UNARY_LOG || kind == PTRAIN_UNARY_SQRT || kind == PTRAIN_UNARY_RSQRT)
      for (float &v : in)
        v = std::fabs(v) + 0.1f;
    std::vector<float> cpu(30);
    DeviceArray<float> din(in), out(30);
    ASSERT_EQ(ptrain_unary_f32(kind, in.data(), 30, cpu.data()), PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_unary_f32(kind, din.get(), 30, out.get()), PTRAIN_OK) << ptrain_last_error();
    expectClose(cpu, out.download(), "unary");
  }
  // sum_to [2, 3, 5] -> [3, 1] is not a broadcast; -> [1, 5] and -> [3, 1]-shaped [2, 3, 1] are.
  const int64_t to1[2] = {1, 5}, to2[3] = {2, 3, 1};
  for (auto [rank, dims, count] : {std::tuple<int32_t, const int64_t *, int64_t>{2, to1, 5}, {3, to2, 6}}) {
    std::vector<float> cpu(count);
    DeviceArray<float> out(count);
    ASSERT_EQ(ptrain_sum_to_f32(x.data(), 3, od, rank, dims, cpu.data()), PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_sum_to_f32(dx.get(), 3, od, rank, dims, out.get()), PTRAIN_OK) << ptrain_last_error();
    expectClose(cpu, out.download(), "sum_to");
  }
}

TEST(CudaModelKernels, DataMovementIsExact) {
  const int64_t dims[3] = {2, 3, 4}, offsets[3] = {1, 0, 1}, sub[3] = {1, 3, 2};
  const int32_t perm[3] = {2, 0, 1};
  const std::vector<float> x = randomValues(24, 6);
  DeviceArray<float> dx(x), dp(24), ds(6), di(24);
  std::vector<float> cp(24), cs(6), ci(24, 0.0f);
  ASSERT_EQ(ptrain_permute_f32(x.data(), 3, dims, perm, cp.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_permute_f32(dx.get(), 3, dims, perm, dp.get()), PTRAIN_OK) << ptrain_last_error();
  expectSameBits(cp, dp.download(), "permute");
  ASSERT_EQ(ptrain_slice(x.data(), 4, 3, dims, offsets, sub, cs.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_slice(dx.get(), 4, 3, dims, offsets, sub, ds.get()), PTRAIN_OK) << ptrain_last_error();
  expectSameBits(cs, ds.download(), "slice");
  ASSERT_EQ(ptrain_cuda_zero_bytes(di.get(), 96), PTRAIN_OK);
  ASSERT_EQ(ptrain_insert_slice(cs.data(), 4, 3, sub, offsets, dims, ci.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_insert_slice(ds.get(), 4, 3, sub, offsets, dims, di.get()), PTRAIN_OK) << ptrain_last_error();
  expectSameBits(ci, di.download(), "insert_slice");
  const std::vector<int64_t> ids = {0, 5, 3, 1 << 20};
  DeviceArray<int64_t> dids(ids), dsum(4);
  DeviceArray<int32_t> d32(4);
  ASSERT_EQ(ptrain_cuda_cast_i64_i32(dids.get(), 4, d32.get()), PTRAIN_OK);
  expectEqualArrays(std::vector<int32_t>{0, 5, 3, 1 << 20}, d32.download(), "cast_i64_i32");
  ASSERT_EQ(ptrain_cuda_add_i64(dids.get(), dids.get(), 4, dsum.get()), PTRAIN_OK);
  expectEqualArrays(std::vector<int64_t>{0, 10, 6, 2 << 20}, dsum.download(), "add_i64");
}

TEST(CudaModelKernels, LayerNormSoftmaxGelu) {
  const int64_t rows = 6, cols = 40;
  const std::vector<float> x = randomValues(rows * cols, 7, 3.0f), dy = randomValues(rows * cols, 8),
                           gamma = randomValues(cols, 9), beta = randomValues(cols, 10);
  DeviceArray<float> dx(x), ddy(dy), dg(gamma), db(beta), y(rows * cols), mean(rows), rstd(rows), gx(rows * cols),
      gg(cols), gb(cols);
  std::vector<float> cy(rows * cols), cm(rows), cr(rows), cgx(rows * cols), cgg(cols), cgb(cols);
  ASSERT_EQ(ptrain_layer_norm_fwd_f32(x.data(), gamma.data(), beta.data(), rows, cols, 1e-5f, cy.data(), cm.data(),
                                      cr.data()),
            PTRAIN_OK);
  ASSERT_EQ(
      ptrain_cuda_layer_norm_fwd_f32(dx.get(), dg.get(), db.get(), rows, cols, 1e-5f, y.get(), mean.get(), rstd.get()),
      PTRAIN_OK)
      << ptrain_last_error();
  expectClose(cy, y.download(), "layer_norm y");
  expectClose(cr, rstd.download(), "layer_norm rstd");
  ASSERT_EQ(ptrain_layer_norm_bwd_f32(dy.data(), x.data(), gamma.data(), cm.data(), cr.data(), rows, cols, cgx.data(),
                                      cgg.data(), cgb.data()),
            PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_layer_norm_bwd_f32(ddy.get(), dx.get(), dg.get(), mean.get(), rstd.get(), rows, cols, gx.get(),
                                           gg.get(), gb.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  expectClose(cgx, gx.download(), "layer_norm dx");
  expectClose(cgg, gg.download(), "layer_norm dgamma");
  expectClose(cgb, gb.download(), "layer_norm dbeta");
  // Softmax over rows of 8, causal over [3, 8, 8] (rows = 24), and its backward.
  const std::vector<float> s = randomValues(192, 11, 2.0f), ds = randomValues(192, 12);
  DeviceArray<float> d_s(s), d_ds(ds), sy(192), sdx(192);
  for (int32_t causal = 0; causal < 2; ++causal) {
    std::vector<float> csy(192), csdx(192);
    ASSERT_EQ(ptrain_softmax_fwd_f32(s.data(), 24, 8, causal, csy.data()), PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_softmax_fwd_f32(d_s.get(), 24, 8, causal, sy.get()), PTRAIN_OK) << ptrain_last_error();
    expectClose(csy, sy.download(), "softmax");
    ASSERT_EQ(ptrain_softmax_bwd_f32(ds.data(), csy.data(), 24, 8, csdx.data()), PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_softmax_bwd_f32(d_ds.get(), sy.get(), 24, 8, sdx.get()), PTRAIN_OK) << ptrain_last_error();
    expectClose(csdx, sdx.download(), "softmax_bwd");
  }
  std::vector<float> c1(rows * cols), c2(rows * cols);
  ASSERT_EQ(ptrain_gelu_fwd_f32(x.data(), rows * cols, c1.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_gelu_fwd_f32(dx.get(), rows * cols, y.get()), PTRAIN_OK);
  expectClose(c1, y.download(), "gelu");
  ASSERT_EQ(ptrain_gelu_tanh_bwd_f32(dy.data(), x.data(), rows * cols, c2.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_gelu_tanh_bwd_f32(ddy.get(), dx.get(), rows * cols, y.get()), PTRAIN_OK);
  expectClose(c2, y.download(), "gelu_tanh_bwd");
}

TEST(CudaModelKernels, EmbeddingAndCrossEntropy) {
  const int64_t n = 10, vocab = 7, dim = 5;
  const std::vector<float> table = randomValues(vocab * dim, 13), dy = randomValues(n * dim, 14),
                           logits = randomValues(n * vocab, 15, 2.0f);
  const std::vector<int32_t> ids = {0, 6, 3, 3, 1, 0, 2, 6, 6, 4};
  std::vector<int32_t> targets = ids;
  targets[2] = -1; // ignored
  DeviceArray<float> dtable(table), ddy(dy), dlogits(logits), y(n * dim), dtab(vocab * dim), loss(1), lse(n),
      dl(n * vocab);
  DeviceArray<int32_t> dids(ids), dtargets(targets);
  std::vector<float> cy(n * dim), ctab(vocab * dim, 0.0f), closs(1), clse(n), cdl(n * vocab);
  ASSERT_EQ(ptrain_embedding_fwd_f32(table.data(), ids.data(), n, vocab, dim, cy.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_embedding_fwd_f32(dtable.get(), dids.get(), n, vocab, dim, y.get()), PTRAIN_OK);
  expectSameBits(cy, y.download(), "embedding");
  ASSERT_EQ(ptrain_embedding_bwd_f32(dy.data(), ids.data(), n, vocab, dim, ctab.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_zero_bytes(dtab.get(), 4 * vocab * dim), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_embedding_bwd_f32(ddy.get(), dids.get(), n, vocab, dim, dtab.get()), PTRAIN_OK);
  expectClose(ctab, dtab.download(), "embedding_bwd");
  ASSERT_EQ(ptrain_cross_entropy_fwd_f32(logits.data(), targets.data(), n, vocab, closs.data(), clse.data()),
            PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_cross_entropy_fwd_f32(dlogits.get(), dtargets.get(), n, vocab, loss.get(), lse.get()),
            PTRAIN_OK);
  expectClose(closs, loss.download(), "cross_entropy loss");
  expectClose(clse, lse.download(), "cross_entropy lse");
  DeviceArray<float> dloss(std::vector<float>{0.5f});
  ASSERT_EQ(ptrain_cross_entropy_bwd_f32(0.5f, logits.data(), targets.data(), clse.data(), n, vocab, cdl.data()),
            PTRAIN_OK);
  ASSERT_EQ(
      ptrain_cuda_cross_entropy_bwd_f32(dloss.get(), dlogits.get(), dtargets.get(), lse.get(), n, vocab, dl.get()),
      PTRAIN_OK);
  expectClose(cdl, dl.download(), "cross_entropy_bwd");
  ASSERT_EQ(ptrain_cuda_check_indices(), PTRAIN_OK) << ptrain_last_error();
  // An id outside the vocabulary: skipped by the kernel, reported once by the check, then cleared.
  DeviceArray<int32_t> bad(std::vector<int32_t>{0, 1, 9, 2, 3, 4, 5, 6, 0, 1});
  ASSERT_EQ(ptrain_cuda_embedding_fwd_f32(dtable.get(), bad.get(), n, vocab, dim, y.get()), PTRAIN_OK);
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(), "ptrain_cuda_embedding_fwd_f32: ids[2] = 9 is outside the vocabulary [0, 7)");
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_OK);
}

TEST(CudaModelKernels, WeightedCrossEntropyMatchesTheCpu) {
  // Class weights, an exact ignore_index (here -100, and 3 in another call) and both reductions, against
  // ptrain_cross_entropy_weighted_{fwd,bwd}_f32 on the same rows; then a mean over no weight is NaN on both.
  const int64_t n = 12, vocab = 7;
  const std::vector<float> logits = randomValues(n * vocab, 31, 2.0f);
  const std::vector<float> weights = {0.5f, 1.0f, 1.5f, 2.0f, 0.25f, 0.0f, 3.0f};
  const std::vector<int32_t> targets = {0, 6, -100, 3, 1, 5, 2, 6, -100, 4, 3, 1};
  DeviceArray<float> dlogits(logits), dweights(weights), loss(1), lse(n), dl(n * vocab);
  DeviceArray<int32_t> dtargets(targets);
  DeviceArray<float> dloss(std::vector<float>{0.75f});
  struct Case {
    bool weighted;
    int32_t hasIgnore;
    int64_t ignore;
    int32_t sum;
  };
  for (const Case &c : {Case{true, 1, -100, 0}, Case{true, 1, -100, 1}, Case{false, 1, -100, 0}, Case{true, 1, 3, 0}}) {
    // Without an ignore_index of -100 a -100 target is an error: ignore 3 uses targets without -100.
    std::vector<int32_t> t = targets;
    if (c.ignore != -100)
      for (int32_t &v : t)
        v = v == -100 ? 2 : v;
    DeviceArray<int32_t> dt(t);
    const float *w = c.weighted ? weights.data() : nullptr;
    std::vector<float> closs(1), clse(n), cdl(n * vocab);
    ASSERT_EQ(ptrain_cross_entropy_weighted_fwd_f32(logits.data(), t.data(), w, n, vocab, c.hasIgnore, c.ignore, c.sum,
                                                    closs.data(), clse.data()),
              PTRAIN_OK)
        << ptrain_last_error();
    ASSERT_EQ(ptrain_cuda_cross_entropy_weighted_fwd_f32(dlogits.get(), dt.get(), c.weighted ? dweights.get() : nullptr,
                                                         n, vocab, c.hasIgnore, c.ignore, c.sum, loss.get(), lse.get()),
              PTRAIN_OK)
        << ptrain_last_error();
    expectClose(closs, loss.download(), "weighted cross_entropy loss");
    expectClose(clse, lse.download(), "weighted cross_entropy lse");
    ASSERT_EQ(ptrain_cross_entropy_weighted_bwd_f32(0.75f, logits.data(), t.data(), w, clse.data(), n, vocab,
                                                    c.hasIgnore, c.ignore, c.sum, cdl.data()),
              PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_cross_entropy_weighted_bwd_f32(dloss.get(), dlogits.get(), dt.get(),
                                                         c.weighted ? dweights.get() : nullptr, lse.get(), n, vocab,
                                                         c.hasIgnore, c.ignore, c.sum, dl.get()),
              PTRAIN_OK)
        << ptrain_last_error();
    const std::vector<float> gdl = dl.download();
    expectClose(cdl, gdl, "weighted cross_entropy_bwd");
    // An ignored row has a zero gradient.
    for (int64_t i = 0; i < n; ++i) {
      if (t[i] != c.ignore)
        continue;
      for (int64_t j = 0; j < vocab; ++j) {
        EXPECT_EQ(gdl[i * vocab + j], 0.0f) << "row " << i;
      }
    }
  }
  ASSERT_EQ(ptrain_cuda_check_indices(), PTRAIN_OK) << ptrain_last_error();
  // Every row ignored: the mean is 0 / 0 = NaN, as torch and the CPU kernel give.
  DeviceArray<int32_t> none(std::vector<int32_t>(n, 4));
  ASSERT_EQ(ptrain_cuda_cross_entropy_weighted_fwd_f32(dlogits.get(), none.get(), dweights.get(), n, vocab, 1, 4, 0,
                                                       loss.get(), lse.get()),
            PTRAIN_OK);
  EXPECT_TRUE(std::isnan(loss.download()[0]));
  // A target that is neither in the vocabulary nor ignore_index: skipped, reported once by the check.
  DeviceArray<int32_t> bad(std::vector<int32_t>{0, 1, 9, 2, 3, 4, 5, 6, 0, 1, 2, 3});
  ASSERT_EQ(ptrain_cuda_cross_entropy_weighted_fwd_f32(dlogits.get(), bad.get(), dweights.get(), n, vocab, 1, -100, 0,
                                                       loss.get(), lse.get()),
            PTRAIN_OK);
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(), "ptrain_cuda_cross_entropy_weighted_fwd_f32: targets[2] = 9 is outside the "
                                    "vocabulary [0, 7) and is not ignore_index");
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_OK);
}

TEST(CudaModelKernels, AdamWWithTheScheduleOnTheDeviceStep) {
  const int64_t n = 1000;
  const std::vector<float> p = randomValues(n, 16), g = randomValues(n, 17), m = randomValues(n, 18, 0.1f);
  std::vector<float> v = randomValues(n, 19, 0.1f);
  for (float &x : v)
    x = x * x;
  // Steps in the warm-up (t = 3 of 5), at its end (t = 5) and in the cosine part (t = 40 of 100).
  for (int64_t t : {3, 5, 40}) {
    std::vector<float> cp = p, cm = m, cv = v;
    float lr = 0.0f;
    ASSERT_EQ(ptrain_lr_warmup_cosine(t <= 5 ? t - 1 : t, 5, 100, 1e-3f, 1e-4f, &lr), PTRAIN_OK);
    ASSERT_EQ(ptrain_adamw_step_f32(cp.data(), g.data(), cm.data(), cv.data(), n, t, lr, 0.9f, 0.95f, 1e-8f, 0.1f),
              PTRAIN_OK);
    DeviceArray<float> dp(p), dg(g), dm(m), dv(v), op(n), om(n), ov(n);
    DeviceArray<int64_t> step(std::vector<int64_t>{t});
    ASSERT_EQ(ptrain_cuda_adamw_step_f32(dp.get(), dg.get(), dm.get(), dv.get(), n, step.get(), 5, 100, 1e-3f, 1e-4f,
                                         0.9f, 0.95f, 1e-8f, 0.1f, op.get(), om.get(), ov.get()),
              PTRAIN_OK)
        << ptrain_last_error();
    expectSameBits(cm, om.download(), "adamw m");
    expectSameBits(cv, ov.download(), "adamw v");
    expectClose(cp, op.download(), "adamw param", 1e-7);
  }
}

TEST(CudaModelKernels, ReduceAndBroadcastTo) {
  // [2, 3, 5] reduced over axis 1 (-> [2, 1, 5]) and over axes 0, 2 (-> [1, 3, 1]); a NaN row for max.
  const int64_t dims[3] = {2, 3, 5}, to1[3] = {2, 1, 5}, to2[3] = {1, 3, 1};
  std::vector<float> x = randomValues(30, 20, 2.0f);
  x[7] = NAN; // row (0, 1): max of column 2 over axis 1 is NaN
  DeviceArray<float> dx(x);
  for (int32_t kind : {PTRAIN_REDUCE_KIND_SUM, PTRAIN_REDUCE_KIND_MEAN, PTRAIN_REDUCE_KIND_MAX})
    for (const int64_t *to : {to1, to2}) {
      const int64_t count = to[0] * to[1] * to[2];
      std::vector<float> cpu(count);
      DeviceArray<float> out(count);
      ASSERT_EQ(ptrain_reduce_f32(kind, x.data(), 3, dims, 3, to, cpu.data()), PTRAIN_OK) << ptrain_last_error();
      ASSERT_EQ(ptrain_cuda_reduce_f32(kind, dx.get(), 3, dims, 3, to, out.get()), PTRAIN_OK) << ptrain_last_error();
      // One fp64 accumulation per output rounded once: the same bits unless the summation order matters.
      if (kind == PTRAIN_REDUCE_KIND_MAX)
        expectSameBits(cpu, out.download(), "reduce max");
      else
        expectClose(cpu, out.download(), kind == PTRAIN_REDUCE_KIND_SUM ? "reduce sum" : "reduce mean", 1e-6);
    }
  // broadcast_to [3, 1] -> [2, 3, 4] (f32) and [1, 4] -> [3, 4] (i64): bit for bit.
  const int64_t bd[2] = {3, 1}, bo[3] = {2, 3, 4}, id[2] = {1, 4}, io[2] = {3, 4};
  const std::vector<float> b = randomValues(3, 21);
  std::vector<float> cb(24);
  DeviceArray<float> db(b), ob(24);
  ASSERT_EQ(ptrain_broadcast_to(b.data(), 4, 2, bd, 3, bo, cb.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_broadcast_to(db.get(), 4, 2, bd, 3, bo, ob.get()), PTRAIN_OK) << ptrain_last_error();
  expectSameBits(cb, ob.download(), "broadcast_to f32");
  const std::vector<int64_t> ib = {5, -7, 1LL << 40, 0};
  std::vector<int64_t> cib(12);
  DeviceArray<int64_t> dib(ib), oib(12);
  ASSERT_EQ(ptrain_broadcast_to(ib.data(), 8, 2, id, 2, io, cib.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_broadcast_to(dib.get(), 8, 2, id, 2, io, oib.get()), PTRAIN_OK) << ptrain_last_error();
  expectEqualArrays(cib, oib.download(), "broadcast_to i64");
}

TEST(CudaModelKernels, SoftmaxFullyMaskedRowIsZero) {
  // Rows 0 and 2 are -inf everywhere (an attention row its mask hides): 0 as on the CPU (cpu/Softmax.cpp) and in
  // onnxruntime, not NaN, forward and backward; row 1 keeps its softmax.
  const float inf = INFINITY;
  const std::vector<float> s = {-inf, -inf, -inf, -inf, 1, -inf, 2, 0, -inf, -inf, -inf, -inf};
  const std::vector<float> ds = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> cy(12), cdx(12);
  DeviceArray<float> d_s(s), d_ds(ds), y(12), dx(12);
  ASSERT_EQ(ptrain_softmax_fwd_f32(s.data(), 3, 4, 0, cy.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_softmax_fwd_f32(d_s.get(), 3, 4, 0, y.get()), PTRAIN_OK) << ptrain_last_error();
  const std::vector<float> gy = y.download();
  expectClose(cy, gy, "masked softmax");
  for (int64_t c = 0; c < 4; ++c)
    EXPECT_TRUE(gy[c] == 0.0f && gy[8 + c] == 0.0f) << "col " << c;
  ASSERT_EQ(ptrain_softmax_bwd_f32(ds.data(), cy.data(), 3, 4, cdx.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_softmax_bwd_f32(d_ds.get(), y.get(), 3, 4, dx.get()), PTRAIN_OK) << ptrain_last_error();
  const std::vector<float> gdx = dx.download();
  expectClose(cdx, gdx, "masked softmax_bwd");
  for (float v : gdx)
    EXPECT_FALSE(std::isnan(v));
}

TEST(CudaModelKernels, CastGatherLogSoftmax) {
  // Casts between f32 and i64 (truncation toward zero, rounding through fp64), exact.
  const std::vector<float> f = {-2.75f, -0.5f, 0.0f, 0.99f, 3.5f, 1e10f, -1e18f, 7.0f};
  const std::vector<int64_t> i = {-3, 0, 1, (1LL << 53) + 1, -(1LL << 40), 123456789, 16777217, 2};
  DeviceArray<float> df(f), fo(8);
  DeviceArray<int64_t> di(i), io(8);
  std::vector<int64_t> ci(8);
  std::vector<float> cf(8);
  ASSERT_EQ(ptrain_cast_elements(f.data(), PTRAIN_CAST_F32, 8, PTRAIN_CAST_I64, ci.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_cast_elements(df.get(), PTRAIN_CAST_F32, 8, PTRAIN_CAST_I64, io.get()), PTRAIN_OK)
      << ptrain_last_error();
  expectEqualArrays(ci, io.download(), "cast f32 -> i64");
  ASSERT_EQ(ptrain_cast_elements(i.data(), PTRAIN_CAST_I64, 8, PTRAIN_CAST_F32, cf.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_cast_elements(di.get(), PTRAIN_CAST_I64, 8, PTRAIN_CAST_F32, fo.get()), PTRAIN_OK)
      << ptrain_last_error();
  expectSameBits(cf, fo.download(), "cast i64 -> f32");
  ASSERT_EQ(ptrain_cuda_check_indices(), PTRAIN_OK) << ptrain_last_error();
  // Gather along the middle axis of [2, 5, 3], negative indices counting from the end; f32 and i64 data.
  const std::vector<int64_t> indices = {4, -1, 0, 2, -5};
  const std::vector<float> data = randomValues(30, 22);
  std::vector<int64_t> idata(30);
  for (int64_t k = 0; k < 30; ++k)
    idata[k] = k * 1000003 - 7;
  DeviceArray<int64_t> dind(indices), didata(idata), gi(30);
  DeviceArray<float> ddata(data), gf(30);
  std::vector<float> cg(30);
  std::vector<int64_t> cgi(30);
  ASSERT_EQ(ptrain_gather_axis(data.data(), 4, 2, 5, 3, indices.data(), 5, cg.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_gather_axis(ddata.get(), 4, 2, 5, 3, dind.get(), 5, gf.get()), PTRAIN_OK)
      << ptrain_last_error();
  expectSameBits(cg, gf.download(), "gather f32");
  ASSERT_EQ(ptrain_gather_axis(idata.data(), 8, 2, 5, 3, indices.data(), 5, cgi.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_gather_axis(didata.get(), 8, 2, 5, 3, dind.get(), 5, gi.get()), PTRAIN_OK)
      << ptrain_last_error();
  expectEqualArrays(cgi, gi.download(), "gather i64");
  // Log-softmax along the middle axis of [3, 7, 4] (fp64, rounded once).
  const std::vector<float> ls = randomValues(84, 23, 3.0f);
  std::vector<float> cls(84);
  DeviceArray<float> dls(ls), ols(84);
  ASSERT_EQ(ptrain_log_softmax_f32(ls.data(), 3, 7, 4, cls.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_log_softmax_f32(dls.get(), 3, 7, 4, ols.get()), PTRAIN_OK) << ptrain_last_error();
  expectClose(cls, ols.download(), "log_softmax", 1e-6);
  ASSERT_EQ(ptrain_cuda_check_indices(), PTRAIN_OK) << ptrain_last_error();
  // What the CPU calls refuse before writing, the kernels skip and the check reports by position.
  DeviceArray<int64_t> bad(std::vector<int64_t>{0, 5, 1, 2, 3});
  ASSERT_EQ(ptrain_cuda_gather_axis(ddata.get(), 4, 2, 5, 3, bad.get(), 5, gf.get()), PTRAIN_OK);
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(), "ptrain_cuda_gather_axis: indices[1] = 5 is out of range [-5, 5)");
  DeviceArray<float> nan(std::vector<float>{1.0f, NAN});
  ASSERT_EQ(ptrain_cuda_cast_elements(nan.get(), PTRAIN_CAST_F32, 2, PTRAIN_CAST_I64, io.get()), PTRAIN_OK);
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(), "ptrain_cuda_cast_elements: x[1] = nan does not fit in int64");
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_OK);
}

TEST(CudaModelKernels, SgdWithTheScheduleOnTheDeviceStep) {
  const int64_t n = 1000;
  const std::vector<float> p = randomValues(n, 24), g = randomValues(n, 25), b = randomValues(n, 26, 0.1f);
  for (int64_t t : {3, 5, 40})
    for (float momentum : {0.0f, 0.9f}) {
      std::vector<float> cp = p, cb = b;
      float lr = 0.0f;
      ASSERT_EQ(ptrain_lr_warmup_cosine(t <= 5 ? t - 1 : t, 5, 100, 1e-2f, 1e-3f, &lr), PTRAIN_OK);
      ASSERT_EQ(ptrain_sgd_step_f32(cp.data(), g.data(), momentum > 0 ? cb.data() : nullptr, n, lr, momentum, 0.01f),
                PTRAIN_OK);
      DeviceArray<float> dp(p), dg(g), db(b), op(n), ob(n);
      DeviceArray<int64_t> step(std::vector<int64_t>{t});
      ASSERT_EQ(ptrain_cuda_sgd_step_f32(dp.get(), dg.get(), momentum > 0 ? db.get() : nullptr, n, step.get(), 5, 100,
                                         1e-2f, 1e-3f, momentum, 0.01f, op.get(), momentum > 0 ? ob.get() : nullptr),
                PTRAIN_OK)
          << ptrain_last_error();
      expectClose(cp, op.download(), "sgd param", 1e-7);
      if (momentum > 0)
        expectClose(cb, ob.download(), "sgd momentum buffer", 1e-7);
    }
}

TEST(CudaModelKernels, GlobalNormClipping) {
  // A sum of squares over many blocks (fp64 partials), then the scale: clipped (norm > max) and not.
  const int64_t n = 300001;
  const std::vector<float> x = randomValues(n, 27);
  double cpuSum = 0.0;
  ASSERT_EQ(ptrain_sum_squares_f32(x.data(), n, &cpuSum), PTRAIN_OK);
  DeviceArray<float> dx(x), sum(1), scale(1);
  ASSERT_EQ(ptrain_cuda_sum_squares_f32(dx.get(), n, sum.get()), PTRAIN_OK) << ptrain_last_error();
  const float gpuSum = sum.download()[0];
  EXPECT_NEAR(gpuSum, static_cast<float>(cpuSum), 1e-6 * cpuSum);
  for (double maxNorm : {1.0, 1e4}) {
    ASSERT_EQ(ptrain_cuda_clip_scale_f32(sum.get(), maxNorm, scale.get()), PTRAIN_OK) << ptrain_last_error();
    // The CPU step's clip_scale (lib/Target/Cpp/EmitOptimizer.cpp) on the same float sum.
    const double s = maxNorm / (std::sqrt(static_cast<double>(gpuSum)) + 1e-6);
    const float expected = static_cast<float>(std::isnan(s) || s < 1.0 ? s : 1.0);
    EXPECT_EQ(bitsOf(scale.download()[0]), bitsOf(expected)) << "max_norm " << maxNorm;
  }
  ASSERT_EQ(ptrain_cuda_sum_squares_f32(dx.get(), 0, sum.get()), PTRAIN_OK);
  EXPECT_EQ(sum.download()[0], 0.0f);
}

TEST(CudaModelKernels, VocabParallelEmbeddingAndCrossEntropyParts) {
  // A vocabulary of 7 padded to 8 over 2 parts of 4 rows: part 1's last row is padding.
  const int64_t n = 6, rows = 4, dim = 3, vocab = 7, parts = 2;
  const std::vector<int64_t> ids = {0, 7, 3, 4, 6, 3};
  const std::vector<int32_t> ids32(ids.begin(), ids.end());
  const std::vector<int64_t> labels = {1, 6, 4, 0, 3, 5};
  const std::vector<int32_t> labels32(labels.begin(), labels.end());
  const std::vector<float> table = randomValues(rows * dim, 28), dy = randomValues(n * dim, 29),
                           logits = randomValues(n * rows, 30, 2.0f), dSum = randomValues(n, 31),
                           dTarget = randomValues(n, 32);
  std::vector<float> max(n);
  for (int64_t i = 0; i < n; ++i)
    max[i] = logits[i * rows] + 0.25f; // any per-row shift: the all-reduced max in a real step
  DeviceArray<int32_t> dids(ids32), dlabels(labels32);
  DeviceArray<float> dtable(table), ddy(dy), dlogits(logits), dmax(max), ddSum(dSum), ddTarget(dTarget), y(n * dim),
      dtab(rows * dim), sumExp(n), target(n), dl(n * rows);
  for (int64_t part = 0; part < parts; ++part) {
    std::vector<float> cy(n * dim), ctab(rows * dim), cs(n), ct(n), cdl(n * rows);
    ASSERT_EQ(ptrain_vocab_parallel_embedding_fwd_f32(table.data(), ids.data(), n, rows, dim, part, parts, cy.data()),
              PTRAIN_OK);
    ASSERT_EQ(
        ptrain_cuda_vocab_parallel_embedding_fwd_f32(dtable.get(), dids.get(), n, rows, dim, part, parts, y.get()),
        PTRAIN_OK)
        << ptrain_last_error();
    expectSameBits(cy, y.download(), "vocab-parallel embedding");
    ASSERT_EQ(ptrain_vocab_parallel_embedding_bwd_f32(dy.data(), ids.data(), n, rows, dim, part, parts, ctab.data()),
              PTRAIN_OK);
    ASSERT_EQ(
        ptrain_cuda_vocab_parallel_embedding_bwd_f32(ddy.get(), dids.get(), n, rows, dim, part, parts, dtab.get()),
        PTRAIN_OK)
        << ptrain_last_error();
    expectClose(ctab, dtab.download(), "vocab-parallel embedding_bwd");
    ASSERT_EQ(ptrain_vocab_parallel_ce_parts_fwd_f32(logits.data(), labels.data(), max.data(), n, rows, vocab, part,
                                                     parts, cs.data(), ct.data()),
              PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_vocab_parallel_ce_parts_fwd_f32(dlogits.get(), dlabels.get(), dmax.get(), n, rows, vocab,
                                                          part, parts, sumExp.get(), target.get()),
              PTRAIN_OK)
        << ptrain_last_error();
    expectClose(cs, sumExp.download(), "ce parts sum_exp");
    expectSameBits(ct, target.download(), "ce parts target");
    ASSERT_EQ(ptrain_vocab_parallel_ce_parts_bwd_f32(dSum.data(), dTarget.data(), logits.data(), labels.data(),
                                                     max.data(), n, rows, vocab, part, parts, cdl.data()),
              PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_vocab_parallel_ce_parts_bwd_f32(ddSum.get(), ddTarget.get(), dlogits.get(), dlabels.get(),
                                                          dmax.get(), n, rows, vocab, part, parts, dl.get()),
              PTRAIN_OK)
        << ptrain_last_error();
    expectClose(cdl, dl.download(), "ce parts dlogits", 1e-6);
  }
  ASSERT_EQ(ptrain_cuda_check_indices(), PTRAIN_OK) << ptrain_last_error();
  // An id past the padded vocabulary and a label past the real one: skipped, reported by position.
  DeviceArray<int32_t> badIds(std::vector<int32_t>{0, 1, 2, 8, 3, 4});
  ASSERT_EQ(ptrain_cuda_vocab_parallel_embedding_fwd_f32(dtable.get(), badIds.get(), n, rows, dim, 0, parts, y.get()),
            PTRAIN_OK);
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(),
               "ptrain_cuda_vocab_parallel_embedding_fwd_f32: ids[3] = 8 is outside the vocabulary [0, 8)");
  DeviceArray<int32_t> badLabels(std::vector<int32_t>{0, 1, 2, 3, 7, 4});
  ASSERT_EQ(ptrain_cuda_vocab_parallel_ce_parts_fwd_f32(dlogits.get(), badLabels.get(), dmax.get(), n, rows, vocab, 1,
                                                        parts, sumExp.get(), target.get()),
            PTRAIN_OK);
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(),
               "ptrain_cuda_vocab_parallel_ce_parts_fwd_f32: labels[4] = 7 is outside the vocabulary [0, 7)");
  EXPECT_EQ(ptrain_cuda_check_indices(), PTRAIN_OK);
}

} // namespace

PTRAIN_CUDA_TEST_MAIN()
