//===- Cast.cu - fp16 / bf16 cast codec on the GPU ------------------------===//
//
// #ptrain.cast: the integer algorithms of cpu/codecs/Cast.h (F. Giesen's
// float_to_half_fast3_rtne, bfloat16 by adding 0x7fff plus the kept LSB),
// written again for the device so that every code, NaN's included, equals the
// CPU's portable kernel. With error feedback, e = (g + e) - decode(code) in the
// same pass. One thread per element, grid-stride.
//
//===----------------------------------------------------------------------===//

#include "cuda/Device.h"

#include <cuda_runtime.h>

namespace {

__device__ __forceinline__ uint16_t floatToHalf(float f) {
  uint32_t x = __float_as_uint(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint32_t out;
  if (x >= 0x47800000u) {
    out = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {
    const float sum = __fadd_rn(__uint_as_float(x), 0.5f);
    out = __float_as_uint(sum) - 0x3f000000u;
  } else {
    const uint32_t mantOdd = (x >> 13) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;
    x += mantOdd;
    out = x >> 13;
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

__device__ __forceinline__ float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  uint32_t out;
  if (em >= 0x7c00u)
    out = 0x7f800000u | ((em & 0x3ffu) << 13);
  else if (em >= 0x0400u)
    out = (em << 13) + (static_cast<uint32_t>(127 - 15) << 23);
  else
    out = __float_as_uint(__fmul_rn(static_cast<float>(em), 5.9604644775390625e-8f));
  return __uint_as_float(out | sign);
}

__device__ __forceinline__ uint16_t floatToBf16(float f) {
  const uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float bf16ToFloat(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

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
