//===- Elementwise.cpp - Fill, add, scale, bias add, sum of squares -------===//
//
// The small elementwise kernels of ptrain_runtime.h. `out` may alias the
// inputs where the header says so; every loop reads x[i] before writing
// out[i], which makes that safe.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

extern "C" ptrain_status_t ptrain_fill_f32(float *out, int64_t n, float value) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(out);
  for (int64_t i = 0; i < n; ++i)
    out[i] = value;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_add_f32(const float *a, const float *b,
                                          int64_t n, float *out) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(a);
  PTRAIN_CHECK_PTR(b);
  PTRAIN_CHECK_PTR(out);
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_scale_f32(const float *x, int64_t n,
                                            float alpha, float *out) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  for (int64_t i = 0; i < n; ++i)
    out[i] = alpha * x[i];
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_sum_squares_f32(const float *x, int64_t n,
                                                  double *out_sum) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out_sum);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(x[i]) * x[i];
  *out_sum = sum;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_bias_add_f32(const float *x,
                                               const float *bias, int64_t rows,
                                               int64_t cols, float *out) {
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_SIZE(cols);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(bias);
  PTRAIN_CHECK_PTR(out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = x[r * cols + c] + bias[c];
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_bias_add_bwd_f32(const float *dy,
                                                   int64_t rows, int64_t cols,
                                                   float *out_dbias) {
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_SIZE(cols);
  PTRAIN_CHECK_PTR(dy);
  PTRAIN_CHECK_PTR(out_dbias);
  for (int64_t c = 0; c < cols; ++c)
    out_dbias[c] = 0.0f;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out_dbias[c] += dy[r * cols + c];
  return PTRAIN_OK;
}
