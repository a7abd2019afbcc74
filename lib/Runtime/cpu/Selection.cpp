//===- Selection.cpp - Element type casts and gathers along an axis -------===//
//
// ONNX Cast and Gather (ptrain.cast, ptrain.gather; PTrainModelOps.td) on the
// buffers of generated code: f32, i64 and masks (one uint8_t, 0 or 1, per
// element). The conversions are the reference interpreter's
// (lib/Interpreter/Selection.cpp): float to integer truncates toward zero and
// NaN or out of range is an error, integer to float rounds to nearest (through
// fp64), anything to a mask is `!= 0`, a mask to a number 0 or 1.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cmath>
#include <cstring>

namespace {

/// Element `i` of `x` of kind `kind` (PTRAIN_CAST_*) as a double; integers exactly when they fit.
double loadAsDouble(const void *x, int32_t kind, int64_t i) {
  switch (kind) {
  case PTRAIN_CAST_F32:
    return static_cast<const float *>(x)[i];
  case PTRAIN_CAST_I64:
    return static_cast<double>(static_cast<const int64_t *>(x)[i]);
  default:
    return static_cast<const uint8_t *>(x)[i];
  }
}

} // namespace

extern "C" ptrain_status_t ptrain_cast_elements(const void *x, int32_t from, int64_t n, int32_t to, void *out) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  const auto known = [](int32_t k) { return k == PTRAIN_CAST_F32 || k == PTRAIN_CAST_I64 || k == PTRAIN_CAST_MASK; };
  PTRAIN_CHECK_ARG(known(from) && known(to), "element kinds %d -> %d: each must be F32 (0), I64 (1) or MASK (2)", from,
                   to);
  switch (to) {
  case PTRAIN_CAST_F32: {
    auto *o = static_cast<float *>(out);
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<float>(loadAsDouble(x, from, i));
    return PTRAIN_OK;
  }
  case PTRAIN_CAST_MASK: {
    auto *o = static_cast<uint8_t *>(out);
    for (int64_t i = 0; i < n; ++i)
      o[i] = loadAsDouble(x, from, i) != 0.0; // NaN != 0 is true, as in numpy
    return PTRAIN_OK;
  }
  default: {
    auto *o = static_cast<int64_t *>(out);
    if (from == PTRAIN_CAST_I64) {
      std::memcpy(o, x, sizeof(int64_t) * n);
      return PTRAIN_OK;
    }
    if (from == PTRAIN_CAST_MASK) {
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<const uint8_t *>(x)[i];
      return PTRAIN_OK;
    }
    // Checked first, so an out-of-range value leaves `out` untouched.
    const float *f = static_cast<const float *>(x);
    for (int64_t i = 0; i < n; ++i) {
      const double t = std::trunc(static_cast<double>(f[i]));
      PTRAIN_CHECK_ARG(!std::isnan(t) && t < 9223372036854775808.0 && t >= -9223372036854775808.0,
                       "x[%lld] = %g does not fit in int64", static_cast<long long>(i), static_cast<double>(f[i]));
    }
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<int64_t>(std::trunc(static_cast<double>(f[i])));
    return PTRAIN_OK;
  }
  }
}

extern "C" ptrain_status_t ptrain_gather_axis(const void *data, int64_t elem_bytes, int64_t outer, int64_t len,
                                              int64_t inner, const int64_t *indices, int64_t count, void *out) {
  PTRAIN_CHECK_ARG(elem_bytes > 0, "elem_bytes must be > 0, got %lld", static_cast<long long>(elem_bytes));
  PTRAIN_CHECK_SIZE(outer);
  PTRAIN_CHECK_SIZE(len);
  PTRAIN_CHECK_SIZE(inner);
  PTRAIN_CHECK_SIZE(count);
  PTRAIN_CHECK_PTR(data);
  PTRAIN_CHECK_PTR(indices);
  PTRAIN_CHECK_PTR(out);
  for (int64_t j = 0; j < count; ++j)
    PTRAIN_CHECK_ARG(indices[j] >= -len && indices[j] < len, "indices[%lld] = %lld is out of range [-%lld, %lld)",
                     static_cast<long long>(j), static_cast<long long>(indices[j]), static_cast<long long>(len),
                     static_cast<long long>(len));
  const auto *x = static_cast<const unsigned char *>(data);
  auto *o = static_cast<unsigned char *>(out);
  const int64_t row = inner * elem_bytes;
  for (int64_t i = 0; i < outer; ++i)
    for (int64_t j = 0; j < count; ++j) {
      const int64_t index = indices[j] < 0 ? indices[j] + len : indices[j];
      std::memcpy(o + (i * count + j) * row, x + (i * len + index) * row, row);
    }
  return PTRAIN_OK;
}
