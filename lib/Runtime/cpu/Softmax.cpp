//===- Softmax.cpp - Softmax over the last dim, optional causal mask ------===//
//
// Max-subtracted softmax per row. The causal mask is the autoregressive mask
// of Vaswani et al. 2017, "Attention Is All You Need", sec. 3.2.3: row r of a
// [..., S, S] tensor is query q = r mod S, and keys j > q get probability 0.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"
#include "cpu/VectorMath.h"

extern "C" PTRAIN_VECTOR_CLONES ptrain_status_t
ptrain_softmax_fwd_f32(const float *x, int64_t rows, int64_t cols,
                       int32_t causal, float *out_y) {
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_SIZE(cols);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out_y);
  PTRAIN_CHECK_ARG(!causal || (cols > 0 && rows % cols == 0),
                   "causal softmax needs x of shape [..., S, S]: rows (%lld) "
                   "must be a multiple of cols (%lld)",
                   static_cast<long long>(rows), static_cast<long long>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    float *yr = out_y + r * cols;
    // Keys [0, valid) take part; the rest are masked.
    const int64_t valid = causal ? (r % cols) + 1 : cols;
    if (valid == 0)
      continue;
    float maxVal = xr[0];
    for (int64_t c = 1; c < valid; ++c)
      maxVal = xr[c] > maxVal ? xr[c] : maxVal;
    // exp in fp64 (cpu/VectorMath.h, vectorized), rounded to fp32 and
    // summed in fp64 in order.
    for (int64_t c = 0; c < valid; ++c)
      yr[c] = static_cast<float>(ptrain::runtime::expNonPositive(
          static_cast<double>(xr[c] - maxVal)));
    double sum = 0.0;
    for (int64_t c = 0; c < valid; ++c)
      sum += yr[c];
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t c = 0; c < valid; ++c)
      yr[c] *= inv;
    for (int64_t c = valid; c < cols; ++c)
      yr[c] = 0.0f;
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_softmax_bwd_f32(const float *dy,
                                                  const float *y, int64_t rows,
                                                  int64_t cols, float *out_dx) {
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_SIZE(cols);
  PTRAIN_CHECK_PTR(dy);
  PTRAIN_CHECK_PTR(y);
  PTRAIN_CHECK_PTR(out_dx);
  for (int64_t r = 0; r < rows; ++r) {
    const float *dyr = dy + r * cols;
    const float *yr = y + r * cols;
    double dot = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      dot += static_cast<double>(dyr[c]) * yr[c];
    float *dxr = out_dx + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      dxr[c] = static_cast<float>(yr[c] * (dyr[c] - dot));
  }
  return PTRAIN_OK;
}
