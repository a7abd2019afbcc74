//===- CudaTransformerKernelTest.cpp - Mask and LLaMA-style GPU kernels ---===//
//
// Part of runtime-cuda-model-kernels (skipped, 77, without a device): the
// kernels of cuda/ModelMask.cu and cuda/ModelTransformer.cu against their CPU
// calls on the same inputs. Comparisons, logical ops, select, rotary
// embedding and dropout bit for bit (the same arithmetic; dropout draws the
// CPU's counter-based mask, common/DropoutMask.h); RMS norm within 1e-6
// relative (its fp64 sum of squares is a tree sum on the GPU).
//
//===----------------------------------------------------------------------===//

#include "CudaTest.h"

#include <cmath>

namespace {
using namespace ptrain::testing;

TEST(CudaTransformerKernels, CompareLogicalSelectAreExact) {
  const int64_t ad[2] = {3, 8}, bd[1] = {8}, od[2] = {3, 8};
  std::vector<float> a = randomValues(24, 11), b = randomValues(8, 12);
  a[5] = b[5]; // an equal pair
  a[7] = NAN;  // NaN compares false
  std::vector<int64_t> ia(24), ib(8);
  for (int64_t i = 0; i < 24; ++i)
    ia[i] = (i * 7) % 5 - 2;
  for (int64_t i = 0; i < 8; ++i)
    ib[i] = i % 3 - 1;
  DeviceArray<float> da(a), db(b);
  DeviceArray<int64_t> dia(ia), dib(ib);
  std::vector<uint8_t> masks[2];
  for (int32_t kind = PTRAIN_COMPARE_EQ; kind <= PTRAIN_COMPARE_GE; ++kind) {
    std::vector<uint8_t> cpu(24), cpuI(24);
    DeviceArray<uint8_t> out(24), outI(24);
    ASSERT_EQ(ptrain_compare_f32(kind, a.data(), 2, ad, b.data(), 1, bd, 2, od, cpu.data()), PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_compare_f32(kind, da.get(), 2, ad, db.get(), 1, bd, 2, od, out.get()), PTRAIN_OK)
        << ptrain_last_error();
    expectEqualArrays(cpu, out.download(), "compare_f32");
    ASSERT_EQ(ptrain_compare_i64(kind, ia.data(), 2, ad, ib.data(), 1, bd, 2, od, cpuI.data()), PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_compare_i64(kind, dia.get(), 2, ad, dib.get(), 1, bd, 2, od, outI.get()), PTRAIN_OK)
        << ptrain_last_error();
    expectEqualArrays(cpuI, outI.download(), "compare_i64");
    if (kind == PTRAIN_COMPARE_LT)
      masks[0] = cpu;
    if (kind == PTRAIN_COMPARE_GE)
      masks[1] = cpuI;
  }
  // Logical ops on masks, one broadcast from a row; the comparison kinds on masks too.
  const int64_t rowDims[1] = {8};
  const std::vector<uint8_t> row(masks[1].begin(), masks[1].begin() + 8);
  DeviceArray<uint8_t> dm(masks[0]), drow(row);
  for (int32_t kind = PTRAIN_COMPARE_EQ; kind <= PTRAIN_COMPARE_XOR; ++kind) {
    std::vector<uint8_t> cpu(24);
    DeviceArray<uint8_t> out(24);
    ASSERT_EQ(ptrain_logical_u8(kind, masks[0].data(), 2, od, row.data(), 1, rowDims, 2, od, cpu.data()), PTRAIN_OK);
    ASSERT_EQ(ptrain_cuda_logical_u8(kind, dm.get(), 2, od, drow.get(), 1, rowDims, 2, od, out.get()), PTRAIN_OK)
        << ptrain_last_error();
    expectEqualArrays(cpu, out.download(), "logical_u8");
  }
  // Select of f32 (a scalar other side), i64 and bytes, the condition broadcast from [1, 8] over [3, 8].
  const int64_t cd[2] = {1, 8};
  const float ninf = -3.4e38f;
  const std::vector<float> scalar = {ninf};
  DeviceArray<float> dscalar(scalar);
  std::vector<float> cpuF(24);
  DeviceArray<float> outF(24);
  ASSERT_EQ(ptrain_select(row.data(), 2, cd, a.data(), 2, ad, scalar.data(), 0, nullptr, 4, 2, od, cpuF.data()),
            PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_select(drow.get(), 2, cd, da.get(), 2, ad, dscalar.get(), 0, nullptr, 4, 2, od, outF.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  expectSameBits(cpuF, outF.download(), "select f32");
  std::vector<int64_t> cpuI(24);
  DeviceArray<int64_t> outI(24);
  ASSERT_EQ(ptrain_select(row.data(), 2, cd, ia.data(), 2, ad, ib.data(), 1, bd, 8, 2, od, cpuI.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_select(drow.get(), 2, cd, dia.get(), 2, ad, dib.get(), 1, bd, 8, 2, od, outI.get()), PTRAIN_OK)
      << ptrain_last_error();
  expectEqualArrays(cpuI, outI.download(), "select i64");
  std::vector<uint8_t> cpuB(24);
  DeviceArray<uint8_t> outB(24);
  ASSERT_EQ(ptrain_select(row.data(), 2, cd, masks[0].data(), 2, od, row.data(), 1, rowDims, 1, 2, od, cpuB.data()),
            PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_select(drow.get(), 2, cd, dm.get(), 2, od, drow.get(), 1, rowDims, 1, 2, od, outB.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  expectEqualArrays(cpuB, outB.download(), "select bytes");
}

TEST(CudaTransformerKernels, RmsNormWithinOneInAMillion) {
  // 300 columns: more than one thread block's 256 threads per row; 5 rows.
  const int64_t rows = 5, cols = 300;
  const std::vector<float> x = randomValues(rows * cols, 21, 3.0f), scale = randomValues(cols, 22);
  std::vector<float> cpu(rows * cols);
  DeviceArray<float> dx(x), dscale(scale), out(rows * cols);
  ASSERT_EQ(ptrain_rms_norm_fwd_f32(x.data(), scale.data(), rows, cols, 1e-6, cpu.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_rms_norm_fwd_f32(dx.get(), dscale.get(), rows, cols, 1e-6, out.get()), PTRAIN_OK)
      << ptrain_last_error();
  const std::vector<float> gpu = out.download();
  double worst = 0.0;
  for (int64_t i = 0; i < rows * cols; ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(cpu[i]) - gpu[i]) / std::max(1e-30, std::fabs(1.0 * cpu[i])));
  EXPECT_LE(worst, 1e-6) << "rms_norm: worst relative error per element";
}

TEST(CudaTransformerKernels, RotaryEmbeddingIsExact) {
  const int64_t batch = 2, heads = 3, seq = 5, headDim = 16, n = batch * heads * seq * headDim;
  const std::vector<float> x = randomValues(n, 31);
  for (int32_t interleaved = 0; interleaved < 2; ++interleaved)
    for (int64_t rotary : {int64_t{16}, int64_t{8}}) {
      const int64_t table = batch * seq * rotary / 2;
      const std::vector<float> cos = randomValues(table, 32), sin = randomValues(table, 33);
      std::vector<float> cpu(n);
      DeviceArray<float> dx(x), dcos(cos), dsin(sin), out(n);
      ASSERT_EQ(ptrain_rotary_embedding_f32(x.data(), cos.data(), sin.data(), batch, heads, seq, headDim, rotary,
                                            interleaved, cpu.data()),
                PTRAIN_OK);
      ASSERT_EQ(ptrain_cuda_rotary_embedding_f32(dx.get(), dcos.get(), dsin.get(), batch, heads, seq, headDim, rotary,
                                                 interleaved, out.get()),
                PTRAIN_OK)
          << ptrain_last_error();
      expectSameBits(cpu, out.download(), interleaved ? "rotary interleaved" : "rotary half-split");
    }
}

TEST(CudaTransformerKernels, DropoutDrawsTheCpuMask) {
  // [4, 6, 10] locally: plain (the whole tensor), sharded on dim 1 (part 1 of 3), and a row-packed counter
  // (step 5, first row 2, rows offset by a replica's 4) on the sharded layout.
  const int64_t n = 4 * 6 * 10, rowElems = 6 * 10 * 3;
  const std::vector<float> x = randomValues(n, 41);
  DeviceArray<float> dx(x);
  struct Case {
    const char *what;
    int64_t counter, mid, inner, part, parts, rowOffset, rowElems;
  } cases[] = {{"plain", 12345, 0, 1, 0, 1, 0, 0},
               {"sharded", 12345, 6, 10, 1, 3, 0, 0},
               {"row-packed", (int64_t{2} << 32) + 5, 6, 10, 1, 3, 4, rowElems}};
  for (const Case &c : cases) {
    for (double ratio : {0.0, 0.1, 0.5}) {
      const int64_t step = c.rowElems ? (c.counter & 0xFFFFFFFFLL) : c.counter;
      const int64_t base = c.rowElems ? ((c.counter >> 32) + c.rowOffset) * c.rowElems : 0;
      std::vector<float> cpu(n);
      ASSERT_EQ(
          ptrain_dropout_global_f32(x.data(), n, ratio, -7, step, c.mid, c.inner, c.part, c.parts, base, cpu.data()),
          PTRAIN_OK);
      DeviceArray<int64_t> counter(std::vector<int64_t>{c.counter});
      DeviceArray<float> out(n);
      ASSERT_EQ(ptrain_cuda_dropout_f32(dx.get(), n, ratio, -7, counter.get(), c.mid, c.inner, c.part, c.parts,
                                        c.rowOffset, c.rowElems, out.get()),
                PTRAIN_OK)
          << ptrain_last_error();
      const std::vector<float> gpu = out.download();
      expectSameBits(cpu, gpu, c.what);
      int64_t dropped = 0;
      for (float v : gpu)
        dropped += v == 0.0f;
      if (ratio == 0.0) {
        EXPECT_EQ(dropped, 0) << c.what;
      } else if (ratio == 0.5) {
        EXPECT_GT(dropped, n / 4) << c.what; // a mask, not the identity
      }
    }
  }
}

} // namespace
