//===- GradScaler.cu - fp16 dynamic loss scaling on the GPU ---------------===//
//
// The CUDA twins of cpu/GradScaler.cpp's ptrain_loss_scale_f32,
// ptrain_grad_unscale_f32 and ptrain_grad_scaler_update_f32 (the same
// parameters, lib/Target/Common/SharedKernels.def), with every pointer in
// device memory so that the scale and the overflow flag never leave the
// device: Megatron-LM's DynamicGradScaler (megatron/core/optimizer/
// grad_scaler.py) and the unscale-and-check of its mixed-precision optimizer
// (torch's _amp_foreach_non_finite_check_and_unscale_). The scaler state is
// {scale, growth_tracker, hysteresis_tracker}; a zero scale stands for the
// initial state {initial_scale, 0, hysteresis}; the update is
// common/GradScalerRule.h's, the CPU's. With -fmad=false the unscale rounds
// its one product as the CPU does, so both give the same bits.
//
//===----------------------------------------------------------------------===//

#include "common/GradScalerRule.h"
#include "cuda/Device.h"
#include "cuda/GridStride.h"

#include <cuda_runtime.h>

#include <cmath>

using namespace ptrain::cuda;

namespace {

__global__ void lossScale(const float *state, float initialScale, float *outScale) {
  *outScale = state[0] != 0.0f ? state[0] : initialScale;
}

/// out = grad * fp32(1 / fp64(*scale)); *found = 1 where a result is not finite (every writer stores the same 1,
/// so the race is benign; the flag was zeroed before the launch).
__global__ void gradUnscale(const float *grad, int64_t n, const float *scale, float *out, float *found) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(*scale));
  PTRAIN_GRID_STRIDE(i, n) {
    const float g = __fmul_rn(grad[i], inv);
    if (!isfinite(g))
      *found = 1.0f;
    out[i] = g;
  }
}

/// ptrain_grad_scaler_update (common/GradScalerRule.h) in one thread, after ptrain_grad_scaler_init for a zero state.
__global__ void scalerUpdate(const float *state, const float *foundInf, float initialScale, float growthFactor,
                             float backoffFactor, int64_t growthInterval, int64_t hysteresis, float minScale,
                             float *outState) {
  float next[3] = {state[0], state[1], state[2]};
  if (next[0] == 0.0f) {
    next[0] = initialScale;
    next[1] = 0.0f;
    next[2] = static_cast<float>(hysteresis);
  }
  ptrain::runtime::gradScalerUpdate(next, *foundInf != 0.0f, growthFactor, backoffFactor, growthInterval, hysteresis,
                                    minScale);
  for (int i = 0; i < 3; ++i)
    outState[i] = next[i];
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_loss_scale_f32(const float *state, float initial_scale, float *out_scale) {
  PTRAIN_CUDA_CHECK_PTR(state);
  PTRAIN_CUDA_CHECK_PTR(out_scale);
  PTRAIN_CUDA_CHECK_ARG(std::isfinite(initial_scale) && initial_scale > 0.0f,
                        "initial_scale must be finite and > 0, got %g", static_cast<double>(initial_scale));
  lossScale<<<1, 1, 0, currentStream()>>>(state, initial_scale, out_scale);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_grad_unscale_f32(const float *grad, int64_t n, const float *scale,
                                                        float *out_grad, float *out_found_inf) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  PTRAIN_CUDA_CHECK_PTR(scale);
  PTRAIN_CUDA_CHECK_PTR(out_found_inf);
  PTRAIN_CUDA_TRY(cudaMemsetAsync(out_found_inf, 0, sizeof(float), currentStream()));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(grad && out_grad, "a tensor pointer is null");
  gradUnscale<<<gridFor(n), kThreads, 0, currentStream()>>>(grad, n, scale, out_grad, out_found_inf);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_grad_scaler_update_f32(const float *state, const float *found_inf,
                                                              float initial_scale, float growth_factor,
                                                              float backoff_factor, int64_t growth_interval,
                                                              int64_t hysteresis, float min_scale, float *out_state) {
  PTRAIN_CUDA_CHECK_PTR(state);
  PTRAIN_CUDA_CHECK_PTR(found_inf);
  PTRAIN_CUDA_CHECK_PTR(out_state);
  PTRAIN_CUDA_CHECK_ARG(std::isfinite(initial_scale) && initial_scale > 0.0f,
                        "initial_scale must be finite and > 0, got %g", static_cast<double>(initial_scale));
  char why[160];
  PTRAIN_CUDA_CHECK_ARG(!ptrain::runtime::gradScalerOptionsInvalid(growth_factor, backoff_factor, growth_interval,
                                                                   hysteresis, min_scale, why, sizeof(why)),
                        "%s", why);
  scalerUpdate<<<1, 1, 0, currentStream()>>>(state, found_inf, initial_scale, growth_factor, backoff_factor,
                                             growth_interval, hysteresis, min_scale, out_state);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}
