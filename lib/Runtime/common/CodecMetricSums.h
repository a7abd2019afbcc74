//===- CodecMetricSums.h - Codec telemetry from its six sums ----*- C++ -*-===//
//
// The last step of ptrain_codec_metrics_f32 (cpu/codecs/Metrics.cpp) and
// ptrain_cuda_codec_metrics_f32 (cuda/CodecMetrics.cu): the metrics of one
// encode formed from the fp64 sums of its one pass (docs/Runtime.md, "Codec
// telemetry"), so both targets report the same quantities from their sums.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_CODECMETRICSUMS_H
#define PTRAIN_RUNTIME_COMMON_CODECMETRICSUMS_H

#include "ptrain/Runtime/ptrain_runtime.h"

#include <cmath>

namespace ptrain {

/// The six sums over the elements: v = g + e_old (g without error feedback), diff = v - decode(encode(v)) (e_new
/// with error feedback), change = g_prev - g.
struct CodecMetricSums {
  double vv = 0; ///< sum v^2
  double dd = 0; ///< sum diff^2
  double rr = 0; ///< sum e_new^2 (0 without error feedback)
  double ee = 0; ///< sum e_old^2 (LEP only)
  double cc = 0; ///< sum change^2 (LEP only)
  double ec = 0; ///< sum e_old change (LEP only)
};

/// ||v||, the relative codec error, ||e_new|| and, when `lep` (e_old and g_prev given) and both vectors are
/// nonzero, cos(e_old, g_prev - g).
inline ptrain_codec_metrics_t codecMetricsFromSums(const CodecMetricSums &s, bool lep) {
  ptrain_codec_metrics_t m{};
  m.input_norm = std::sqrt(s.vv);
  m.error = s.vv > 0 ? std::sqrt(s.dd / s.vv) : 0.0;
  m.residual_norm = std::sqrt(s.rr);
  if (lep && s.ee > 0 && s.cc > 0) {
    m.lep_cos = s.ec / std::sqrt(s.ee * s.cc);
    m.has_lep_cos = 1;
  }
  return m;
}

} // namespace ptrain

#endif // PTRAIN_RUNTIME_COMMON_CODECMETRICSUMS_H
