//===- Metrics.cpp - Codec telemetry: error, residual, LEP cosine ---------===//
//
// ptrain_codec_metrics_f32: what a codec site's encode did, measured on the
// buffers it read and wrote, in one pass with fp64 sums (docs/Runtime.md,
// "Codec telemetry"):
//
//   v = g + e_old (error feedback) or g (none)
//   error = ||v - decode(encode(v))|| / ||v||   (with error feedback the
//           difference is e_new, the kernels' fused residual)
//   residual_norm = ||e_new||
//   lep_cos = <e_old, g_prev - g> / (||e_old|| ||g_prev - g||)
//
// The last is the lazy error propagation health check of Optimus-CC (Song et
// al., ASPLOS 2023, section 4.2): e_old is e_k, the residual the previous
// encode at the site left, and g_prev - g is x_k - x_{k+1}, the change of the
// site's activation gradient between consecutive compressions.
//
//===----------------------------------------------------------------------===//

#include "common/CodecMetricSums.h"
#include "common/Status.h"

extern "C" PTRAIN_RUNTIME_API ptrain_status_t ptrain_codec_metrics_f32(const float *g, const float *residual,
                                                                       const float *new_residual, const float *decoded,
                                                                       const float *previous_g, int64_t n,
                                                                       float *out_g_copy,
                                                                       ptrain_codec_metrics_t *out_metrics) {
  PTRAIN_CHECK_PTR(g);
  PTRAIN_CHECK_PTR(out_metrics);
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_ARG((new_residual != nullptr) != (decoded != nullptr),
                   "exactly one of 'new_residual' (error feedback) and 'decoded' (none) must be given");
  PTRAIN_CHECK_ARG(!new_residual || residual,
                   "'new_residual' (error feedback) needs 'residual', the residual before the encode");
  PTRAIN_CHECK_ARG(
      !out_g_copy || (out_g_copy != g && out_g_copy != residual && out_g_copy != new_residual && out_g_copy != decoded),
      "'out_g_copy' must not alias g, the residuals or 'decoded'");
  double vv = 0, dd = 0, rr = 0, ee = 0, cc = 0, ec = 0;
  const bool lep = residual && previous_g;
  for (int64_t i = 0; i < n; ++i) {
    const double gi = g[i];
    const double eOld = residual ? residual[i] : 0.0;
    const double v = gi + eOld;
    vv += v * v;
    // v - decode(encode(v)): the new residual with error feedback.
    const double diff = new_residual ? static_cast<double>(new_residual[i]) : v - static_cast<double>(decoded[i]);
    dd += diff * diff;
    if (new_residual)
      rr += diff * diff;
    if (lep) {
      const double change = static_cast<double>(previous_g[i]) - gi; // x_k - x_{k+1}
      ee += eOld * eOld;
      cc += change * change;
      ec += eOld * change;
    }
    if (out_g_copy)
      out_g_copy[i] = g[i];
  }
  const ptrain_codec_metrics_t m = ptrain::codecMetricsFromSums({vv, dd, rr, ee, cc, ec}, lep);
  *out_metrics = m;
  return PTRAIN_OK;
}
