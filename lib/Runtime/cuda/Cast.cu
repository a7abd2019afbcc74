//===- Cast.cu - fp16 / bf16 cast codec on the GPU ------------------------===//
//
// #ptrain.cast: the integer algorithms of cpu/codecs/Cast.h, written again
// for the device (cuda/HalfBits.h) so that every code, NaN's included, equals
// the CPU's portable kernel. With error feedback, e = (g + e) - decode(code) in the
// same pass. One thread per element, grid-stride.
//
//===----------------------------------------------------------------------===//

#include "cuda/Device.h"
#include "cuda/HalfBits.h"

#include <cuda_runtime.h>

namespace {

using namespace ptrain::cuda;

template <bool Half> __device__ __forceinline__ uint16_t encodeOne(float v) {
  return Half ? floatToHalf(v) : floatToBf16(v);
}
template <bool Half> __device__ __forceinline__ float decodeOne(uint16_t c) {
  return Half ? halfToFloat(c) : bf16ToFloat(c);
}

template <bool Half>
__global__ void __launch_bounds__(ptrain::cuda::kThreads)
    castEncodeKernel(const float *__restrict__ g, float *__restrict__ residual, int64_t n,
                     uint16_t *__restrict__ code) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (residual) {
      const float v = __fadd_rn(g[i], residual[i]);
      const uint16_t c = encodeOne<Half>(v);
      code[i] = c;
      residual[i] = __fsub_rn(v, decodeOne<Half>(c));
    } else {
      code[i] = encodeOne<Half>(g[i]);
    }
  }
}

template <bool Half>
__global__ void __launch_bounds__(ptrain::cuda::kThreads)
    castDecodeKernel(const uint16_t *__restrict__ code, int64_t n, float *__restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = decodeOne<Half>(code[i]);
}

} // namespace

using namespace ptrain::cuda;

extern "C" ptrain_status_t ptrain_cuda_cast_encode_f32(const float *g, float *residual, int64_t n, ptrain_dtype_t dtype,
                                                       uint16_t *out_code) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  PTRAIN_CUDA_CHECK_ARG(dtype == PTRAIN_DTYPE_F16 || dtype == PTRAIN_DTYPE_BF16,
                        "dtype must be f16 (3) or bf16 (4), got %d", dtype);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(g);
  PTRAIN_CUDA_CHECK_PTR(out_code);
  if (dtype == PTRAIN_DTYPE_F16)
    castEncodeKernel<true><<<gridFor(n), kThreads, 0, currentStream()>>>(g, residual, n, out_code);
  else
    castEncodeKernel<false><<<gridFor(n), kThreads, 0, currentStream()>>>(g, residual, n, out_code);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_cast_decode_f32(const uint16_t *code, int64_t n, ptrain_dtype_t dtype,
                                                       float *out) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  PTRAIN_CUDA_CHECK_ARG(dtype == PTRAIN_DTYPE_F16 || dtype == PTRAIN_DTYPE_BF16,
                        "dtype must be f16 (3) or bf16 (4), got %d", dtype);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(code);
  PTRAIN_CUDA_CHECK_PTR(out);
  if (dtype == PTRAIN_DTYPE_F16)
    castDecodeKernel<true><<<gridFor(n), kThreads, 0, currentStream()>>>(code, n, out);
  else
    castDecodeKernel<false><<<gridFor(n), kThreads, 0, currentStream()>>>(code, n, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}
