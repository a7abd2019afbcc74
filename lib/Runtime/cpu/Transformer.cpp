//===- Transformer.cpp - RMS norm and rotary embedding --------------------===//
//
// The LLaMA-style model ops (PTrainTransformerOps.td) on fp32 buffers:
// RMS normalization (Zhang, Sennrich 2019, "Root Mean Square Layer
// Normalization", eq. 4; ONNX RMSNormalization-23) and rotary position
// embeddings (Su et al. 2021, RoFormer, eq. 34; ONNX RotaryEmbedding-23).
// Each value is computed in fp64 and rounded once, as the reference
// interpreter's kernels (lib/Interpreter/Transformer.cpp) do.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cmath>

extern "C" ptrain_status_t ptrain_rms_norm_fwd_f32(const float *x, const float *scale, int64_t rows, int64_t cols,
                                                   double eps, float *out_y) {
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_ARG(cols > 0, "cols must be > 0, got %lld", static_cast<long long>(cols));
  PTRAIN_CHECK_ARG(eps >= 0.0, "eps must be >= 0, got %g", eps);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(scale);
  PTRAIN_CHECK_PTR(out_y);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    double sumSquares = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      sumSquares += static_cast<double>(xr[c]) * xr[c];
    const double rstd = 1.0 / std::sqrt(sumSquares / static_cast<double>(cols) + eps);
    float *yr = out_y + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = static_cast<float>(xr[c] * rstd * scale[c]);
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_rotary_embedding_f32(const float *x, const float *cos, const float *sin,
                                                       int64_t batch, int64_t heads, int64_t seq, int64_t head_dim,
                                                       int64_t rotary_dim, int32_t interleaved, float *out) {
  PTRAIN_CHECK_SIZE(batch);
  PTRAIN_CHECK_SIZE(heads);
  PTRAIN_CHECK_SIZE(seq);
  PTRAIN_CHECK_SIZE(head_dim);
  PTRAIN_CHECK_ARG(rotary_dim > 0 && rotary_dim <= head_dim && rotary_dim % 2 == 0,
                   "rotary_dim must be even and in (0, head_dim = %lld], got "
                   "%lld",
                   static_cast<long long>(head_dim), static_cast<long long>(rotary_dim));
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(cos);
  PTRAIN_CHECK_PTR(sin);
  PTRAIN_CHECK_PTR(out);
  PTRAIN_CHECK_ARG(out != x, "out must not alias x");
  const int64_t half = rotary_dim / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t p = 0; p < seq; ++p) {
        const int64_t base = ((b * heads + h) * seq + p) * head_dim;
        const int64_t table = (b * seq + p) * half;
        for (int64_t c = rotary_dim; c < head_dim; ++c)
          out[base + c] = x[base + c];
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i1 = interleaved ? 2 * i : i;
          const int64_t i2 = interleaved ? 2 * i + 1 : i + half;
          const double x1 = x[base + i1], x2 = x[base + i2];
          const double c = cos[table + i], s = sin[table + i];
          out[base + i1] = static_cast<float>(x1 * c - x2 * s);
          out[base + i2] = static_cast<float>(x2 * c + x1 * s);
        }
      }
  return PTRAIN_OK;
}
