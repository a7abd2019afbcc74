//===- Gemm.cpp - Batched fp32 GEMM through CBLAS -------------------------===//
//
// C_p = alpha op(A_p) op(B_p) + beta C_p for each batch entry p, one
// cblas_sgemm per entry (row-major), or one for the whole batch when it
// shares B and A, C are contiguous. See ptrain_runtime.h for the layout.
// ptrain_gemm_strided_f32: the same over a two-level batch with leading
// dimensions, the attention's head split and merge read and written in place.
// ptrain_gemm_transposed_f32: the product written transposed, through scratch
// (the swapped-operand GEMM gives other bits on OpenBLAS's Haswell kernels).
//
//===----------------------------------------------------------------------===//

#include "cpu/GemmArgs.h"

#include <cblas.h>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

extern "C" ptrain_status_t
ptrain_gemm_f32(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m,
                int64_t n, int64_t k, float alpha, const float *a,
                int64_t stride_a, const float *b, int64_t stride_b, float beta,
                float *c, int64_t stride_c) {
  PTRAIN_CHECK_ARG(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX,
                   "m, n, k must fit CBLAS's int, got %lld x %lld x %lld",
                   static_cast<long long>(m), static_cast<long long>(n),
                   static_cast<long long>(k));
  bool empty = false;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkGemmArgs(__func__, batch, m, n, k, a, stride_a, b, stride_b, c,
                                                        stride_c, empty));
  if (empty)
    return PTRAIN_OK;
  // Leading dimensions of the stored (row-major) matrices.
  const int lda = static_cast<int>(trans_a ? m : k);
  const int ldb = static_cast<int>(trans_b ? k : n);
  const int ldc = static_cast<int>(n);
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  // A batch of row-major A_p against one shared B (stride_b 0: a weight
  // matrix applied to [batch, m, k] activations) is one GEMM of batch * m rows
  // when A's and C's entries follow each other.
  if (batch > 1 && k > 0 && stride_b == 0 && !trans_a && stride_a == m * k && stride_c == m * n &&
      batch * m <= INT_MAX) {
    m *= batch;
    batch = 1;
  }
  for (int64_t p = 0; p < batch; ++p) {
    float *cp = c + p * stride_c;
    if (k == 0) {
      // BLAS leaves C * beta; make beta = 0 ignore NaNs as documented.
      for (int64_t i = 0; i < m * n; ++i)
        cp[i] = beta == 0.0f ? 0.0f : beta * cp[i];
      continue;
    }
    // beta = 0: BLAS does not read C ("when BETA is supplied as zero then C
    // need not be set on input", the reference sgemm; OpenBLAS zero-fills it
    // in its beta pass), so a NaN in uninitialized memory cannot leak and C
    // is not cleared here.
    cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), alpha,
                a + p * stride_a, lda, b + p * stride_b, ldb, beta, cp, ldc);
  }
  return PTRAIN_OK;
}

namespace {
/// Whether the batch entries of C, X_pq = c + p*layout[1] + q*layout[2] with m rows of n elements ld = layout[0]
/// apart, can share an element. A sufficient test for the two layouts a strided GEMM writes: entries side by
/// side within each row (the attention's heads of [batch, seq, heads, head_dim]), or one after another.
bool entriesOverlap(int64_t outer, int64_t inner, int64_t m, int64_t n, const int64_t *layout) {
  const int64_t ld = layout[0], so = layout[1], si = layout[2];
  const int64_t extent = (m - 1) * ld + n; // the elements one entry spans
  if (inner > 1 && !(si >= n && (inner - 1) * si + n <= ld) && si < extent)
    return true; // the inner entries neither side by side within the rows nor one after another
  return outer > 1 && so < (inner - 1) * si + extent; // the outer entries one after another
}
} // namespace

