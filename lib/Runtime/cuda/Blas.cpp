//===- Blas.cpp - The CUDA runtime's cuBLAS handle and error check --------===//

#include "cuda/Blas.h"

namespace ptrain::cuda {

ptrain_status_t checkBlas(const char *call, cublasStatus_t st, const char *what) {
  if (st == CUBLAS_STATUS_SUCCESS)
    return PTRAIN_OK;
  return fail(PTRAIN_ERROR_DEVICE, call, "%s: %s", what, cublasGetStatusString(st));
}

ptrain_status_t blasHandle(const char *call, cublasHandle_t *out) {
  thread_local cublasHandle_t handle = nullptr;
  if (!handle)
    PTRAIN_CUDA_RETURN_IF_ERROR(checkBlas(call, cublasCreate(&handle), "cublasCreate"));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkBlas(call, cublasSetStream(handle, currentStream()), "cublasSetStream"));
  *out = handle;
  return PTRAIN_OK;
}

} // namespace ptrain::cuda
