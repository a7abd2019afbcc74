//===- ModelOptimizer.cu - AdamW with its learning-rate schedule on the GPU ===//
//
// ptrain_cuda_adamw_step_f32 is cpu/Optimizer.cpp's ptrain_adamw_step_f32
// (torch.optim.AdamW's parameterization) with the schedule of
// ptrain_lr_warmup_cosine folded in, so that the step counter never leaves
// the device: every block reads the op's 1-based step t from device memory
// and computes the same lr (linear warm-up, then cosine to min_lr, in double
// as on the CPU, evaluated at s = t - 1 while t <= warmup and s = t after,
// docs/CodegenCpu.md "AdamW's schedule") and bias corrections. Out of place
// (out_* may equal the inputs). With -fmad=false every float operation rounds
// on its own, in the CPU's order.
//
//===----------------------------------------------------------------------===//

#include "cuda/Device.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

namespace {

struct AdamWCoefficients {
  float decay, stepSize, invSqrtBc2;
};

__device__ AdamWCoefficients coefficients(int64_t t, int64_t warmup, int64_t total, float maxLr, float minLr,
                                          float beta1, float beta2, float weightDecay) {
  const int64_t s = t <= warmup ? t - 1 : t;
  float lr;
  if (s < warmup) {
    lr = static_cast<float>(static_cast<double>(maxLr) * (s + 1) / warmup);
  } else {
    double progress = 1.0;
    if (total > warmup)
      progress = static_cast<double>(s - warmup) / static_cast<double>(total - warmup);
    progress = progress > 1.0 ? 1.0 : progress;
    const double pi = 3.14159265358979323846;
    lr = static_cast<float>(minLr + (static_cast<double>(maxLr) - minLr) * 0.5 * (1.0 + cos(pi * progress)));
  }
  const double td = static_cast<double>(t);
  const double bc1 = 1.0 - pow(static_cast<double>(beta1), td);
  const double bc2 = 1.0 - pow(static_cast<double>(beta2), td);
  return {1.0f - lr * weightDecay, static_cast<float>(lr / bc1), static_cast<float>(1.0 / sqrt(bc2))};
}

__global__ void adamw(const float *param, const float *grad, const float *m0, const float *v0, int64_t n,
                      const int64_t *step, int64_t warmup, int64_t total, float maxLr, float minLr, float beta1,
                      float beta2, float eps, float weightDecay, float *outParam, float *outM, float *outV) {
  __shared__ AdamWCoefficients k;
  if (threadIdx.x == 0)
    k = coefficients(*step, warmup, total, maxLr, minLr, beta1, beta2, weightDecay);
  __syncthreads();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = grad[i];
    const float m = beta1 * m0[i] + (1.0f - beta1) * g;
    const float v = beta2 * v0[i] + (1.0f - beta2) * g * g;
    const float denom = sqrtf(v) * k.invSqrtBc2 + eps;
    outParam[i] = param[i] * k.decay - k.stepSize * m / denom;
    outM[i] = m;
    outV[i] = v;
  }
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_adamw_step_f32(const float *param, const float *grad, const float *exp_avg,
                                                      const float *exp_avg_sq, int64_t n, const int64_t *step,
                                                      int64_t warmup_steps, int64_t total_steps, float max_lr,
                                                      float min_lr, float beta1, float beta2, float eps,
                                                      float weight_decay, float *out_param, float *out_exp_avg,
                                                      float *out_exp_avg_sq) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  PTRAIN_CUDA_CHECK_ARG(total_steps > 0 && warmup_steps >= 0 && warmup_steps <= total_steps,
                        "need 0 <= warmup_steps (%lld) <= total_steps (%lld), total_steps > 0",
                        static_cast<long long>(warmup_steps), static_cast<long long>(total_steps));
  PTRAIN_CUDA_CHECK_ARG(beta1 >= 0.0f && beta1 < 1.0f && beta2 >= 0.0f && beta2 < 1.0f,
                        "beta1 and beta2 must be in [0, 1), got %g and %g", static_cast<double>(beta1),
                        static_cast<double>(beta2));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(param && grad && exp_avg && exp_avg_sq && step && out_param && out_exp_avg && out_exp_avg_sq,
                        "a tensor pointer is null");
  adamw<<<gridFor(n), kThreads, 0, currentStream()>>>(param, grad, exp_avg, exp_avg_sq, n, step, warmup_steps,
                                                      total_steps, max_lr, min_lr, beta1, beta2, eps, weight_decay,
                                                      out_param, out_exp_avg, out_exp_avg_sq);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}
