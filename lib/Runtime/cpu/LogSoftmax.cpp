//===- LogSoftmax.cpp - Log-softmax along any axis ------------------------===//
//
// ONNX LogSoftmax-13 (ptrain.log_softmax): y = x - max - log(sum(exp(x - max)))
// along the middle dimension of x viewed as [outer, len, inner]. Computed in
// fp64 and rounded once, in the reference interpreter's order
// (lib/Interpreter/Reduction.cpp), so the result is its bit for bit. Its
// gradient is built from reduce/unary/binary ops (PTrainGradients.cpp).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <algorithm>
#include <cmath>
#include <limits>

extern "C" ptrain_status_t ptrain_log_softmax_f32(const float *x, int64_t outer, int64_t len, int64_t inner,
                                                  float *out) {
  PTRAIN_CHECK_SIZE(outer);
  PTRAIN_CHECK_SIZE(len);
  PTRAIN_CHECK_SIZE(inner);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      double maxValue = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < len; ++j)
        maxValue = std::max(maxValue, static_cast<double>(x[base + j * inner]));
      double sum = 0.0;
      for (int64_t j = 0; j < len; ++j)
        sum += std::exp(static_cast<double>(x[base + j * inner]) - maxValue);
      const double logSum = std::log(sum);
      for (int64_t j = 0; j < len; ++j)
        out[base + j * inner] = static_cast<float>(static_cast<double>(x[base + j * inner]) - maxValue - logSum);
    }
  return PTRAIN_OK;
}
