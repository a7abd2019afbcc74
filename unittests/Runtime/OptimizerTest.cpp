//===- OptimizerTest.cpp - AdamW, SGD and the LR schedule -----------------===//

#include "GradCheck.h"

#include <cmath>

using namespace ptrain::testing;

namespace {

TEST(AdamW, TwoStepsMatchAHandComputedUpdate) {
  // lr 0.1, betas (0.9, 0.999), eps 1e-8, wd 0.01; p0 = 1, g1 = 0.5, g2 = -1.
  // Step 1: p = 1 * (1 - 0.001) = 0.999; m = 0.05, v = 0.00025;
  //   m^ = 0.5, v^ = 0.25, p = 0.999 - 0.1 * 0.5 / (0.5 + 1e-8).
  // Step 2: p *= 0.999; m = 0.045 - 0.1 = -0.055; v = 0.00024975 + 0.001;
  //   m^ = m / 0.19, v^ = v / 0.001999.
  // Computed in fp64 from the fp32-rounded hyperparameters the kernel gets
  // (1 - 0.999f differs from 0.001 by 5e-5 relative).
  const double lr = 0.1f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
  double p = 1.0 * (1 - lr * wd);
  const double m1 = (1 - b1) * 0.5, v1 = (1 - b2) * 0.25;
  p -= lr * (m1 / (1 - b1)) / (std::sqrt(v1 / (1 - b2)) + eps);
  const double m2 = b1 * m1 + (1 - b1) * -1.0;
  const double v2 = b2 * v1 + (1 - b2) * 1.0;
  p *= 1 - lr * wd;
  p -= lr * (m2 / (1 - b1 * b1)) / (std::sqrt(v2 / (1 - b2 * b2)) + eps);
  EXPECT_NEAR(p, 0.999 * (0.999 - 0.1) - 0.1 * (-0.055 / 0.19) /
                                             std::sqrt(0.00124975 / 0.001999),
              1e-4); // The decimal numbers of the comment, to fp32 precision.

  float param = 1.0f, m = 0.0f, v = 0.0f;
  const float grads[2] = {0.5f, -1.0f};
  for (int64_t step = 1; step <= 2; ++step)
    ASSERT_PTRAIN_OK(ptrain_adamw_step_f32(&param, &grads[step - 1], &m, &v, 1,
                                           step, 0.1f, 0.9f, 0.999f, 1e-8f,
                                           0.01f));
  EXPECT_NEAR(param, p, 1e-6);
  EXPECT_NEAR(m, m2, 1e-7);
  EXPECT_NEAR(v, v2, 1e-9);
}

TEST(AdamW, WeightDecayIsDecoupledFromTheGradient) {
  // With g = 0 the Adam term vanishes: only p *= (1 - lr * wd) remains (an
  // L2 penalty folded into g would instead move p by about lr).
  float param = 2.0f, m = 0.0f, v = 0.0f, g = 0.0f;
  ASSERT_PTRAIN_OK(ptrain_adamw_step_f32(&param, &g, &m, &v, 1, 1, 0.1f, 0.9f,
                                         0.999f, 1e-8f, 0.5f));
  EXPECT_FLOAT_EQ(param, 2.0f * (1.0f - 0.05f));
}

TEST(AdamW, StepIsOneBased) {
  float p = 0, g = 0, m = 0, v = 0;
  EXPECT_EQ(ptrain_adamw_step_f32(&p, &g, &m, &v, 1, 0, 0.1f, 0.9f, 0.999f,
                                  1e-8f, 0.0f),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(Sgd, MomentumAndWeightDecayByHand) {
  // lr 0.1, momentum 0.9, wd 0.1; p0 = 1, g = 1 twice.
  // Step 1: g' = 1.1, buf = 1.1, p = 0.89.
  // Step 2: g' = 1 + 0.089 = 1.089, buf = 0.99 + 1.089 = 2.079, p = 0.6821.
  float p = 1.0f, buf = 0.0f, g = 1.0f;
  ASSERT_PTRAIN_OK(ptrain_sgd_step_f32(&p, &g, &buf, 1, 0.1f, 0.9f, 0.1f));
  EXPECT_NEAR(p, 0.89, 1e-6);
  ASSERT_PTRAIN_OK(ptrain_sgd_step_f32(&p, &g, &buf, 1, 0.1f, 0.9f, 0.1f));
  EXPECT_NEAR(buf, 2.079, 1e-6);
  EXPECT_NEAR(p, 0.6821, 1e-6);
  // Plain SGD needs no buffer.
  ASSERT_PTRAIN_OK(ptrain_sgd_step_f32(&p, &g, nullptr, 1, 0.5f, 0.0f, 0.0f));
  EXPECT_NEAR(p, 0.1821, 1e-6);
  EXPECT_EQ(ptrain_sgd_step_f32(&p, &g, nullptr, 1, 0.5f, 0.9f, 0.0f),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(LrSchedule, LinearWarmupThenCosineDecay) {
  auto lrAt = [](int64_t step) {
    float lr = -1.0f;
    EXPECT_EQ(ptrain_lr_warmup_cosine(step, 10, 110, 1e-3f, 1e-4f, &lr),
              PTRAIN_OK);
    return static_cast<double>(lr);
  };
  EXPECT_NEAR(lrAt(0), 1e-4, 1e-9);   // (0 + 1) / 10 of the peak.
  EXPECT_NEAR(lrAt(4), 5e-4, 1e-9);
  EXPECT_NEAR(lrAt(9), 1e-3, 1e-9);   // Warm-up ends at the peak.
  EXPECT_NEAR(lrAt(10), 1e-3, 1e-9);  // Cosine starts at the peak,
  EXPECT_NEAR(lrAt(60), 5.5e-4, 1e-9); // is halfway at the middle,
  EXPECT_NEAR(lrAt(110), 1e-4, 1e-9);  // ends at the floor
  EXPECT_NEAR(lrAt(500), 1e-4, 1e-9);  // and stays there.
  EXPECT_NEAR(lrAt(35), 1e-4 + 9e-4 * 0.5 * (1 + std::cos(M_PI * 0.25)), 1e-9);
  float lr;
  EXPECT_EQ(ptrain_lr_warmup_cosine(0, 20, 10, 1.0f, 0.0f, &lr),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

} // namespace
