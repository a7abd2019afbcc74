//===- GemmF16.cpp - fp16 GEMM with fp32 accumulation, and the fp16 casts -===//
//
// ptrain_gemm_f16: C_p = alpha op(A_p) op(B_p) + beta C_p with A, B in IEEE
// binary16 and C in fp32, the arguments of ptrain_gemm_f32
// (docs/MixedPrecision.md, "fp16"). No CPU this project runs on has an fp16
// dot-product instruction (AVX512-FP16 is Intel Sapphire Rapids only), so the
// GEMM is defined once, as a fixed-order fp32 kernel on exactly widened
// operands: each C element is one fp32 accumulator that starts at +0 and takes
// the k products in order,
//   acc = fma(a[p], b[p], acc),  p = 0, 1, ..., k - 1,
// each rounded to nearest even; then C = alpha * acc (+ beta * C unless
// beta = 0), both rounded in fp32, and a NaN is written as 0x7fc00000. A
// product of two binary16 values has at most 22 significant bits and lies in
// [2^-48, 2^32), so it is exact in fp32 and fma equals multiply-then-add: no
// contraction choice of the compiler can change the bits, and no sum of such
// products is an fp32 denormal (the nonzero ones are multiples of 2^-48), so
// there is nothing to flush. Every ISA clone (IsaClones) vectorizes the same
// per-column order, so every path gives the same bits (GemmF16Test).
// Micikevicius et al., "Mixed Precision Training" (ICLR 2018), sec. 3.3: fp16
// products accumulated in fp32.
//
// Operands are widened and packed once per call: op(A) as [m][k] fp32, op(B)
// as panels of 64 columns of [k][64] fp32 (zero-padded). One thread.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/ptrain_runtime.h"

#include "cpu/Bf16Dot.h"
#include "cpu/CastArray.h"
#include "cpu/CpuIsa.h"
#include "cpu/GemmArgs.h"
#include "cpu/codecs/Cast.h"

#include <algorithm>
#include <cmath>
#include <memory>

using namespace ptrain::runtime;

namespace {

constexpr int64_t kPanel = 64; // columns per B panel

/// The widened operands of one batch entry.
struct Widened {
  int64_t m, n, k;
  const float *a; // [m][k]
  const float *b; // [ceil(n/64)][k][64]
};

/// op(A) [m, k] (A stored [k, m] when transposed) into [m][k] fp32.
void widenA(const uint16_t *a, bool trans, int64_t m, int64_t k, float *out) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      out[i * k + p] = halfToFloat(trans ? a[p * m + i] : a[i * k + p]);
}

/// op(B) [k, n] (B stored [n, k] when transposed) into 64-column fp32 panels.
void widenB(const uint16_t *b, bool trans, int64_t k, int64_t n, float *out) {
  for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
    float *panel = out + (j0 / kPanel) * k * kPanel;
    for (int64_t p = 0; p < k; ++p)
      for (int64_t jj = 0; jj < kPanel; ++jj) {
        const int64_t j = j0 + jj;
        panel[p * kPanel + jj] = j < n ? halfToFloat(trans ? b[j * k + p] : b[p * n + j]) : 0.0f;
      }
  }
}

/// The kernel: per row of op(A) and panel of op(B), the k fused multiply-adds in order, 64 columns at a time.
PTRAIN_KERNEL_BODY ptrain_status_t f16Body(const Widened *w, float alpha, float beta, float *c) {
  float acc[kPanel];
  for (int64_t j0 = 0; j0 < w->n; j0 += kPanel) {
    const float *panel = w->b + (j0 / kPanel) * w->k * kPanel;
    const int64_t cols = std::min(kPanel, w->n - j0);
    for (int64_t i = 0; i < w->m; ++i) {
      std::fill(acc, acc + kPanel, 0.0f);
      const float *ai = w->a + i * w->k;
      for (int64_t p = 0; p < w->k; ++p) {
        const float *bp = panel + p * kPanel;
        for (int64_t jj = 0; jj < kPanel; ++jj)
          acc[jj] = std::fmaf(ai[p], bp[jj], acc[jj]);
      }
      float *ci = c + i * w->n + j0;
      for (int64_t jj = 0; jj < cols; ++jj) {
        float v = alpha * acc[jj];
        if (beta != 0.0f) {
          const float old = beta * ci[jj];
          v = v + old;
        }
        ci[jj] = v != v ? bitsFloat(kCanonicalNanBits) : v;
      }
    }
  }
  return PTRAIN_OK;
}

} // namespace

extern "C" ptrain_status_t ptrain_gemm_f16(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m, int64_t n,
                                           int64_t k, float alpha, const uint16_t *a, int64_t stride_a,
                                           const uint16_t *b, int64_t stride_b, float beta, float *c,
                                           int64_t stride_c) {
  bool empty = false;
  PTRAIN_RETURN_IF_ERROR(checkGemmArgs(__func__, batch, m, n, k, a, stride_a, b, stride_b, c, stride_c, empty));
  if (empty)
    return PTRAIN_OK;
  const int64_t panels = (n + kPanel - 1) / kPanel;
  std::unique_ptr<float[], FreeDeleter> wideA(allocArray<float>(std::max<int64_t>(m * k, 1))),
      wideB(allocArray<float>(std::max<int64_t>(panels * k * kPanel, 1)));
  if (!wideA || !wideB)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate %lld bytes of widened operands",
                static_cast<long long>((m + panels * kPanel) * k * 4));
  Widened w{m, n, k, wideA.get(), wideB.get()};
  for (int64_t p = 0; p < batch; ++p) {
    if (k > 0) {
      widenA(a + p * stride_a, trans_a != 0, m, k, wideA.get());
      if (p == 0 || stride_b != 0)
        widenB(b + p * stride_b, trans_b != 0, k, n, wideB.get());
    }
    PTRAIN_RETURN_IF_ERROR(IsaClones<f16Body>::call(__func__, &w, alpha, beta, c + p * stride_c));
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cast_f32_f16(const float *x, int64_t n, uint16_t *out) {
  return castArray<float, uint16_t, floatToHalf>(__func__, x, n, out);
}

extern "C" ptrain_status_t ptrain_cast_f16_f32(const uint16_t *x, int64_t n, float *out) {
  return castArray<uint16_t, float, halfToFloat>(__func__, x, n, out);
}
