//===- GemmBf16.cpp - bf16 GEMM with fp32 accumulation, and the bf16 casts ===//
//
// ptrain_gemm_bf16: C_p = alpha op(A_p) op(B_p) + beta C_p with A, B in bf16
// and C in fp32, the arguments of ptrain_gemm_f32. Each C element is one fp32
// accumulator that starts at +0 and takes the k products in pairs, as
// VDPBF16PS does (cpu/Bf16Dot.h): for p = 0, 1, ..., ceil(k/2) - 1,
//   acc = fma(a[2p+1], b[2p+1], acc); acc = fma(a[2p], b[2p], acc)
// with DAZ inputs, FTZ results and a zero pair element past an odd k; then
// C = alpha * acc (+ beta * C unless beta = 0), both rounded in fp32, and a NaN
// is written as 0x7fc00000. The avx512bf16 path runs the instruction (6 x 64
// register blocks); every other path runs bf16DotStep on the same packed
// operands, so the two give the same bits (GemmBf16Test).
//
// Operands are packed once per call: op(A) as [m][ceil(k/2)] bf16 pairs, op(B)
// as panels of 64 columns of [ceil(k/2)][64] pairs (zero-padded), which is the
// layout VDPBF16PS reads. One thread; the packing is allocated with allocArray.
//
//===----------------------------------------------------------------------===//

#include "cpu/Bf16Dot.h"
#include "cpu/CastArray.h"
#include "cpu/CpuIsa.h"
#include "cpu/GemmArgs.h"
#include "cpu/codecs/Cast.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <memory>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PTRAIN_HAVE_AVX512BF16_KERNEL 1
#endif

using namespace ptrain::runtime;

namespace {

constexpr int64_t kPanel = 64; // columns per B panel: four 16-lane vectors
constexpr int kRows = 6;       // rows per register block: 6 x 4 accumulators

/// The packed operands of one batch entry.
struct Packed {
  int64_t m, n, pairs;
  const uint32_t *a; // [m][pairs]: element 2p in the low half, 2p+1 in the high half
  const uint32_t *b; // [ceil(n/64)][pairs][64]
};

uint32_t pairOf(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(bf16Daz(lo)) | static_cast<uint32_t>(bf16Daz(hi)) << 16;
}

/// op(A) [m, k] (A stored [k, m] when transposed) into [m][pairs].
void packA(const uint16_t *a, bool trans, int64_t m, int64_t k, int64_t pairs, uint32_t *out) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t k0 = 2 * p, k1 = 2 * p + 1;
      const uint16_t lo = trans ? a[k0 * m + i] : a[i * k + k0];
      const uint16_t hi = k1 < k ? (trans ? a[k1 * m + i] : a[i * k + k1]) : 0;
      out[i * pairs + p] = pairOf(lo, hi);
    }
}

/// op(B) [k, n] (B stored [n, k] when transposed) into 64-column panels.
void packB(const uint16_t *b, bool trans, int64_t k, int64_t n, int64_t pairs, uint32_t *out) {
  for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
    uint32_t *panel = out + (j0 / kPanel) * pairs * kPanel;
    for (int64_t p = 0; p < pairs; ++p)
      for (int64_t jj = 0; jj < kPanel; ++jj) {
        const int64_t j = j0 + jj, k0 = 2 * p, k1 = 2 * p + 1;
        uint32_t v = 0;
        if (j < n) {
          const uint16_t lo = trans ? b[j * k + k0] : b[k0 * n + j];
          const uint16_t hi = k1 < k ? (trans ? b[j * k + k1] : b[k1 * n + j]) : 0;
          v = pairOf(lo, hi);
        }
        panel[p * kPanel + jj] = v;
      }
  }
}

/// C's row segment from the accumulators (shared by both paths, so the epilogue's rounding is the same).
inline void storeRow(const float *acc, int64_t cols, float alpha, float beta, float *c) {
  for (int64_t j = 0; j < cols; ++j) {
    float v = alpha * acc[j];
    if (beta != 0.0f) {
      const float old = beta * c[j];
      v = v + old;
    }
    if (v != v)
      v = bitsFloat(kCanonicalNanBits);
    c[j] = v;
  }
}

/// The emulation: bf16DotStep over the packed operands, the instruction's order. One pair for a whole panel row
/// at a time: the fused multiply-adds and the flush of results below 2^-126 as selects, which the avx2 and avx512
/// clones vectorize; a result of exactly 2^-126 (its flush depends on the exact sum, bf16DotStep) makes the pair be
/// redone from the saved accumulators with bf16DotStep itself.
PTRAIN_KERNEL_BODY ptrain_status_t emulatedBody(const Packed *pk, float alpha, float beta, float *c) {
  float acc[kPanel], prev[kPanel];
  for (int64_t j0 = 0; j0 < pk->n; j0 += kPanel) {
    const uint32_t *panel = pk->b + (j0 / kPanel) * pk->pairs * kPanel;
    const int64_t cols = std::min(kPanel, pk->n - j0);
    for (int64_t i = 0; i < pk->m; ++i) {
      std::fill(acc, acc + kPanel, 0.0f);
      const uint32_t *ai = pk->a + i * pk->pairs;
      for (int64_t p = 0; p < pk->pairs; ++p) {
        const float aLo = bitsFloat(ai[p] << 16), aHi = bitsFloat(ai[p] & 0xffff0000u);
        const uint32_t *bp = panel + p * kPanel;
        std::copy(acc, acc + kPanel, prev);
        int edge = 0;
        for (int64_t jj = 0; jj < kPanel; ++jj) { // the panel's zero padding included: a fixed trip count
          const float hi = std::fmaf(aHi, bitsFloat(bp[jj] & 0xffff0000u), acc[jj]);
          edge |= std::fabs(hi) == FLT_MIN;
          const float hiFlushed = std::fabs(hi) < FLT_MIN ? std::copysign(0.0f, hi) : hi;
          const float lo = std::fmaf(aLo, bitsFloat(bp[jj] << 16), hiFlushed);
          edge |= std::fabs(lo) == FLT_MIN;
          acc[jj] = std::fabs(lo) < FLT_MIN ? std::copysign(0.0f, lo) : lo;
        }
        if (edge)
          for (int64_t jj = 0; jj < kPanel; ++jj)
            acc[jj] = bf16DotStep(bf16DotStep(prev[jj], aHi, bitsFloat(bp[jj] & 0xffff0000u)), aLo,
                                  bitsFloat(bp[jj] << 16));
      }
      storeRow(acc, cols, alpha, beta, c + i * pk->n + j0);
    }
  }
  return PTRAIN_OK;
}

