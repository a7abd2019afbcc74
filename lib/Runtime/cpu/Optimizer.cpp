//===- Optimizer.cpp - AdamW, SGD and the LR schedule ---------------------===//
//
// AdamW: Loshchilov, Hutter 2019, "Decoupled Weight Decay Regularization"
// (ICLR), Algorithm 2, in the parameterization of torch.optim.AdamW (the decay
// is multiplied by the learning rate). SGD: torch.optim.SGD without dampening
// or Nesterov. Schedule: linear warm-up (Goyal et al. 2017, "Accurate, Large
// Minibatch SGD", sec. 2.2) then cosine decay (Loshchilov, Hutter 2017,
// "SGDR", eq. 5, one cycle).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cmath>

extern "C" ptrain_status_t
ptrain_adamw_coefficients_f32(int64_t step, float lr, float beta1, float beta2,
                              float weight_decay, float *out_coefficients) {
  PTRAIN_CHECK_ARG(step >= 1, "step is 1-based, got %lld",
                   static_cast<long long>(step));
  PTRAIN_CHECK_ARG(beta1 >= 0.0f && beta1 < 1.0f && beta2 >= 0.0f &&
                       beta2 < 1.0f,
                   "beta1 and beta2 must be in [0, 1), got %g and %g",
                   static_cast<double>(beta1), static_cast<double>(beta2));
  PTRAIN_CHECK_PTR(out_coefficients);
  const double t = static_cast<double>(step);
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), t);
  const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), t);
  out_coefficients[0] = 1.0f - lr * weight_decay;
  out_coefficients[1] = static_cast<float>(lr / bc1);
  out_coefficients[2] = static_cast<float>(1.0 / std::sqrt(bc2));
  return PTRAIN_OK;
}

// The element loop is the definition the generated AdamW kernels repeat op for op (AdamWArith.h): fp32, this
// order, no contraction into FMA (-ffp-contract=off, lib/Runtime/CMakeLists.txt).
extern "C" ptrain_status_t
ptrain_adamw_step_f32(float *param, const float *grad, float *exp_avg,
                      float *exp_avg_sq, int64_t n, int64_t step, float lr,
                      float beta1, float beta2, float eps,
                      float weight_decay) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(param);
  PTRAIN_CHECK_PTR(grad);
  PTRAIN_CHECK_PTR(exp_avg);
  PTRAIN_CHECK_PTR(exp_avg_sq);
  float c[3];
  PTRAIN_RETURN_IF_ERROR(
      ptrain_adamw_coefficients_f32(step, lr, beta1, beta2, weight_decay, c));
  const float decay = c[0], stepSize = c[1], invSqrtBc2 = c[2];
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float m = beta1 * exp_avg[i] + (1.0f - beta1) * g;
    const float v = beta2 * exp_avg_sq[i] + (1.0f - beta2) * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = std::sqrt(v) * invSqrtBc2 + eps;
    param[i] = param[i] * decay - stepSize * m / denom;
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_sgd_step_f32(float *param, const float *grad,
                                               float *momentum_buf, int64_t n,
                                               float lr, float momentum,
                                               float weight_decay) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(param);
  PTRAIN_CHECK_PTR(grad);
  PTRAIN_CHECK_ARG(momentum_buf != nullptr || momentum == 0.0f,
                   "momentum_buf may be null only when momentum == 0 (got %g)",
                   static_cast<double>(momentum));
  for (int64_t i = 0; i < n; ++i) {
    float g = grad[i] + weight_decay * param[i];
    if (momentum_buf) {
      momentum_buf[i] = momentum * momentum_buf[i] + g;
      g = momentum_buf[i];
    }
    param[i] -= lr * g;
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_lr_warmup_cosine(int64_t step,
                                                   int64_t warmup_steps,
                                                   int64_t total_steps,
                                                   float max_lr, float min_lr,
                                                   float *out_lr) {
  PTRAIN_CHECK_SIZE(step);
  PTRAIN_CHECK_ARG(total_steps > 0 && warmup_steps >= 0 &&
                       warmup_steps <= total_steps,
                   "need 0 <= warmup_steps (%lld) <= total_steps (%lld), "
                   "total_steps > 0",
                   static_cast<long long>(warmup_steps),
                   static_cast<long long>(total_steps));
  PTRAIN_CHECK_PTR(out_lr);
  if (step < warmup_steps) {
    *out_lr = static_cast<float>(static_cast<double>(max_lr) * (step + 1) /
                                 warmup_steps);
    return PTRAIN_OK;
  }
  double progress = 1.0;
  if (total_steps > warmup_steps)
    progress = static_cast<double>(step - warmup_steps) /
               static_cast<double>(total_steps - warmup_steps);
  progress = progress > 1.0 ? 1.0 : progress;
  const double pi = 3.14159265358979323846;
  *out_lr = static_cast<float>(min_lr + (static_cast<double>(max_lr) - min_lr) *
                                            0.5 * (1.0 + std::cos(pi * progress)));
  return PTRAIN_OK;
}
