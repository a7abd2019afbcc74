//===- CodecMetricsTest.cpp - ptrain_codec_metrics_f32 on known inputs ----===//
//
// The codec telemetry kernel on vectors whose norms and cosines are exact by
// hand (3-4-5 triangles), with and without error feedback, the copy of g for
// the next call (in place over previous_g), a real top-k encode, and the
// argument errors.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/ptrain_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

TEST(CodecMetrics, ErrorFeedbackErrorResidualAndLepCosine) {
  // v = g + e_old = [1, 2, 2, 4], ||v|| = 5; e_new = v - decode = [0, 0, 0, 3]: error 3 / 5, ||e_new|| 3.
  // previous_g - g = [0, 0, 4, 3] (norm 5), e_old = [0, 0, 0, 4] (norm 4): cos = 12 / 20.
  const std::vector<float> g = {1, 2, 2, 0}, eOld = {0, 0, 0, 4}, eNew = {0, 0, 0, 3};
  std::vector<float> previous = {1, 2, 6, 3};
  ptrain_codec_metrics_t m;
  ASSERT_EQ(
      ptrain_codec_metrics_f32(g.data(), eOld.data(), eNew.data(), nullptr, previous.data(), 4, previous.data(), &m),
      PTRAIN_OK);
  EXPECT_DOUBLE_EQ(m.input_norm, 5.0);
  EXPECT_DOUBLE_EQ(m.error, 0.6);
  EXPECT_DOUBLE_EQ(m.residual_norm, 3.0);
  ASSERT_EQ(m.has_lep_cos, 1);
  EXPECT_DOUBLE_EQ(m.lep_cos, 0.6);
  EXPECT_EQ(previous, g); // out_g_copy over previous_g: g for the next call
}

TEST(CodecMetrics, OppositeChangeGivesMinusOne) {
  // e_old = [2, 0], previous_g - g = [-3, 0]: cos = -1.
  const std::vector<float> g = {3, 1}, eOld = {2, 0}, eNew = {1, 0}, previous = {0, 1};
  ptrain_codec_metrics_t m;
  ASSERT_EQ(ptrain_codec_metrics_f32(g.data(), eOld.data(), eNew.data(), nullptr, previous.data(), 2, nullptr, &m),
            PTRAIN_OK);
  ASSERT_EQ(m.has_lep_cos, 1);
  EXPECT_DOUBLE_EQ(m.lep_cos, -1.0);
  // v = [5, 1]: error = 1 / sqrt(26).
  EXPECT_DOUBLE_EQ(m.error, 1.0 / std::sqrt(26.0));
}

TEST(CodecMetrics, WithoutErrorFeedbackFromTheDecodedTensor) {
  // v = g = [3, 4]; decoded [3, 0]: error 4 / 5; no residual, no cosine even with a previous g.
  const std::vector<float> g = {3, 4}, decoded = {3, 0}, previous = {1, 1};
  ptrain_codec_metrics_t m;
  ASSERT_EQ(ptrain_codec_metrics_f32(g.data(), nullptr, nullptr, decoded.data(), previous.data(), 2, nullptr, &m),
            PTRAIN_OK);
  EXPECT_DOUBLE_EQ(m.input_norm, 5.0);
  EXPECT_DOUBLE_EQ(m.error, 0.8);
  EXPECT_DOUBLE_EQ(m.residual_norm, 0.0);
  EXPECT_EQ(m.has_lep_cos, 0);
  EXPECT_DOUBLE_EQ(m.lep_cos, 0.0);
}

TEST(CodecMetrics, ZeroInputAndFirstEncode) {
  // All zero: error 0 (nothing to lose); a zero e_old (the first encode) has no cosine.
  const std::vector<float> zero(3, 0.0f), g = {1, 0, 0}, previous = {0, 1, 0};
  ptrain_codec_metrics_t m;
  ASSERT_EQ(ptrain_codec_metrics_f32(zero.data(), zero.data(), zero.data(), nullptr, nullptr, 3, nullptr, &m),
            PTRAIN_OK);
  EXPECT_DOUBLE_EQ(m.error, 0.0);
  EXPECT_EQ(m.has_lep_cos, 0);
  ASSERT_EQ(ptrain_codec_metrics_f32(g.data(), zero.data(), zero.data(), nullptr, previous.data(), 3, nullptr, &m),
            PTRAIN_OK);
  EXPECT_DOUBLE_EQ(m.error, 0.0);
  EXPECT_EQ(m.has_lep_cos, 0);
}

TEST(CodecMetrics, AfterATopKEncode) {
  // Top-1 of v = [3, -4, 0] keeps -4: decode = [0, -4, 0], e_new = [3, 0, 0], error 3 / 5.
  const std::vector<float> g = {3, -4, 0}, eOld(3, 0.0f);
  std::vector<float> residual = eOld, values(1);
  std::vector<int32_t> indices(1);
  ASSERT_EQ(ptrain_topk_encode_f32(g.data(), residual.data(), 3, 1, values.data(), indices.data()), PTRAIN_OK);
  ptrain_codec_metrics_t m;
  ASSERT_EQ(ptrain_codec_metrics_f32(g.data(), eOld.data(), residual.data(), nullptr, nullptr, 3, nullptr, &m),
            PTRAIN_OK);
  EXPECT_DOUBLE_EQ(m.error, 0.6);
  EXPECT_DOUBLE_EQ(m.residual_norm, 3.0);
}

TEST(CodecMetrics, ArgumentErrors) {
  const std::vector<float> g = {1, 2};
  std::vector<float> copy(2);
  ptrain_codec_metrics_t m;
  auto expectError = [&](ptrain_status_t status, const std::string &text) {
    EXPECT_EQ(status, PTRAIN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ptrain_last_error()).find(text), std::string::npos) << ptrain_last_error();
  };
  expectError(ptrain_codec_metrics_f32(g.data(), nullptr, nullptr, nullptr, nullptr, 2, nullptr, &m),
              "exactly one of 'new_residual'");
  expectError(ptrain_codec_metrics_f32(g.data(), g.data(), g.data(), g.data(), nullptr, 2, nullptr, &m),
              "exactly one of 'new_residual'");
  expectError(ptrain_codec_metrics_f32(g.data(), nullptr, g.data(), nullptr, nullptr, 2, nullptr, &m),
              "needs 'residual'");
  expectError(
      ptrain_codec_metrics_f32(g.data(), nullptr, nullptr, g.data(), nullptr, 2, const_cast<float *>(g.data()), &m),
      "'out_g_copy' must not alias");
  expectError(ptrain_codec_metrics_f32(g.data(), nullptr, nullptr, g.data(), nullptr, -1, nullptr, &m), "'n' must be");
  expectError(ptrain_codec_metrics_f32(nullptr, nullptr, nullptr, g.data(), nullptr, 2, nullptr, &m), "'g' must not");
  expectError(ptrain_codec_metrics_f32(g.data(), nullptr, nullptr, g.data(), nullptr, 2, copy.data(), nullptr),
              "'out_metrics' must not");
}

} // namespace
