//===- CudaModelKernelTest.cpp - The model kernels of compiled CUDA steps -===//
//
// Each ptrain_cuda_* model kernel (what --emit-cuda calls, docs/CodegenCuda.md)
// against its CPU counterpart on the same inputs: data movement, integer ops,
// embedding forward and AdamW bit for bit; the rest within 1e-5 relative to
// the largest CPU magnitude (sums in another order; GEMM through cuBLAS
// within 1e-5 too at these sizes). An id outside the vocabulary is reported
// by ptrain_cuda_check_indices by position. Skipped (77) without a device.
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

} // namespace

PTRAIN_CUDA_TEST_MAIN()
