//===- CastArray.h - The 16-bit cast calls' checks and loop -----*- C++ -*-===//
//
// ptrain_cast_f32_bf16 / ptrain_cast_bf16_f32 (cpu/GemmBf16.cpp) and
// ptrain_cast_f32_f16 / ptrain_cast_f16_f32 (cpu/GemmF16.cpp) check their
// arguments and convert element by element alike.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CASTARRAY_H
#define PTRAIN_RUNTIME_CPU_CASTARRAY_H

#include "common/Status.h"

#include <cstdint>

namespace ptrain::runtime {

/// out[i] = Convert(x[i]) for i < n; INVALID_ARGUMENT naming `call` for n < 0 or a null array when n > 0.
template <typename In, typename Out, Out (*Convert)(In)>
ptrain_status_t castArray(const char *call, const In *x, int64_t n, Out *out) {
  if (n < 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'n' must be >= 0, got %lld", static_cast<long long>(n));
  if (n > 0 && (!x || !out))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'%s' must not be null", x ? "out" : "x");
  for (int64_t i = 0; i < n; ++i)
    out[i] = Convert(x[i]);
  return PTRAIN_OK;
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_CASTARRAY_H
