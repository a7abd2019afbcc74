//===- GradScalerTest.cpp - fp16 dynamic loss scaling, Megatron's rules ---===//
//
// ptrain_grad_unscale_check_f32 and ptrain_grad_scaler_{init,update} against
// Megatron-LM's DynamicGradScaler (megatron/core/optimizer/grad_scaler.py):
// an overflow with hysteresis 2 backs off only at the second one, the scale
// halves, never goes below min_scale, and grows back by 2 after
// growth_interval clean steps, which also restore the hysteresis.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include <cmath>
#include <limits>
#include <string>

namespace {

/// Megatron's class, transcribed: the oracle the runtime is compared with step by step.
struct MegatronScaler {
  double scale, minScale, growth, backoff;
  int interval, hysteresis, growthTracker = 0, hysteresisTracker;
  MegatronScaler(double initial, double minScale, double growth, double backoff, int interval, int hysteresis)
      : scale(initial), minScale(minScale), growth(growth), backoff(backoff), interval(interval),
        hysteresis(hysteresis), hysteresisTracker(hysteresis) {}
  void update(bool foundInf) {
    if (foundInf) {
      growthTracker = 0;
      hysteresisTracker -= 1;
      if (hysteresisTracker <= 0)
        scale = std::max(scale * backoff, minScale);
    } else {
      growthTracker += 1;
      if (growthTracker == interval) {
        growthTracker = 0;
        hysteresisTracker = hysteresis;
        scale = scale * growth;
      }
    }
  }
};

TEST(GradScaler, InitIsMegatrons) {
  float state[3] = {0, 0, 0};
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_init(0x1p32f, 2, state));
  EXPECT_EQ(state[0], 4294967296.0f);
  EXPECT_EQ(state[1], 0.0f);
  EXPECT_EQ(state[2], 2.0f);
}

TEST(GradScaler, SkipsBacksOffAndGrowsBack) {
  // interval 4 so that growth shows within a few steps; Megatron's default is 1000.
  float state[3];
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_init(65536.0f, 2, state));
  // One overflow: hysteresis 2 -> 1, the scale stays; a second: backs off to 32768.
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_update(state, 1.0f, 2.0f, 0.5f, 4, 2, 1.0f));
  EXPECT_EQ(state[0], 65536.0f);
  EXPECT_EQ(state[2], 1.0f);
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_update(state, 1.0f, 2.0f, 0.5f, 4, 2, 1.0f));
  EXPECT_EQ(state[0], 32768.0f);
  EXPECT_EQ(state[2], 0.0f);
  // Four clean steps: grows back to 65536 and restores the hysteresis.
  for (int i = 0; i < 3; ++i) {
    ASSERT_PTRAIN_OK(ptrain_grad_scaler_update(state, 0.0f, 2.0f, 0.5f, 4, 2, 1.0f));
    EXPECT_EQ(state[0], 32768.0f);
    EXPECT_EQ(state[1], static_cast<float>(i + 1));
  }
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_update(state, 0.0f, 2.0f, 0.5f, 4, 2, 1.0f));
  EXPECT_EQ(state[0], 65536.0f);
  EXPECT_EQ(state[1], 0.0f);
  EXPECT_EQ(state[2], 2.0f);
}

TEST(GradScaler, MatchesMegatronOnARandomSequence) {
  float state[3];
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_init(0x1p32f, 2, state));
  // interval 16 and overflows on 5% of the steps after a burst: the scale reaches min_scale, grows back 64 times
  // and stays within fp32 (2^0 .. 2^32).
  MegatronScaler ref(0x1p32, 1.0, 2.0, 0.5, 16, 2);
  uint32_t x = 12345;
  for (int step = 0; step < 2000; ++step) {
    x = x * 1664525u + 1013904223u;
    const bool inf = (x >> 24) < (step < 400 ? 160u : 12u); // a burst of overflows, then rare ones
    ref.update(inf);
    ASSERT_PTRAIN_OK(ptrain_grad_scaler_update(state, inf ? 1.0f : 0.0f, 2.0f, 0.5f, 16, 2, 1.0f));
    ASSERT_EQ(static_cast<double>(state[0]), ref.scale) << "step " << step;
    ASSERT_EQ(static_cast<int>(state[1]), ref.growthTracker) << "step " << step;
    ASSERT_EQ(static_cast<int>(state[2]), ref.hysteresisTracker) << "step " << step;
  }
}

TEST(GradScaler, NeverBelowMinScale) {
  float state[3];
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_init(4.0f, 1, state));
  for (int i = 0; i < 5; ++i)
    ASSERT_PTRAIN_OK(ptrain_grad_scaler_update(state, 1.0f, 2.0f, 0.5f, 1000, 1, 1.0f));
  EXPECT_EQ(state[0], 1.0f);
}

