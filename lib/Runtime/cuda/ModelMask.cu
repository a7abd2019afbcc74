//===- ModelMask.cu - Comparisons, logical ops and select on the GPU ------===//
//
// The GPU versions of cpu/Broadcast.cpp's ptrain_compare_f32,
// ptrain_compare_i64, ptrain_logical_u8 and ptrain_select for steps compiled
// with --emit-cuda: the i1 masks of ptrain.compare and ptrain.select's
// condition (the bool causal mask of Hugging Face GPT-2 exports: ONNX Equal,
// Less, Not, And, Where). Same parameter lists as the CPU calls; tensors are
// device pointers, the dims arrays HOST arrays (BroadcastLayout.h). A mask has
// the CPU target's byte layout: one uint8_t per element, 0 or 1 (any non-zero
// byte reads as true). Bit for bit the CPU's: comparisons of the values
// themselves (common/CompareValues.h, the CPU kernels' definition), select a
// byte copy of the chosen element.
//
//===----------------------------------------------------------------------===//

#include "common/CompareValues.h"
#include "cuda/BroadcastLayout.h"
#include "cuda/Device.h"
#include "cuda/GridStride.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

namespace {

template <typename T>
__global__ void compareKernel(int32_t kind, const T *a, Layout la, const T *b, Layout lb, int64_t n, uint8_t *out) {
  PTRAIN_GRID_STRIDE(i, n) {
    out[i] = ptrain::runtime::compareValues(kind, a[offsetOf(la, i)], b[offsetOf(lb, i)]) ? 1 : 0;
  }
}

__global__ void logicalKernel(int32_t kind, const uint8_t *a, Layout la, const uint8_t *b, Layout lb, int64_t n,
                              uint8_t *out) {
  PTRAIN_GRID_STRIDE(i, n) {
    const bool x = a[offsetOf(la, i)] != 0, y = b[offsetOf(lb, i)] != 0;
    out[i] = kind == PTRAIN_COMPARE_AND ? (x && y) : kind == PTRAIN_COMPARE_OR ? (x || y) : (x != y);
  }
}

template <typename T>
__global__ void selectKernel(const uint8_t *cond, Layout lc, const T *a, Layout la, const T *b, Layout lb, int64_t n,
                             T *out) {
  PTRAIN_GRID_STRIDE(i, n) { out[i] = cond[offsetOf(lc, i)] ? a[offsetOf(la, i)] : b[offsetOf(lb, i)]; }
}

/// The layouts of a two-operand broadcast into out; n = |out|.
ptrain_status_t twoOperands(const char *call, int32_t a_rank, const int64_t *a_dims, int32_t b_rank,
                            const int64_t *b_dims, int32_t out_rank, const int64_t *out_dims, Layout &la, Layout &lb,
                            int64_t &n) {
  int64_t count = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(call, "a", a_rank, a_dims, count));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(call, "b", b_rank, b_dims, count));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(call, "out", out_rank, out_dims, n));
  PTRAIN_CUDA_RETURN_IF_ERROR(broadcastLayout(call, "a", a_rank, a_dims, out_rank, out_dims, la));
  return broadcastLayout(call, "b", b_rank, b_dims, out_rank, out_dims, lb);
}

template <typename T>
ptrain_status_t compareTensors(const char *call, int32_t kind, const T *a, int32_t a_rank, const int64_t *a_dims,
                               const T *b, int32_t b_rank, const int64_t *b_dims, int32_t out_rank,
                               const int64_t *out_dims, uint8_t *out) {
  if (kind < PTRAIN_COMPARE_EQ || kind > PTRAIN_COMPARE_GE)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "unknown comparison kind %d (eq, lt, le, gt, ge are 0..4)", kind);
  Layout la, lb;
  int64_t n = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(twoOperands(call, a_rank, a_dims, b_rank, b_dims, out_rank, out_dims, la, lb, n));
  if (n == 0)
    return PTRAIN_OK;
  if (!a || !b || !out)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "a, b and out must not be null");
  compareKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(kind, a, la, b, lb, n, out);
  return check(call, cudaGetLastError(), "kernel launch");
}

