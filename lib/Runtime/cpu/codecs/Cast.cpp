//===- Cast.cpp - fp16 / bf16 cast codec: the C entry points --------------===//
//
// #ptrain.cast: the code is the tensor rounded to nearest even in binary16
// or bfloat16 (Cast.h); with error feedback, e = (g + e) - decode(code) in the
// same pass.
//
//===----------------------------------------------------------------------===//

#include "cpu/codecs/Cast.h"
#include "common/Status.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cstdlib>

namespace {
#if defined(__x86_64__)
/// The binary16 instance on CPUs with F16C: vcvtps2ph with rounding mode 0
/// (round to nearest even) gives the same codes as floatToHalf, eight at a
/// time; the tail uses the portable conversion. Checked against the
/// portable kernel and _Float16 by CastCodecTest through the C API.
__attribute__((target("avx2,f16c"))) void halfEncodeF16C(const float *g, float *residual, int64_t n, uint16_t *code) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(g + i);
    if (residual)
      v = _mm256_add_ps(v, _mm256_loadu_ps(residual + i));
    const __m128i c = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(code + i), c);
    if (residual)
      _mm256_storeu_ps(residual + i, _mm256_sub_ps(v, _mm256_cvtph_ps(c)));
  }
  ptrain::runtime::castEncode<PTRAIN_DTYPE_F16>(g + i, residual ? residual + i : nullptr, n - i, code + i);
}

__attribute__((target("avx2,f16c"))) void halfDecodeF16C(const uint16_t *code, int64_t n, float *out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(code + i))));
  ptrain::runtime::castDecode<PTRAIN_DTYPE_F16>(code + i, n - i, out + i);
}

bool hasF16C() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return has;
}
#endif
} // namespace

extern "C" ptrain_status_t ptrain_cast_encode_f32(const float *g, float *residual, int64_t n, ptrain_dtype_t dtype,
                                                  uint16_t *out_code) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_ARG(dtype == PTRAIN_DTYPE_F16 || dtype == PTRAIN_DTYPE_BF16, "dtype must be f16 (3) or bf16 (4), got %d",
                   dtype);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CHECK_PTR(g);
  PTRAIN_CHECK_PTR(out_code);
#if defined(__x86_64__)
  if (dtype == PTRAIN_DTYPE_F16 && hasF16C()) {
    halfEncodeF16C(g, residual, n, out_code);
    return PTRAIN_OK;
  }
#endif
  if (dtype == PTRAIN_DTYPE_F16)
    ptrain::runtime::castEncode<PTRAIN_DTYPE_F16>(g, residual, n, out_code);
  else
    ptrain::runtime::castEncode<PTRAIN_DTYPE_BF16>(g, residual, n, out_code);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cast_decode_f32(const uint16_t *code, int64_t n, ptrain_dtype_t dtype, float *out) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_ARG(dtype == PTRAIN_DTYPE_F16 || dtype == PTRAIN_DTYPE_BF16, "dtype must be f16 (3) or bf16 (4), got %d",
                   dtype);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CHECK_PTR(code);
  PTRAIN_CHECK_PTR(out);
#if defined(__x86_64__)
  if (dtype == PTRAIN_DTYPE_F16 && hasF16C()) {
    halfDecodeF16C(code, n, out);
    return PTRAIN_OK;
  }
#endif
  if (dtype == PTRAIN_DTYPE_F16)
    ptrain::runtime::castDecode<PTRAIN_DTYPE_F16>(code, n, out);
  else
    ptrain::runtime::castDecode<PTRAIN_DTYPE_BF16>(code, n, out);
  return PTRAIN_OK;
}
