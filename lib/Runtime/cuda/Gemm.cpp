//===- Gemm.cpp - ptrain_gemm_f32 on the GPU through cuBLAS ----------------===//
//
// ptrain_cuda_gemm_f32 takes ptrain_gemm_f32's parameters (row-major C = alpha
// op(A) op(B) + beta C over a batch with per-operand strides; stride 0
// broadcasts an operand) with device pointers. A row-major product is the
// column-major C^T = op(B)^T op(A)^T, so cuBLAS sees B first:
// cublasGemmStridedBatchedEx(opB, opA, n, m, k, B, A, C) with fp32 data and
// CUBLAS_COMPUTE_32F (no TF32), so it differs from the CPU's only by the
// summation order.
//
//===----------------------------------------------------------------------===//

#include "cuda/Blas.h"

#include <climits>

using namespace ptrain::cuda;

extern "C" ptrain_status_t ptrain_cuda_gemm_f32(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m, int64_t n,
                                                int64_t k, float alpha, const float *a, int64_t stride_a,
                                                const float *b, int64_t stride_b, float beta, float *c,
                                                int64_t stride_c) {
  PTRAIN_CUDA_CHECK_SIZE(batch);
  PTRAIN_CUDA_CHECK_SIZE(m);
  PTRAIN_CUDA_CHECK_SIZE(n);
  PTRAIN_CUDA_CHECK_SIZE(k);
  PTRAIN_CUDA_CHECK_ARG(stride_a >= 0 && stride_b >= 0 && stride_c >= 0, "strides must be >= 0");
  PTRAIN_CUDA_CHECK_ARG(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && batch <= INT_MAX,
                        "m, n, k and batch must fit cuBLAS's int, got %lld, %lld, %lld, %lld",
                        static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                        static_cast<long long>(batch));
  if (batch == 0 || m == 0 || n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(a);
  PTRAIN_CUDA_CHECK_PTR(b);
  PTRAIN_CUDA_CHECK_PTR(c);
  cublasHandle_t h;
  PTRAIN_CUDA_RETURN_IF_ERROR(blasHandle(__func__, &h));
  const int lda = static_cast<int>(trans_a ? m : k), ldb = static_cast<int>(trans_b ? k : n);
  PTRAIN_BLAS_TRY(
      cublasGemmStridedBatchedEx(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b, CUDA_R_32F,
                                 ldb, stride_b, a, CUDA_R_32F, lda, stride_a, &beta, c, CUDA_R_32F, static_cast<int>(n),
                                 stride_c, static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return PTRAIN_OK;
}
