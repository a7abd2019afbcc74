//===- ModelSelection.cu - Casts, gathers and log-softmax on the GPU ------===//
//
// The GPU versions of cpu/Selection.cpp (ptrain_cast_elements,
// ptrain_gather_axis) and cpu/LogSoftmax.cpp for steps compiled with
// --emit-cuda: ONNX Cast, Gather and LogSoftmax of the imported graphs (the
// BERT exports' attention-mask cast, for one). Same parameter lists; tensors
// are device pointers. The conversions are the CPU's: float to int64 truncates
// toward zero, int64 to float rounds to nearest through fp64, anything to a
// mask is != 0, a mask to a number 0 or 1. Log-softmax is computed in fp64 and
// rounded once, one thread per (outer, inner) line.
//
// A float that does not fit in int64 and a gather index out of range cannot
// stop a kernel: the element is written as 0, the first one is recorded
// (IndexCheck.h) and ptrain_cuda_check_indices reports it (the CPU calls
// fail before writing instead).
//
//===----------------------------------------------------------------------===//

#include "cuda/GridStride.h"
#include "cuda/Device.h"
#include "cuda/IndexCheck.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

namespace {

__device__ double loadAsDouble(const void *x, int32_t kind, int64_t i) {
  switch (kind) {
  case PTRAIN_CAST_F32:
    return static_cast<const float *>(x)[i];
  case PTRAIN_CAST_I64:
    return static_cast<double>(static_cast<const int64_t *>(x)[i]);
  default:
    return static_cast<const uint8_t *>(x)[i];
  }
}

__global__ void castKernel(const void *x, int32_t from, int64_t n, int32_t to, void *out) {
  PTRAIN_GRID_STRIDE(i, n) {
    if (to == PTRAIN_CAST_F32) {
      static_cast<float *>(out)[i] = static_cast<float>(loadAsDouble(x, from, i));
    } else if (to == PTRAIN_CAST_MASK) {
      static_cast<uint8_t *>(out)[i] = loadAsDouble(x, from, i) != 0.0; // NaN != 0 is true, as in numpy
    } else if (from == PTRAIN_CAST_I64) {
      static_cast<int64_t *>(out)[i] = static_cast<const int64_t *>(x)[i];
    } else if (from == PTRAIN_CAST_MASK) {
      static_cast<int64_t *>(out)[i] = static_cast<const uint8_t *>(x)[i];
    } else {
      const double v = static_cast<const float *>(x)[i];
      const double t = trunc(v);
      const bool fits = !isnan(t) && t < 9223372036854775808.0 && t >= -9223372036854775808.0;
      if (!fits)
        recordIndexError(kCastElements, i, 0, 0, 0, v);
      static_cast<int64_t *>(out)[i] = fits ? static_cast<int64_t>(t) : 0;
    }
  }
}

template <typename T>
__global__ void gatherAxisKernel(const T *x, int64_t outer, int64_t len, int64_t inner, const int64_t *indices,
                                 int64_t count, T *out) {
  const int64_t n = outer * count * inner;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = e % inner, j = (e / inner) % count, i = e / (inner * count);
    int64_t index = indices[j];
    if (index < -len || index >= len) {
      if (i == 0 && k == 0)
        recordIndexError(kGatherAxis, j, index, -len, len);
      out[e] = T();
      continue;
    }
    if (index < 0)
      index += len;
    out[e] = x[(i * len + index) * inner + k];
  }
}

template <typename T>
void launchGatherAxis(const void *x, int64_t outer, int64_t len, int64_t inner, const int64_t *indices, int64_t count,
                      void *out) {
  gatherAxisKernel<<<gridFor(outer * count * inner), kThreads, 0, currentStream()>>>(
      static_cast<const T *>(x), outer, len, inner, indices, count, static_cast<T *>(out));
}

__global__ void logSoftmaxKernel(const float *x, int64_t outer, int64_t len, int64_t inner, float *out) {
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < outer * inner;
       line += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t base = (line / inner) * len * inner + line % inner;
    double maxValue = -INFINITY;
    for (int64_t j = 0; j < len; ++j)
      maxValue = fmax(maxValue, static_cast<double>(x[base + j * inner]));
    double sum = 0.0;
    for (int64_t j = 0; j < len; ++j)
      sum += exp(static_cast<double>(x[base + j * inner]) - maxValue);
    const double logSum = log(sum);
    for (int64_t j = 0; j < len; ++j)
      out[base + j * inner] = static_cast<float>(static_cast<double>(x[base + j * inner]) - maxValue - logSum);
  }
}

} // namespace

ptrain_status_t ptrain::cuda::takeSelectionIndexError(IndexError &out) { return takeUnitIndexError(__func__, out); }

extern "C" ptrain_status_t ptrain_cuda_cast_elements(const void *x, int32_t from, int64_t n, int32_t to, void *out) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  const auto known = [](int32_t k) { return k == PTRAIN_CAST_F32 || k == PTRAIN_CAST_I64 || k == PTRAIN_CAST_MASK; };
  PTRAIN_CUDA_CHECK_ARG(known(from) && known(to), "element kinds %d -> %d: each must be F32 (0), I64 (1) or MASK (2)",
                        from, to);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(out);
  castKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(x, from, n, to, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_gather_axis(const void *data, int64_t elem_bytes, int64_t outer, int64_t len,
                                                   int64_t inner, const int64_t *indices, int64_t count, void *out) {
  PTRAIN_CUDA_CHECK_ARG(elem_bytes == 1 || elem_bytes == 4 || elem_bytes == 8, "elem_bytes must be 1, 4 or 8, got %lld",
                        static_cast<long long>(elem_bytes));
  PTRAIN_CUDA_CHECK_SIZE(outer);
  PTRAIN_CUDA_CHECK_SIZE(len);
  PTRAIN_CUDA_CHECK_SIZE(inner);
  PTRAIN_CUDA_CHECK_SIZE(count);
  if (outer * count * inner == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(data);
  PTRAIN_CUDA_CHECK_PTR(indices);
  PTRAIN_CUDA_CHECK_PTR(out);
  if (elem_bytes == 1)
    launchGatherAxis<uint8_t>(data, outer, len, inner, indices, count, out);
  else if (elem_bytes == 4)
    launchGatherAxis<uint32_t>(data, outer, len, inner, indices, count, out);
  else
    launchGatherAxis<uint64_t>(data, outer, len, inner, indices, count, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_log_softmax_f32(const float *x, int64_t outer, int64_t len, int64_t inner,
                                                       float *out) {
  PTRAIN_CUDA_CHECK_SIZE(outer);
  PTRAIN_CUDA_CHECK_SIZE(len);
  PTRAIN_CUDA_CHECK_SIZE(inner);
  if (outer * len * inner == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(out);
  logSoftmaxKernel<<<gridFor(outer * inner), kThreads, 0, currentStream()>>>(x, outer, len, inner, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}
