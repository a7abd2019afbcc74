//===- SliceTest.cpp - Slices, inserts, copies ----------------------------===//

#include "GradCheck.h"

#include <cstring>

using namespace ptrain::testing;

namespace {

TEST(Slice, SliceThenInsertRoundTrips) {
  // x [2, 3, 4] as floats; box offsets {1, 1, 2}, size {1, 2, 2}.
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i)
    x[i] = float(i);
  const int64_t dims[] = {2, 3, 4}, offsets[] = {1, 1, 2}, box[] = {1, 2, 2};
  std::vector<float> out(4);
  ASSERT_PTRAIN_OK(ptrain_slice(x.data(), 4, 3, dims, offsets, box, out.data()));
  expectClose(out, Vec{18, 19, 22, 23}, 0, 0, "slice");
  std::vector<float> big(24, -1.0f);
  ASSERT_PTRAIN_OK(ptrain_insert_slice(out.data(), 4, 3, box, offsets, dims,
                                       big.data()));
  for (int i = 0; i < 24; ++i) {
    const bool inside = i == 18 || i == 19 || i == 22 || i == 23;
    EXPECT_EQ(big[i], inside ? float(i) : -1.0f) << i;
  }
}

TEST(Slice, WorksOnInt64AndRejectsOutOfBounds) {
  int64_t tokens[] = {1, 2, 3, 4, 5, 6}, labels[4];
  const int64_t dims[] = {2, 3}, offsets[] = {0, 1}, box[] = {2, 2};
  ASSERT_PTRAIN_OK(ptrain_slice(tokens, 8, 2, dims, offsets, box, labels));
  EXPECT_EQ(labels[0], 2);
  EXPECT_EQ(labels[1], 3);
  EXPECT_EQ(labels[2], 5);
  EXPECT_EQ(labels[3], 6);
  const int64_t tooFar[] = {0, 2};
  EXPECT_EQ(ptrain_slice(tokens, 8, 2, dims, tooFar, box, labels),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "dim 1: the box [2, 4)"), nullptr)
      << ptrain_last_error();
  EXPECT_EQ(ptrain_slice(tokens, 3, 2, dims, offsets, box, labels),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(Copy, CopyAndZero) {
  float a[3] = {1, 2, 3}, b[3] = {};
  ASSERT_PTRAIN_OK(ptrain_copy_bytes(a, sizeof(a), b));
  EXPECT_EQ(b[2], 3.0f);
  ASSERT_PTRAIN_OK(ptrain_zero_bytes(a, sizeof(a)));
  EXPECT_EQ(a[0], 0.0f);
  EXPECT_EQ(a[2], 0.0f);
  EXPECT_EQ(ptrain_copy_bytes(a, -1, b), PTRAIN_ERROR_INVALID_ARGUMENT);
}

} // namespace
