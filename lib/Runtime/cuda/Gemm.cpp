//===- Gemm.cpp - ptrain_gemm_f32 / _bf16 / _f16 on the GPU through cuBLAS -===//
//
// ptrain_cuda_gemm_f32 takes ptrain_gemm_f32's parameters (row-major C = alpha
// op(A) op(B) + beta C over a batch with per-operand strides; stride 0
// broadcasts an operand) with device pointers. A row-major product is the
// column-major C^T = op(B)^T op(A)^T, so cuBLAS sees B first:
// cublasGemmStridedBatchedEx(opB, opA, n, m, k, B, A, C) with fp32 data and
// CUBLAS_COMPUTE_32F (no TF32), so it differs from the CPU's only by the
// summation order.
//
// ptrain_cuda_gemm_bf16 takes ptrain_gemm_bf16's (bf16 A and B as uint16_t bit
// patterns, fp32 C): the same call with CUDA_R_16BF operands, an fp32 result and
// CUBLAS_COMPUTE_32F, i.e. the tensor cores' bf16 products accumulated in fp32
// (--precision bf16, docs/MixedPrecision.md; Micikevicius et al., ICLR 2018,
// sec. 3.3). The products of two bf16 values are exact in fp32, so it differs
// from the CPU's VDPBF16PS definition only by the summation order.
// ptrain_cuda_gemm_f16 is the same with CUDA_R_16F (IEEE binary16) operands
// (--precision fp16): the products are exact in fp32 too, so it differs from
// the CPU's ptrain_gemm_f16 only by the summation order.
//
//===----------------------------------------------------------------------===//

#include "cuda/Blas.h"

#include <climits>

using namespace ptrain::cuda;

namespace {

/// Row-major C = alpha op(A) op(B) + beta C over a batch, A and B of the cuBLAS data type `ab` (fp32, bf16, f16), C
/// fp32, fp32 compute; the checks and errors of both entry points, named by `name`.
ptrain_status_t gemm(const char *name, cudaDataType_t ab, int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m,
                     int64_t n, int64_t k, float alpha, const void *a, int64_t stride_a, const void *b,
                     int64_t stride_b, float beta, float *c, int64_t stride_c) {
  PTRAIN_CUDA_CHECK_SIZE_IN(name, batch);
  PTRAIN_CUDA_CHECK_SIZE_IN(name, m);
  PTRAIN_CUDA_CHECK_SIZE_IN(name, n);
  PTRAIN_CUDA_CHECK_SIZE_IN(name, k);
  PTRAIN_CUDA_CHECK_ARG_IN(name, stride_a >= 0 && stride_b >= 0 && stride_c >= 0, "strides must be >= 0");
  PTRAIN_CUDA_CHECK_ARG_IN(name, m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && batch <= INT_MAX,
                           "m, n, k and batch must fit cuBLAS's int, got %lld, %lld, %lld, %lld",
                           static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                           static_cast<long long>(batch));
  if (batch == 0 || m == 0 || n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR_IN(name, a);
  PTRAIN_CUDA_CHECK_PTR_IN(name, b);
  PTRAIN_CUDA_CHECK_PTR_IN(name, c);
  cublasHandle_t h;
  PTRAIN_CUDA_RETURN_IF_ERROR(blasHandle(name, &h));
  const int lda = static_cast<int>(trans_a ? m : k), ldb = static_cast<int>(trans_b ? k : n);
  PTRAIN_CUDA_RETURN_IF_ERROR(checkBlas(
      name,
      cublasGemmStridedBatchedEx(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b, ab, ldb,
                                 stride_b, a, ab, lda, stride_a, &beta, c, CUDA_R_32F, static_cast<int>(n), stride_c,
                                 static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx"));
  return PTRAIN_OK;
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_gemm_f32(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m, int64_t n,
                                                int64_t k, float alpha, const float *a, int64_t stride_a,
                                                const float *b, int64_t stride_b, float beta, float *c,
                                                int64_t stride_c) {
  return gemm(__func__, CUDA_R_32F, trans_a, trans_b, batch, m, n, k, alpha, a, stride_a, b, stride_b, beta, c,
              stride_c);
}

extern "C" ptrain_status_t ptrain_cuda_gemm_bf16(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m, int64_t n,
                                                 int64_t k, float alpha, const uint16_t *a, int64_t stride_a,
                                                 const uint16_t *b, int64_t stride_b, float beta, float *c,
                                                 int64_t stride_c) {
  return gemm(__func__, CUDA_R_16BF, trans_a, trans_b, batch, m, n, k, alpha, a, stride_a, b, stride_b, beta, c,
              stride_c);
}

extern "C" ptrain_status_t ptrain_cuda_gemm_f16(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m, int64_t n,
                                                int64_t k, float alpha, const uint16_t *a, int64_t stride_a,
                                                const uint16_t *b, int64_t stride_b, float beta, float *c,
                                                int64_t stride_c) {
  return gemm(__func__, CUDA_R_16F, trans_a, trans_b, batch, m, n, k, alpha, a, stride_a, b, stride_b, beta, c,
              stride_c);
}
