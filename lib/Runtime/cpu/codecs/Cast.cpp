//===- Cast.cpp - fp16 / bf16 cast codec: the C entry points --------------===//
//
// #ptrain.cast: the code is the tensor rounded to nearest even in binary16
// or bfloat16 (Cast.h); with error feedback, e = (g + e) - decode(code) in the
// same pass.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"
#include "cpu/codecs/Cast.h"

extern "C" ptrain_status_t ptrain_cast_encode_f32(const float *g,
                                                  float *residual, int64_t n,
                                                  ptrain_dtype_t dtype,
                                                  uint16_t *out_code) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_ARG(dtype == PTRAIN_DTYPE_F16 || dtype == PTRAIN_DTYPE_BF16,
                   "dtype must be f16 (3) or bf16 (4), got %d", dtype);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CHECK_PTR(g);
  PTRAIN_CHECK_PTR(out_code);
  if (dtype == PTRAIN_DTYPE_F16)
    ptrain::runtime::castEncode<PTRAIN_DTYPE_F16>(g, residual, n, out_code);
  else
    ptrain::runtime::castEncode<PTRAIN_DTYPE_BF16>(g, residual, n, out_code);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cast_decode_f32(const uint16_t *code,
                                                  int64_t n,
                                                  ptrain_dtype_t dtype,
                                                  float *out) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_ARG(dtype == PTRAIN_DTYPE_F16 || dtype == PTRAIN_DTYPE_BF16,
                   "dtype must be f16 (3) or bf16 (4), got %d", dtype);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CHECK_PTR(code);
  PTRAIN_CHECK_PTR(out);
  if (dtype == PTRAIN_DTYPE_F16)
    ptrain::runtime::castDecode<PTRAIN_DTYPE_F16>(code, n, out);
  else
    ptrain::runtime::castDecode<PTRAIN_DTYPE_BF16>(code, n, out);
  return PTRAIN_OK;
}
