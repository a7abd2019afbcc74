//===- GemmArgs.h - The GEMM calls' argument checks -------------*- C++ -*-===//
//
// ptrain_gemm_f32 (cpu/Gemm.cpp) and ptrain_gemm_bf16 (cpu/GemmBf16.cpp) take
// the same arguments (ptrain_runtime.h, "GEMM") and check them alike.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_GEMMARGS_H
#define PTRAIN_RUNTIME_CPU_GEMMARGS_H

#include "common/Status.h"

namespace ptrain::runtime {

/// INVALID_ARGUMENT naming `call` for a negative size or stride; then, unless
/// the product is empty (`outEmpty`: batch, m or n is 0), for a null C, for
/// batch entries of C that overlap, and for a null A or B when k > 0.
inline ptrain_status_t checkGemmArgs(const char *call, int64_t batch, int64_t m, int64_t n, int64_t k,
                                     const void *a, int64_t stride_a, const void *b, int64_t stride_b,
                                     const void *c, int64_t stride_c, bool &outEmpty) {
  const char *names[] = {"batch", "m", "n", "k", "stride_a", "stride_b", "stride_c"};
  const int64_t sizes[] = {batch, m, n, k, stride_a, stride_b, stride_c};
  for (int i = 0; i < 7; ++i)
    if (sizes[i] < 0)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'%s' must be >= 0, got %lld", names[i],
                  static_cast<long long>(sizes[i]));
  outEmpty = batch == 0 || m == 0 || n == 0;
  if (outEmpty)
    return PTRAIN_OK;
  if (!c)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'c' must not be null");
  if (batch > 1 && stride_c < m * n)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "stride_c (%lld) must be >= m*n (%lld) when batch > 1: batch entries would overwrite each other",
                static_cast<long long>(stride_c), static_cast<long long>(m * n));
  if (k > 0 && (!a || !b))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'%s' must not be null", a ? "b" : "a");
  return PTRAIN_OK;
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_GEMMARGS_H
