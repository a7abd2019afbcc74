//===- Unary.cpp - Elementwise unary ops ----------------------------------===//
//
// The semantics of ptrain.unary (PTrainModelOps.td), computed in fp64 and
// rounded once; IEEE results for out-of-domain inputs (log(-1) is NaN).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cmath>

extern "C" ptrain_status_t ptrain_unary_f32(int32_t kind, const float *x,
                                            int64_t n, float *out) {
  PTRAIN_CHECK_ARG(kind >= PTRAIN_UNARY_NEG && kind <= PTRAIN_UNARY_RELU,
                   "unknown unary kind %d", kind);
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    double r;
    switch (kind) {
    case PTRAIN_UNARY_NEG:
      r = -v;
      break;
    case PTRAIN_UNARY_EXP:
      r = std::exp(v);
      break;
    case PTRAIN_UNARY_LOG:
      r = std::log(v);
      break;
    case PTRAIN_UNARY_SQRT:
      r = std::sqrt(v);
      break;
    case PTRAIN_UNARY_RSQRT:
      r = 1.0 / std::sqrt(v);
      break;
    case PTRAIN_UNARY_RECIPROCAL:
      r = 1.0 / v;
      break;
    case PTRAIN_UNARY_ERF:
      r = std::erf(v);
      break;
    case PTRAIN_UNARY_TANH:
      r = std::tanh(v);
      break;
    default: // PTRAIN_UNARY_RELU
      r = v > 0.0 ? v : (std::isnan(v) ? v : 0.0);
      break;
    }
    out[i] = static_cast<float>(r);
  }
  return PTRAIN_OK;
}