TEST(GradScaler, UnscaleAndCheck) {
  float g[4] = {65536.0f, -32768.0f, 1.0f, 0.0f}, found = 0.0f;
  ASSERT_PTRAIN_OK(ptrain_grad_unscale_check_f32(g, 4, 1.0f / 65536.0f, &found));
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_EQ(g[1], -0.5f);
  EXPECT_EQ(g[2], 0x1p-16f);
  EXPECT_EQ(found, 0.0f);
  // The flag ORs over calls: an inf in a later tensor sets it, a clean tensor after it does not clear it.
  float bad[2] = {std::numeric_limits<float>::infinity(), 1.0f}, nan[1] = {NAN}, clean[1] = {2.0f};
  ASSERT_PTRAIN_OK(ptrain_grad_unscale_check_f32(bad, 2, 0.5f, &found));
  EXPECT_EQ(found, 1.0f);
  ASSERT_PTRAIN_OK(ptrain_grad_unscale_check_f32(clean, 1, 0.5f, &found));
  EXPECT_EQ(found, 1.0f);
  found = 0.0f;
  ASSERT_PTRAIN_OK(ptrain_grad_unscale_check_f32(nan, 1, 0.5f, &found));
  EXPECT_EQ(found, 1.0f);
}

TEST(GradScaler, Errors) {
  float state[3], g[1] = {1.0f}, found = 0.0f;
  EXPECT_EQ(ptrain_grad_scaler_init(0.0f, 2, state), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("initial_scale"), std::string::npos) << ptrain_last_error();
  EXPECT_EQ(ptrain_grad_scaler_init(1.0f, 0, state), PTRAIN_ERROR_INVALID_ARGUMENT);
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_init(1.0f, 2, state));
  EXPECT_EQ(ptrain_grad_scaler_update(state, 0.0f, 1.0f, 0.5f, 1000, 2, 1.0f), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_grad_scaler_update(state, 0.0f, 2.0f, 1.0f, 1000, 2, 1.0f), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_grad_scaler_update(state, 0.0f, 2.0f, 0.5f, 0, 2, 1.0f), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_grad_scaler_update(state, 0.0f, 2.0f, 0.5f, 1000, 2, 0.0f), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_grad_unscale_check_f32(g, 1, 0.0f, &found), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_grad_unscale_check_f32(g, 1, 1.0f, nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
}

// The code generators' forms (ptrain.loss_scale, ptrain.grad_unscale, ptrain.grad_scaler_update): a zero state is
// the initial one, the unscale is out of place (or in place) with inv_scale = fp32(1 / fp64(scale)) and a flag
// reset per call, and the update is ptrain_grad_scaler_update's on a copy.
TEST(GradScaler, CodeGeneratorForms) {
  const float zero[3] = {0.0f, 0.0f, 0.0f};
  float scale = 0.0f;
  ASSERT_PTRAIN_OK(ptrain_loss_scale_f32(zero, 1024.0f, &scale));
  EXPECT_EQ(scale, 1024.0f);
  const float running[3] = {8.0f, 3.0f, 1.0f};
  ASSERT_PTRAIN_OK(ptrain_loss_scale_f32(running, 1024.0f, &scale));
  EXPECT_EQ(scale, 8.0f);

  // 3: 1 / 3 rounded once from fp64, the product rounded in fp32.
  const float three = 3.0f, g[3] = {6.0f, 1.0f, -7.0f};
  const float inv = static_cast<float>(1.0 / 3.0);
  float out[3], found = 5.0f;
  ASSERT_PTRAIN_OK(ptrain_grad_unscale_f32(g, 3, &three, out, &found));
  EXPECT_EQ(found, 0.0f);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(out[i], g[i] * inv) << i;
  float inPlace[2] = {1.0f, std::numeric_limits<float>::infinity()};
  ASSERT_PTRAIN_OK(ptrain_grad_unscale_f32(inPlace, 2, &three, inPlace, &found));
  EXPECT_EQ(found, 1.0f);
  EXPECT_EQ(inPlace[0], inv);

  // From the zero state: init (scale 1024, hysteresis 2), then an overflow keeps the scale (hysteresis 1 left).
  float next[3], overflow = 1.0f, clean = 0.0f;
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_update_f32(zero, &overflow, 1024.0f, 2.0f, 0.5f, 1000, 2, 1.0f, next));
  EXPECT_EQ(next[0], 1024.0f);
  EXPECT_EQ(next[1], 0.0f);
  EXPECT_EQ(next[2], 1.0f);
  // In place: the second overflow halves it; a clean step counts towards the window.
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_update_f32(next, &overflow, 1024.0f, 2.0f, 0.5f, 1000, 2, 1.0f, next));
  EXPECT_EQ(next[0], 512.0f);
  ASSERT_PTRAIN_OK(ptrain_grad_scaler_update_f32(next, &clean, 1024.0f, 2.0f, 0.5f, 1000, 2, 1.0f, next));
  EXPECT_EQ(next[0], 512.0f);
  EXPECT_EQ(next[1], 1.0f);

  EXPECT_EQ(ptrain_loss_scale_f32(zero, 0.0f, &scale), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_grad_unscale_f32(g, 3, nullptr, out, &found), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_grad_scaler_update_f32(zero, &clean, 1024.0f, 2.0f, 1.5f, 1000, 2, 1.0f, next),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("backoff_factor"), std::string::npos) << ptrain_last_error();
}

} // namespace