template <typename T>
void launchSelect(const uint8_t *cond, const Layout &lc, const void *a, const Layout &la, const void *b,
                  const Layout &lb, int64_t n, void *out) {
  selectKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(cond, lc, static_cast<const T *>(a), la,
                                                             static_cast<const T *>(b), lb, n, static_cast<T *>(out));
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_compare_f32(int32_t kind, const float *a, int32_t a_rank, const int64_t *a_dims,
                                                   const float *b, int32_t b_rank, const int64_t *b_dims,
                                                   int32_t out_rank, const int64_t *out_dims, uint8_t *out) {
  return compareTensors(__func__, kind, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out);
}

extern "C" ptrain_status_t ptrain_cuda_compare_i64(int32_t kind, const int64_t *a, int32_t a_rank,
                                                   const int64_t *a_dims, const int64_t *b, int32_t b_rank,
                                                   const int64_t *b_dims, int32_t out_rank, const int64_t *out_dims,
                                                   uint8_t *out) {
  return compareTensors(__func__, kind, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out);
}

extern "C" ptrain_status_t ptrain_cuda_logical_u8(int32_t kind, const uint8_t *a, int32_t a_rank, const int64_t *a_dims,
                                                  const uint8_t *b, int32_t b_rank, const int64_t *b_dims,
                                                  int32_t out_rank, const int64_t *out_dims, uint8_t *out) {
  if (kind >= PTRAIN_COMPARE_EQ && kind <= PTRAIN_COMPARE_GE)
    return compareTensors(__func__, kind, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out);
  PTRAIN_CUDA_CHECK_ARG(kind >= PTRAIN_COMPARE_AND && kind <= PTRAIN_COMPARE_XOR,
                        "unknown logical kind %d (and, or, xor are 5..7)", kind);
  Layout la, lb;
  int64_t n = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(twoOperands(__func__, a_rank, a_dims, b_rank, b_dims, out_rank, out_dims, la, lb, n));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(a);
  PTRAIN_CUDA_CHECK_PTR(b);
  PTRAIN_CUDA_CHECK_PTR(out);
  logicalKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(kind, a, la, b, lb, n, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_select(const uint8_t *cond, int32_t c_rank, const int64_t *c_dims, const void *a,
                                              int32_t a_rank, const int64_t *a_dims, const void *b, int32_t b_rank,
                                              const int64_t *b_dims, int64_t elem_bytes, int32_t out_rank,
                                              const int64_t *out_dims, void *out) {
  PTRAIN_CUDA_CHECK_ARG(elem_bytes == 1 || elem_bytes == 2 || elem_bytes == 4 || elem_bytes == 8,
                        "elem_bytes must be 1, 2, 4 or 8, got %lld", static_cast<long long>(elem_bytes));
  int64_t count = 0, n = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(__func__, "cond", c_rank, c_dims, count));
  Layout lc, la, lb;
  PTRAIN_CUDA_RETURN_IF_ERROR(twoOperands(__func__, a_rank, a_dims, b_rank, b_dims, out_rank, out_dims, la, lb, n));
  PTRAIN_CUDA_RETURN_IF_ERROR(broadcastLayout(__func__, "cond", c_rank, c_dims, out_rank, out_dims, lc));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(cond);
  PTRAIN_CUDA_CHECK_PTR(a);
  PTRAIN_CUDA_CHECK_PTR(b);
  PTRAIN_CUDA_CHECK_PTR(out);
  switch (elem_bytes) {
  case 1:
    launchSelect<uint8_t>(cond, lc, a, la, b, lb, n, out);
    break;
  case 2:
    launchSelect<uint16_t>(cond, lc, a, la, b, lb, n, out);
    break;
  case 4:
    launchSelect<uint32_t>(cond, lc, a, la, b, lb, n, out);
    break;
  default:
    launchSelect<uint64_t>(cond, lc, a, la, b, lb, n, out);
    break;
  }
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}
