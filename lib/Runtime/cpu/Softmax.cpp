//===- Softmax.cpp - Softmax over the last dim, optional causal mask ------===//
//
// Max-subtracted softmax per row. The causal mask is the autoregressive mask
// of Vaswani et al. 2017, "Attention Is All You Need", sec. 3.2.3: row r of a
// [..., S, S] tensor is query q = r mod S, and keys j > q get probability 0.
// A row whose every value is -inf (an attention row the mask hides entirely)
// gives 0 everywhere, as onnxruntime and the ONNX reference do, not NaN.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"
#include "cpu/CpuIsa.h"
#include "cpu/VectorMath.h"

namespace {
/// Row r's max over [0, valid) and its exponentials exp(x - max) (fp64, rounded to fp32) into yr; x may be y.
/// A fully masked row (every value -inf) gets zeros, whose sum 0 normalizeRow keeps as zeros.
PTRAIN_KERNEL_BODY void expRow(const float *xr, float *yr, int64_t valid) {
  float maxVal = xr[0];
  for (int64_t c = 1; c < valid; ++c)
    maxVal = xr[c] > maxVal ? xr[c] : maxVal;
  if (maxVal == -__builtin_inff()) {
    for (int64_t c = 0; c < valid; ++c)
      yr[c] = 0.0f;
    return;
  }
  // exp in fp64 (cpu/VectorMath.h, vectorized), rounded to fp32.
  for (int64_t c = 0; c < valid; ++c)
    yr[c] = static_cast<float>(ptrain::runtime::expNonPositive(static_cast<double>(xr[c] - maxVal)));
}

/// yr[0, valid) divided by their sum (fp64, in order), the rest of the row zero. A sum of 0 is a fully masked
/// row: it stays 0, as in onnxruntime and the ONNX reference's Attention, instead of 0 / 0 = NaN.
PTRAIN_KERNEL_BODY void normalizeRow(float *yr, double sum, int64_t valid, int64_t cols) {
  const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (int64_t c = 0; c < valid; ++c)
    yr[c] *= inv;
  for (int64_t c = valid; c < cols; ++c)
    yr[c] = 0.0f;
}

/// The rows' sums are each one fp64 chain in column order (the results' bits); four rows at a time run four
/// independent chains, which hides the add latency that bounded the one-row loop.
constexpr int64_t kRowGroup = 4;

/// The forward loops on checked arguments, compiled once per ISA path (cpu/CpuIsa.h).
PTRAIN_KERNEL_BODY ptrain_status_t softmaxForward(const float *x, int64_t rows, int64_t cols, int32_t causal,
                                                  float *out_y) {
  int64_t r = 0;
  // Without the mask every row has all cols keys: four rows at a time.
  if (!causal && cols > 0)
    for (; r + kRowGroup <= rows; r += kRowGroup) {
      const float *x0 = x + r * cols;
      float *y0 = out_y + r * cols, *y1 = y0 + cols, *y2 = y1 + cols, *y3 = y2 + cols;
      for (int64_t i = 0; i < kRowGroup; ++i)
        expRow(x0 + i * cols, y0 + i * cols, cols);
      double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        s0 += y0[c];
        s1 += y1[c];
        s2 += y2[c];
        s3 += y3[c];
      }
      normalizeRow(y0, s0, cols, cols);
      normalizeRow(y1, s1, cols, cols);
      normalizeRow(y2, s2, cols, cols);
      normalizeRow(y3, s3, cols, cols);
    }
  for (; r < rows; ++r) {
    const float *xr = x + r * cols;
    float *yr = out_y + r * cols;
    // Keys [0, valid) take part; the rest are masked.
    const int64_t valid = causal ? (r % cols) + 1 : cols;
    if (valid == 0)
      continue;
    expRow(xr, yr, valid);
    double sum = 0.0;
    for (int64_t c = 0; c < valid; ++c)
      sum += yr[c];
    normalizeRow(yr, sum, valid, cols);
  }
  return PTRAIN_OK;
}
} // namespace

extern "C" ptrain_status_t ptrain_softmax_fwd_f32(const float *x, int64_t rows, int64_t cols, int32_t causal,
                                                  float *out_y) {
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_SIZE(cols);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out_y);
  PTRAIN_CHECK_ARG(!causal || (cols > 0 && rows % cols == 0),
                   "causal softmax needs x of shape [..., S, S]: rows (%lld) "
                   "must be a multiple of cols (%lld)",
                   static_cast<long long>(rows), static_cast<long long>(cols));
  return ptrain::runtime::IsaClones<softmaxForward>::call(__func__, x, rows, cols, causal, out_y);
}

extern "C" ptrain_status_t ptrain_softmax_bwd_f32(const float *dy, const float *y, int64_t rows, int64_t cols,
                                                  float *out_dx) {
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_SIZE(cols);
  PTRAIN_CHECK_PTR(dy);
  PTRAIN_CHECK_PTR(y);
  PTRAIN_CHECK_PTR(out_dx);
  // dx = y * (dy - sum_c dy y): each row's dot one fp64 chain in column order, four rows at a time.
  auto finish = [&](int64_t r, double dot) {
    const float *dyr = dy + r * cols;
    const float *yr = y + r * cols;
    float *dxr = out_dx + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      dxr[c] = static_cast<float>(yr[c] * (dyr[c] - dot));
  };
  int64_t r = 0;
  for (; r + kRowGroup <= rows; r += kRowGroup) {
    const float *a0 = dy + r * cols, *a1 = a0 + cols, *a2 = a1 + cols, *a3 = a2 + cols;
    const float *b0 = y + r * cols, *b1 = b0 + cols, *b2 = b1 + cols, *b3 = b2 + cols;
    double d0 = 0.0, d1 = 0.0, d2 = 0.0, d3 = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      d0 += static_cast<double>(a0[c]) * b0[c];
      d1 += static_cast<double>(a1[c]) * b1[c];
      d2 += static_cast<double>(a2[c]) * b2[c];
      d3 += static_cast<double>(a3[c]) * b3[c];
    }
    // The dots are complete before any dx is written (dx may alias dy).
    finish(r, d0);
    finish(r + 1, d1);
    finish(r + 2, d2);
    finish(r + 3, d3);
  }
  for (; r < rows; ++r) {
    const float *dyr = dy + r * cols;
    const float *yr = y + r * cols;
    double dot = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      dot += static_cast<double>(dyr[c]) * yr[c];
    finish(r, dot);
  }
  return PTRAIN_OK;
}
