//===- Dropout.cpp - Inverted dropout with a counter-based mask -----------===//
//
// Srivastava et al. 2014, "Dropout" (JMLR 15), in the inverted form of ONNX
// Dropout-12: out = keep ? x / (1 - ratio) : 0. The mask is the pure function
// of (seed, counter, global index) that ptrain.dropout defines (PTrainModelOps.td)
// on SplitMix64's finalizer (common/DropoutMask.h, shared with the GPU kernel
// of cuda/ModelTransformer.cu), so a compiled step draws the same mask bit for
// bit as the reference interpreter (dropoutKeeps in
// lib/Interpreter/Elementwise.cpp) and as a CUDA step, and a step, its
// recomputation and its gradient see one mask.
//
//===----------------------------------------------------------------------===//

#include "common/DropoutMask.h"
#include "common/Status.h"

extern "C" ptrain_status_t ptrain_dropout_global_f32(const float *x, int64_t n, double ratio, int64_t seed,
                                                     int64_t counter, int64_t mid, int64_t inner, int64_t part,
                                                     int64_t parts, int64_t base, float *out) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_ARG(ratio >= 0.0 && ratio < 1.0, "ratio must be in [0, 1), got %g", ratio);
  PTRAIN_CHECK_ARG(mid >= 0 && inner >= 1 && parts >= 1 && part >= 0 && part < parts && base >= 0,
                   "bad layout: mid %lld, inner %lld, part %lld of %lld, base %lld", static_cast<long long>(mid),
                   static_cast<long long>(inner), static_cast<long long>(part), static_cast<long long>(parts),
                   static_cast<long long>(base));
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  using namespace ptrain::runtime;
  const uint64_t key = dropoutKey(seed, counter);
  const double scale = 1.0 / (1.0 - ratio);
  for (int64_t i = 0; i < n; ++i) {
    const double u = dropoutUniform(key, dropoutGlobalIndex(i, mid, inner, part, parts, base));
    out[i] = u >= ratio ? static_cast<float>(x[i] * scale) : 0.0f;
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_dropout_f32(const float *x, int64_t n, double ratio, int64_t seed, int64_t counter,
                                              float *out) {
  return ptrain_dropout_global_f32(x, n, ratio, seed, counter, /*mid=*/0, /*inner=*/1, /*part=*/0, /*parts=*/1,
                                   /*base=*/0, out);
}
