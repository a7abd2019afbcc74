//===- Generate.cpp - Constants computed instead of stored ----------------===//
//
// The constants a compiled step generates rather than prints or reads
// (docs/CodegenCpu.md, "Constants"): a splat of any element type, a causal
// (lower-triangular) mask and an iota (position ids).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cstring>

namespace {

bool validElemBytes(int64_t b) { return b == 1 || b == 2 || b == 4 || b == 8; }

void put(unsigned char *out, int64_t i, int64_t elem_bytes, const void *value) {
  std::memcpy(out + i * elem_bytes, value, static_cast<size_t>(elem_bytes));
}

} // namespace

extern "C" ptrain_status_t ptrain_fill_elements(void *out, int64_t count, int64_t elem_bytes, const void *value) {
  PTRAIN_CHECK_SIZE(count);
  PTRAIN_CHECK_PTR(out);
  PTRAIN_CHECK_PTR(value);
  PTRAIN_CHECK_ARG(validElemBytes(elem_bytes), "elem_bytes must be 1, 2, 4 or 8, got %lld",
                   static_cast<long long>(elem_bytes));
  auto *o = static_cast<unsigned char *>(out);
  for (int64_t i = 0; i < count; ++i)
    put(o, i, elem_bytes, value);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_causal_mask(void *out, int64_t elem_bytes, int64_t batch, int64_t rows,
                                              int64_t cols, int64_t diagonal, const void *keep,
                                              const void *masked) {
  PTRAIN_CHECK_SIZE(batch);
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_SIZE(cols);
  PTRAIN_CHECK_PTR(out);
  PTRAIN_CHECK_PTR(keep);
  PTRAIN_CHECK_PTR(masked);
  PTRAIN_CHECK_ARG(validElemBytes(elem_bytes), "elem_bytes must be 1, 2, 4 or 8, got %lld",
                   static_cast<long long>(elem_bytes));
  auto *o = static_cast<unsigned char *>(out);
  int64_t k = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        put(o, k++, elem_bytes, j - i <= diagonal ? keep : masked);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_iota_i64(int64_t *out, int64_t count, int64_t period, int64_t start,
                                           int64_t step) {
  PTRAIN_CHECK_SIZE(count);
  PTRAIN_CHECK_PTR(out);
  PTRAIN_CHECK_ARG(period > 0, "period must be > 0, got %lld", static_cast<long long>(period));
  for (int64_t i = 0; i < count; ++i)
    out[i] = start + (i % period) * step;
  return PTRAIN_OK;
}
