//===- GradScaler.cpp - fp16 dynamic loss scaling ---------------------------===//
//
// Megatron-LM's DynamicGradScaler (megatron/core/optimizer/grad_scaler.py) and
// the unscale-and-check of its MixedPrecisionOptimizer
// (megatron/core/optimizer/optimizer.py, _unscale_main_grads_and_check_for_nan),
// for the fp16 training step (docs/MixedPrecision.md, "The design", item 4;
// Micikevicius et al., "Mixed Precision Training", ICLR 2018, sec. 3.2).
//
// The scaler's state is three fp32 values, one `ptrain.state` of shape [3]
// checkpointed with the others: {scale, growth_tracker, hysteresis_tracker}.
// Every value it takes is exact in fp32 (scales are the initial scale times
// powers of two, the trackers small integers). The compiled step starts the
// state at zero, like every state no model file holds: a zero scale (never a
// scaler's value, min_scale > 0) stands for ptrain_grad_scaler_init's state.
// ptrain_loss_scale_f32, ptrain_grad_unscale_f32 and
// ptrain_grad_scaler_update_f32 are the out-of-place, pointer-argument forms
// the code generators call (the same parameters as their CUDA twins,
// lib/Target/Common/SharedKernels.def).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/ptrain_runtime.h"

#include "common/GradScalerRule.h"
#include "common/Status.h"

#include <cmath>

using namespace ptrain::runtime;

extern "C" ptrain_status_t ptrain_grad_unscale_check_f32(float *grad, int64_t n, float inv_scale,
                                                         float *inout_found_inf) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(inout_found_inf);
  if (n > 0)
    PTRAIN_CHECK_PTR(grad);
  PTRAIN_CHECK_ARG(std::isfinite(inv_scale) && inv_scale > 0.0f, "inv_scale must be finite and > 0, got %g",
                   static_cast<double>(inv_scale));
  bool found = false;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] * inv_scale;
    found |= !std::isfinite(g);
    grad[i] = g;
  }
  if (found)
    *inout_found_inf = 1.0f;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_grad_scaler_init(float initial_scale, int64_t hysteresis, float *out_state) {
  PTRAIN_CHECK_PTR(out_state);
  PTRAIN_CHECK_ARG(std::isfinite(initial_scale) && initial_scale > 0.0f,
                   "initial_scale must be finite and > 0, got %g", static_cast<double>(initial_scale));
  PTRAIN_CHECK_ARG(hysteresis >= 1, "hysteresis must be >= 1, got %lld", static_cast<long long>(hysteresis));
  out_state[0] = initial_scale;
  out_state[1] = 0.0f;
  out_state[2] = static_cast<float>(hysteresis);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_grad_scaler_update(float *state, float found_inf, float growth_factor,
                                                     float backoff_factor, int64_t growth_interval,
                                                     int64_t hysteresis, float min_scale) {
  PTRAIN_CHECK_PTR(state);
  char why[160];
  PTRAIN_CHECK_ARG(!gradScalerOptionsInvalid(growth_factor, backoff_factor, growth_interval, hysteresis, min_scale,
                                             why, sizeof(why)),
                   "%s", why);
  gradScalerUpdate(state, found_inf != 0.0f, growth_factor, backoff_factor, growth_interval, hysteresis, min_scale);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_loss_scale_f32(const float *state, float initial_scale, float *out_scale) {
  PTRAIN_CHECK_PTR(state);
  PTRAIN_CHECK_PTR(out_scale);
  PTRAIN_CHECK_ARG(std::isfinite(initial_scale) && initial_scale > 0.0f,
                   "initial_scale must be finite and > 0, got %g", static_cast<double>(initial_scale));
  *out_scale = state[0] != 0.0f ? state[0] : initial_scale;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_grad_unscale_f32(const float *grad, int64_t n, const float *scale, float *out_grad,
                                                   float *out_found_inf) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(scale);
  PTRAIN_CHECK_PTR(out_found_inf);
  if (n > 0) {
    PTRAIN_CHECK_PTR(grad);
    PTRAIN_CHECK_PTR(out_grad);
  }
  // Megatron-LM: inv_scale = self.grad_scaler.inv_scale = scale.double().reciprocal().float().
  const float inv_scale = static_cast<float>(1.0 / static_cast<double>(*scale));
  if (out_grad != grad)
    for (int64_t i = 0; i < n; ++i)
      out_grad[i] = grad[i];
  *out_found_inf = 0.0f;
  return ptrain_grad_unscale_check_f32(out_grad, n, inv_scale, out_found_inf);
}

extern "C" ptrain_status_t ptrain_grad_scaler_update_f32(const float *state, const float *found_inf,
                                                         float initial_scale, float growth_factor,
                                                         float backoff_factor, int64_t growth_interval,
                                                         int64_t hysteresis, float min_scale, float *out_state) {
  PTRAIN_CHECK_PTR(state);
  PTRAIN_CHECK_PTR(found_inf);
  PTRAIN_CHECK_PTR(out_state);
  float next[3] = {state[0], state[1], state[2]};
  if (next[0] == 0.0f)
    if (ptrain_status_t status = ptrain_grad_scaler_init(initial_scale, hysteresis, next))
      return status;
  if (ptrain_status_t status = ptrain_grad_scaler_update(next, *found_inf, growth_factor, backoff_factor,
                                                         growth_interval, hysteresis, min_scale))
    return status;
  for (int i = 0; i < 3; ++i)
    out_state[i] = next[i];
  return PTRAIN_OK;
}
