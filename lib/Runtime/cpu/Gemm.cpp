//===- Gemm.cpp - Batched fp32 GEMM through CBLAS -------------------------===//
//
// C_p = alpha op(A_p) op(B_p) + beta C_p for each batch entry p, one
// cblas_sgemm per entry (row-major), or one for the whole batch when it
// shares B and A, C are contiguous. See ptrain_runtime.h for the layout.
//
//===----------------------------------------------------------------------===//

#include "cpu/GemmArgs.h"

#include <cblas.h>
#include <climits>

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