extern "C" ptrain_status_t
ptrain_gemm_strided_f32(int32_t trans_a, int32_t trans_b, int64_t batch_outer, int64_t batch_inner, int64_t m,
                        int64_t n, int64_t k, float alpha, const float *a, const int64_t *a_layout,
                        const float *b, const int64_t *b_layout, float beta, float *c, const int64_t *c_layout) {
  const char *call = __func__;
  PTRAIN_CHECK_ARG(a_layout && b_layout && c_layout, "the layouts must not be null");
  PTRAIN_CHECK_ARG(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "m, n, k must fit CBLAS's int, got %lld x %lld x %lld",
                   static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k));
  const char *names[] = {"batch_outer", "batch_inner", "m", "n", "k"};
  const int64_t sizes[] = {batch_outer, batch_inner, m, n, k};
  for (int i = 0; i < 5; ++i)
    if (sizes[i] < 0)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'%s' must be >= 0, got %lld", names[i],
                                   static_cast<long long>(sizes[i]));
  if (batch_outer == 0 || batch_inner == 0 || m == 0 || n == 0)
    return PTRAIN_OK;
  // The stored matrices' row lengths: op(A) [m, k] is stored [k, m] when transposed, op(B) [k, n] as [n, k].
  const char *which[] = {"a", "b", "c"};
  const int64_t *layouts[] = {a_layout, b_layout, c_layout};
  const int64_t cols[] = {trans_a ? m : k, trans_b ? k : n, n};
  for (int i = 0; i < 3; ++i) {
    if (layouts[i][1] < 0 || layouts[i][2] < 0)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s_layout's batch strides must be >= 0",
                                   which[i]);
    if (layouts[i][0] < std::max<int64_t>(cols[i], 1) || layouts[i][0] > INT_MAX)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                   "%s_layout's leading dimension (%lld) must be in [%lld, INT_MAX]", which[i],
                                   static_cast<long long>(layouts[i][0]), static_cast<long long>(cols[i]));
  }
  if (!c)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'c' must not be null");
  if (k > 0 && (!a || !b))
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'%s' must not be null", a ? "b" : "a");
  if (entriesOverlap(batch_outer, batch_inner, m, n, c_layout))
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                 "c_layout {%lld, %lld, %lld} makes batch entries of C overlap", (long long)c_layout[0],
                                 (long long)c_layout[1], (long long)c_layout[2]);
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  for (int64_t p = 0; p < batch_outer; ++p)
    for (int64_t q = 0; q < batch_inner; ++q) {
      float *cp = c + p * c_layout[1] + q * c_layout[2];
      if (k == 0) { // BLAS leaves C * beta; beta = 0 ignores NaNs, as ptrain_gemm_f32
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            cp[i * c_layout[0] + j] = beta == 0.0f ? 0.0f : beta * cp[i * c_layout[0] + j];
        continue;
      }
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha,
                  a + p * a_layout[1] + q * a_layout[2], static_cast<int>(a_layout[0]),
                  b + p * b_layout[1] + q * b_layout[2], static_cast<int>(b_layout[0]), beta, cp,
                  static_cast<int>(c_layout[0]));
    }
  return PTRAIN_OK;
}

namespace {
/// Whether the loaded BLAS gives the GEMM with its operands swapped, (A^T B)^T = B^T A written as C^T, the bits of
/// the product's transpose: OpenBLAS's SkylakeX kernels (GemmTest's BatchSumWrittenTransposedGivesTheTransposedSumsBits,
/// kern11: every element of the GPT's and the scale test's weight-gradient shapes), not its Haswell kernels. Any
/// other BLAS or core: no (the scratch route). Looked up by name, so the runtime links against any CBLAS.
/// The longest contraction OpenBLAS sums in one pass on both kernel families (GemmFusion.h; GemmTest).
constexpr int64_t kOnePassK = 256;

bool swappedGemmKeepsBits() {
  static const bool keeps = [] {
    using CoreName = char *(*)();
    auto name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    const char *core = name ? name() : nullptr;
    return core && std::strcmp(core, "SkylakeX") == 0;
  }();
  return keeps;
}
} // namespace

extern "C" ptrain_status_t ptrain_gemm_transposed_f32(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                                                      int64_t k, float alpha, const float *a, const float *b,
                                                      float beta, float *c) {
  PTRAIN_CHECK_ARG(m >= 0 && n >= 0 && m <= INT_MAX && n <= INT_MAX, "m and n must be in [0, INT_MAX], got %lld x %lld",
                   static_cast<long long>(m), static_cast<long long>(n));
  PTRAIN_CHECK_ARG(c != nullptr || m * n == 0, "c must not be null");
  // C^T = op(B)^T op(A)^T in place, no scratch: the same bits on these kernels where the GEMM sums K in one pass
  // or ignores C (beta = 1 past K = 256 adds C to the first partial sum, not the last: GemmFusion.h).
  if (swappedGemmKeepsBits() && (beta == 0.0f || k <= kOnePassK))
    return ptrain_gemm_f32(!trans_b, !trans_a, 1, n, m, k, alpha, b, 0, a, 0, beta, c, 0);
  // The product in the roles the unfolded GEMM has (the same cblas_sgemm call: the same bits), then transposed.
  // Kept per thread between calls (a step's weight gradients reuse it); freed at the thread's exit.
  struct Scratch {
    float *data = nullptr;
    int64_t size = 0;
    ~Scratch() { std::free(data); }
  };
  thread_local Scratch scratch;
  if (scratch.size < m * n) {
    float *grown = ptrain::runtime::allocArray<float>(m * n);
    if (!grown)
      return ptrain::runtime::fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "no scratch for a %lld x %lld product",
                                   static_cast<long long>(m), static_cast<long long>(n));
    std::free(scratch.data);
    scratch.data = grown;
    scratch.size = m * n;
  }
  float *p = scratch.data;
  PTRAIN_RETURN_IF_ERROR(ptrain_gemm_f32(trans_a, trans_b, 1, m, n, k, alpha, a, 0, b, 0, 0.0f, p, 0));
  // c[j, i] = p[i, j] (+ beta c[j, i]) in 32 x 32 tiles: both matrices read and written in cache lines.
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < m; i0 += kTile)
    for (int64_t j0 = 0; j0 < n; j0 += kTile) {
      const int64_t i1 = std::min(m, i0 + kTile), j1 = std::min(n, j0 + kTile);
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = i0; i < i1; ++i)
          c[j * m + i] = beta == 0.0f ? p[i * n + j] : beta * c[j * m + i] + p[i * n + j];
    }
  return PTRAIN_OK;
}
