//===- Integer.cpp - i64 arithmetic and casts -----------------------------===//
//
// The step counter's increment (ptrain_add_i64) and the conversion of i64
// token ids and labels to the int32 ids the embedding and cross-entropy
// kernels take (ptrain_cast_i64_i32). Neither wraps: overflow is an error.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <climits>

extern "C" ptrain_status_t ptrain_add_i64(const int64_t *a, const int64_t *b,
                                          int64_t n, int64_t *out) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(a);
  PTRAIN_CHECK_PTR(b);
  PTRAIN_CHECK_PTR(out);
  for (int64_t i = 0; i < n; ++i) {
    int64_t sum;
    if (__builtin_add_overflow(a[i], b[i], &sum))
      return ptrain::runtime::fail(
          PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
          "a[%lld] + b[%lld] = %lld + %lld overflows int64",
          static_cast<long long>(i), static_cast<long long>(i),
          static_cast<long long>(a[i]), static_cast<long long>(b[i]));
    out[i] = sum;
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cast_i64_i32(const int64_t *x, int64_t n,
                                               int32_t *out) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] < INT32_MIN || x[i] > INT32_MAX)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                                   "x[%lld] = %lld is outside int32",
                                   static_cast<long long>(i),
                                   static_cast<long long>(x[i]));
    out[i] = static_cast<int32_t>(x[i]);
  }
  return PTRAIN_OK;
}
