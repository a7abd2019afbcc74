//===- Blas.h - The CUDA runtime's cuBLAS handle and error check -*- C++ -*-===//
//
// One cuBLAS handle per thread, bound to the thread's current stream
// (ptrain_cuda_set_stream), shared by the GEMM of the model (Gemm.cpp) and
// PowerSGD (PowerSGD.cu). A cuBLAS failure is PTRAIN_ERROR_DEVICE naming the
// call, the cuBLAS function and cublasGetStatusString.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CUDA_BLAS_H
#define PTRAIN_RUNTIME_CUDA_BLAS_H

#include "cuda/Device.h"

#include <cublas_v2.h>

namespace ptrain::cuda {

/// PTRAIN_OK, or a DEVICE error "<call>: <what>: <cublasGetStatusString>".
ptrain_status_t checkBlas(const char *call, cublasStatus_t st, const char *what);

/// This thread's cuBLAS handle, bound to the current stream.
ptrain_status_t blasHandle(const char *call, cublasHandle_t *out);

} // namespace ptrain::cuda

#define PTRAIN_BLAS_TRY(expr) PTRAIN_CUDA_RETURN_IF_ERROR(::ptrain::cuda::checkBlas(__func__, (expr), #expr))

#endif // PTRAIN_RUNTIME_CUDA_BLAS_H