#ifdef PTRAIN_HAVE_AVX512BF16_KERNEL
/// Rows [i0, i0 + Rows) of one panel with VDPBF16PS: Rows x 4 accumulators of 16 lanes.
template <int Rows>
PTRAIN_TARGET_AVX512BF16 void hardwareBlock(const Packed *pk, const uint32_t *panel, int64_t i0, int64_t cols,
                                            float alpha, float beta, float *c) {
  __m512 acc[Rows][4];
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < 4; ++v)
      acc[r][v] = _mm512_setzero_ps();
  const uint32_t *a = pk->a + i0 * pk->pairs;
  for (int64_t p = 0; p < pk->pairs; ++p) {
    const uint32_t *bp = panel + p * kPanel;
    __m512bh b[4];
    for (int v = 0; v < 4; ++v)
      b[v] = (__m512bh)_mm512_loadu_si512(bp + 16 * v);
    for (int r = 0; r < Rows; ++r) {
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r * pk->pairs + p]));
      for (int v = 0; v < 4; ++v)
        acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, b[v]);
    }
  }
  alignas(64) float row[kPanel];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < 4; ++v)
      _mm512_store_ps(row + 16 * v, acc[r][v]);
    storeRow(row, cols, alpha, beta, c + (i0 + r) * pk->n);
  }
}

PTRAIN_TARGET_AVX512BF16 ptrain_status_t hardwareGemm(const Packed *pk, float alpha, float beta, float *c) {
  for (int64_t j0 = 0; j0 < pk->n; j0 += kPanel) {
    const uint32_t *panel = pk->b + (j0 / kPanel) * pk->pairs * kPanel;
    const int64_t cols = std::min(kPanel, pk->n - j0);
    int64_t i = 0;
    for (; i + kRows <= pk->m; i += kRows)
      hardwareBlock<kRows>(pk, panel, i, cols, alpha, beta, c + j0);
    // The last m % 6 rows: one instance per count.
    using Block = void (*)(const Packed *, const uint32_t *, int64_t, int64_t, float, float, float *);
    static constexpr Block kTail[kRows] = {nullptr,           hardwareBlock<1>, hardwareBlock<2>,
                                           hardwareBlock<3>, hardwareBlock<4>, hardwareBlock<5>};
    if (i < pk->m)
      kTail[pk->m - i](pk, panel, i, cols, alpha, beta, c + j0);
  }
  return PTRAIN_OK;
}
#endif

} // namespace

extern "C" ptrain_status_t ptrain_gemm_bf16(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m, int64_t n,
                                            int64_t k, float alpha, const uint16_t *a, int64_t stride_a,
                                            const uint16_t *b, int64_t stride_b, float beta, float *c,
                                            int64_t stride_c) {
  bool empty = false;
  PTRAIN_RETURN_IF_ERROR(checkGemmArgs(__func__, batch, m, n, k, a, stride_a, b, stride_b, c, stride_c, empty));
  CpuIsa isa = CpuIsa::Baseline;
  PTRAIN_RETURN_IF_ERROR(selectedCpuIsa(__func__, isa));
  if (empty)
    return PTRAIN_OK;
  const int64_t pairs = (k + 1) / 2, panels = (n + kPanel - 1) / kPanel;
  std::unique_ptr<uint32_t[], FreeDeleter> packedA(allocArray<uint32_t>(m * pairs)),
      packedB(allocArray<uint32_t>(panels * pairs * kPanel));
  if (!packedA || !packedB)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate %lld bytes of packed operands",
                static_cast<long long>((m + panels * kPanel) * pairs * 4));
  Packed pk{m, n, pairs, packedA.get(), packedB.get()};
  for (int64_t p = 0; p < batch; ++p) {
    if (k > 0) {
      packA(a + p * stride_a, trans_a != 0, m, k, pairs, packedA.get());
      if (p == 0 || stride_b != 0)
        packB(b + p * stride_b, trans_b != 0, k, n, pairs, packedB.get());
    }
    float *cp = c + p * stride_c;
#ifdef PTRAIN_HAVE_AVX512BF16_KERNEL
    if (isa == CpuIsa::Avx512Bf16) {
      hardwareGemm(&pk, alpha, beta, cp);
      continue;
    }
#endif
    PTRAIN_RETURN_IF_ERROR(IsaClones<emulatedBody>::call(__func__, &pk, alpha, beta, cp));
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cast_f32_bf16(const float *x, int64_t n, uint16_t *out) {
  return castArray<float, uint16_t, floatToBf16>(__func__, x, n, out);
}

extern "C" ptrain_status_t ptrain_cast_bf16_f32(const uint16_t *x, int64_t n, float *out) {
  return castArray<uint16_t, float, bf16ToFloat>(__func__, x, n, out);
}
