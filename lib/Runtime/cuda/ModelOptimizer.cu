//===- ModelOptimizer.cu - AdamW, SGD and global-norm clipping on the GPU -===//
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
// ptrain_cuda_sgd_step_f32 is ptrain_sgd_step_f32 (torch.optim.SGD: weight
// decay added to the gradient, heavy-ball momentum) at the same schedule, out
// of place. Global-norm clipping (Megatron-LM clip_grad_norm_fp32):
// ptrain_cuda_sum_squares_f32 sums x^2 in fp64 (per-block partials, then one
// block over them) and rounds once into a device float, as the CPU step
// stores its fp64 sum; ptrain_cuda_clip_scale_f32 is the CPU emitter's
// min(1, max_norm / (sqrt(sum) + 1e-6)) (NaN stays NaN) in one thread.
//
//===----------------------------------------------------------------------===//

#include "cuda/BlockSum.h"
#include "cuda/Device.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

namespace {

struct AdamWCoefficients {
  float decay, stepSize, invSqrtBc2;
};

/// ptrain_lr_warmup_cosine at the op's 1-based step t (s = t - 1 during the warm-up, t after it).
__device__ float scheduledLr(int64_t t, int64_t warmup, int64_t total, float maxLr, float minLr) {
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
  return lr;
}

__device__ AdamWCoefficients coefficients(int64_t t, int64_t warmup, int64_t total, float maxLr, float minLr,
                                          float beta1, float beta2, float weightDecay) {
  const float lr = scheduledLr(t, warmup, total, maxLr, minLr);
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

__global__ void sgd(const float *param, const float *grad, const float *buf0, int64_t n, const int64_t *step,
                    int64_t warmup, int64_t total, float maxLr, float minLr, float momentum, float weightDecay,
                    float *outParam, float *outBuf) {
  __shared__ float lr;
  if (threadIdx.x == 0)
    lr = scheduledLr(*step, warmup, total, maxLr, minLr);
  __syncthreads();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float p = param[i];
    float g = grad[i] + weightDecay * p;
    if (buf0) {
      const float b = momentum * buf0[i] + g;
      outBuf[i] = b;
      g = b;
    }
    outParam[i] = p - lr * g;
  }
}

constexpr int kSumBlocks = 128;

__global__ void __launch_bounds__(kThreads) sumSquaresPartials(const float *x, int64_t n, double *partials) {
  __shared__ double shared[kThreads];
  double s = 0.0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double v = x[i];
    s += v * v;
  }
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = s;
}

__global__ void __launch_bounds__(kThreads) sumPartials(const double *partials, int count, float *out) {
  __shared__ double shared[kThreads];
  double s = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    s += partials[i];
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    *out = static_cast<float>(s);
}

__global__ void clipScale(const float *sumSquares, double maxNorm, float *scale) {
  const double norm = sqrt(static_cast<double>(*sumSquares));
  const double s = maxNorm / (norm + 1e-6);
  *scale = static_cast<float>(isnan(s) || s < 1.0 ? s : 1.0);
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_sgd_step_f32(const float *param, const float *grad, const float *momentum_buf,
                                                    int64_t n, const int64_t *step, int64_t warmup_steps,
                                                    int64_t total_steps, float max_lr, float min_lr, float momentum,
                                                    float weight_decay, float *out_param, float *out_momentum_buf) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  PTRAIN_CUDA_CHECK_ARG(total_steps > 0 && warmup_steps >= 0 && warmup_steps <= total_steps,
                        "need 0 <= warmup_steps (%lld) <= total_steps (%lld), total_steps > 0",
                        static_cast<long long>(warmup_steps), static_cast<long long>(total_steps));
  PTRAIN_CUDA_CHECK_ARG((momentum_buf == nullptr) == (out_momentum_buf == nullptr),
                        "momentum_buf and out_momentum_buf must both be set or both be null");
  PTRAIN_CUDA_CHECK_ARG(momentum_buf != nullptr || momentum == 0.0f,
                        "momentum_buf may be null only when momentum == 0 (got %g)", static_cast<double>(momentum));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(param && grad && step && out_param, "a tensor pointer is null");
  sgd<<<gridFor(n), kThreads, 0, currentStream()>>>(param, grad, momentum_buf, n, step, warmup_steps, total_steps,
                                                    max_lr, min_lr, momentum, weight_decay, out_param,
                                                    out_momentum_buf);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_sum_squares_f32(const float *x, int64_t n, float *out_sum) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  PTRAIN_CUDA_CHECK_PTR(out_sum);
  if (n == 0)
    return ptrain_cuda_zero_bytes(out_sum, sizeof(float));
  PTRAIN_CUDA_CHECK_PTR(x);
  const unsigned blocks = gridFor(n) < kSumBlocks ? gridFor(n) : kSumBlocks;
  auto *partials = static_cast<double *>(deviceScratch(__func__, DeviceSlot::Temp, sizeof(double) * kSumBlocks));
  if (!partials)
    return PTRAIN_ERROR_DEVICE;
  sumSquaresPartials<<<blocks, kThreads, 0, currentStream()>>>(x, n, partials);
  sumPartials<<<1, kThreads, 0, currentStream()>>>(partials, static_cast<int>(blocks), out_sum);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_clip_scale_f32(const float *sum_squares, double max_norm, float *out_scale) {
  PTRAIN_CUDA_CHECK_ARG(max_norm > 0.0, "max_norm must be > 0, got %g", max_norm);
  PTRAIN_CUDA_CHECK_PTR(sum_squares);
  PTRAIN_CUDA_CHECK_PTR(out_scale);
  clipScale<<<1, 1, 0, currentStream()>>>(sum_squares, max_norm, out_scale);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

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
