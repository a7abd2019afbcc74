//===- CodecDescriptorTest.cpp - ptrain_codec_t and serialized codes ------===//

#include "GradCheck.h"
#include "cpu/codecs/Cast.h"

#include <cstring>

namespace {

ptrain_codec_t makeCodec(ptrain_codec_kind_t kind) {
  ptrain_codec_t c;
  std::memset(&c, 0, sizeof(c));
  c.kind = kind;
  c.batch = 1;
  c.rows = 10;
  c.cols = 30;
  c.rank = 2;
  c.k = 17;
  c.bits = 4;
  c.granularity = PTRAIN_QUANT_BLOCK;
  c.block_size = 64;
  c.symmetric = 0;
  c.cast_dtype = PTRAIN_DTYPE_BF16;
  c.seed = 3;
  return c;
}

TEST(CodecDescriptor, CodeSizesFollowTheLayout) {
  int64_t bytes = 0;
  ptrain_codec_t c = makeCodec(PTRAIN_CODEC_POWERSGD);
  ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
  EXPECT_EQ(bytes, 10 * 2 * 4 + 30 * 2 * 4);
  c = makeCodec(PTRAIN_CODEC_TOPK);
  ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
  EXPECT_EQ(bytes, 72 + 72); // 17 values and 17 indices, each padded to 8
  c = makeCodec(PTRAIN_CODEC_RANDK);
  ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
  EXPECT_EQ(bytes, 72);
  c = makeCodec(PTRAIN_CODEC_QUANT); // 300 4-bit values, 5 blocks, asymmetric
  ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
  EXPECT_EQ(bytes, 152 + 24 + 24);
  c = makeCodec(PTRAIN_CODEC_CAST);
  ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
  EXPECT_EQ(bytes, 600);
}

TEST(CodecDescriptor, EncodeDecodeMatchesTheTypedCalls) {
  std::vector<float> g = ptrain::testing::randomFloats(300, 5);
  for (ptrain_codec_kind_t kind :
       {PTRAIN_CODEC_POWERSGD, PTRAIN_CODEC_TOPK, PTRAIN_CODEC_RANDK, PTRAIN_CODEC_QUANT, PTRAIN_CODEC_CAST}) {
    ptrain_codec_t c = makeCodec(kind);
    int64_t bytes = 0;
    ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
    std::vector<char> code(bytes);
    std::vector<float> e(300, 0.25f), out(300), typed(300, 0.0f);
    int64_t encCounter = 0, decCounter = 0;
    void *state = kind == PTRAIN_CODEC_RANDK ? static_cast<void *>(&encCounter) : nullptr;
    ASSERT_PTRAIN_OK(ptrain_codec_encode(&c, g.data(), e.data(), state, code.data()));
    ASSERT_PTRAIN_OK(
        ptrain_codec_decode(&c, code.data(), kind == PTRAIN_CODEC_RANDK ? &decCounter : nullptr, out.data()));
    // e' = (g + e) - decode(code) for every codec.
    for (int64_t i = 0; i < 300; ++i)
      ASSERT_NEAR(e[i], g[i] + 0.25f - out[i], 1e-5) << "codec " << kind << " at " << i;
  }
  ptrain_codec_t bad = makeCodec(PTRAIN_CODEC_POWERSGD);
  bad.rank = 11;
  int64_t bytes;
  EXPECT_EQ(ptrain_codec_code_bytes(&bad, &bytes), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("rank 11 must be in [1, min(rows, cols) = 10]"), std::string::npos);
}

// Descriptor version 2 (PTRAIN_CODEC_DESCRIPTOR_VERSION): value_dtype appended; a version-1 initializer (15 fields,
// the rest zero) still describes 4-byte values.
TEST(CodecDescriptor, AVersionOneInitializerSendsF32Values) {
  static_assert(PTRAIN_CODEC_DESCRIPTOR_VERSION == 2, "update this test with the descriptor");
  const ptrain_codec_t v1 = {PTRAIN_CODEC_TOPK, 0, 0, 0, 0, 0, 1, 10, 30, 0, 17, 0, 3ULL, 0, 0};
  EXPECT_EQ(v1.value_dtype, PTRAIN_DTYPE_F32);
  int64_t bytes = 0;
  ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&v1, &bytes));
  EXPECT_EQ(bytes, 72 + 72);
}

TEST(CodecDescriptor, HalfValuesAreTwoBytesEach) {
  for (ptrain_dtype_t dtype : {PTRAIN_DTYPE_BF16, PTRAIN_DTYPE_F16}) {
    int64_t bytes = 0;
    ptrain_codec_t c = makeCodec(PTRAIN_CODEC_TOPK);
    c.value_dtype = dtype;
    ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
    EXPECT_EQ(bytes, 40 + 72); // 17 2-byte values padded to 40, 17 int32 indices padded to 72
    c = makeCodec(PTRAIN_CODEC_RANDK);
    c.value_dtype = dtype;
    ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
    EXPECT_EQ(bytes, 40);
  }
}

// The 16-bit values are the f32 encode's values rounded to nearest even (the same positions), and e' = g + e -
// decode(code) exactly: the residual keeps what the rounding lost.
TEST(CodecDescriptor, HalfValuesRoundTheF32ValuesAndTheResidualKeepsTheLoss) {
  std::vector<float> g = ptrain::testing::randomFloats(300, 11);
  for (ptrain_dtype_t dtype : {PTRAIN_DTYPE_BF16, PTRAIN_DTYPE_F16})
    for (ptrain_codec_kind_t kind : {PTRAIN_CODEC_TOPK, PTRAIN_CODEC_RANDK}) {
      ptrain_codec_t wide = makeCodec(kind), half = makeCodec(kind);
      half.value_dtype = dtype;
      int64_t wideBytes = 0, halfBytes = 0;
      ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&wide, &wideBytes));
      ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&half, &halfBytes));
      std::vector<char> wideCode(wideBytes), halfCode(halfBytes);
      std::vector<float> eWide(300, 0.1f), eHalf(300, 0.1f), out(300);
      int64_t c1 = 4, c2 = 4, c3 = 4;
      void *s1 = kind == PTRAIN_CODEC_RANDK ? &c1 : nullptr, *s2 = kind == PTRAIN_CODEC_RANDK ? &c2 : nullptr;
      ASSERT_PTRAIN_OK(ptrain_codec_encode(&wide, g.data(), eWide.data(), s1, wideCode.data()));
      ASSERT_PTRAIN_OK(ptrain_codec_encode(&half, g.data(), eHalf.data(), s2, halfCode.data()));
      const auto *wv = reinterpret_cast<const float *>(wideCode.data());
      const auto *hv = reinterpret_cast<const uint16_t *>(halfCode.data());
      int64_t inexact = 0;
      for (int64_t j = 0; j < 17; ++j) {
        const uint16_t want =
            dtype == PTRAIN_DTYPE_F16 ? ptrain::runtime::floatToHalf(wv[j]) : ptrain::runtime::floatToBf16(wv[j]);
        ASSERT_EQ(hv[j], want) << "value " << j;
        const float back =
            dtype == PTRAIN_DTYPE_F16 ? ptrain::runtime::halfToFloat(hv[j]) : ptrain::runtime::bf16ToFloat(hv[j]);
        inexact += back != wv[j];
      }
      EXPECT_GT(inexact, 10) << "the test's values must lose bits when rounded";
      if (kind == PTRAIN_CODEC_TOPK) {
        EXPECT_EQ(std::memcmp(wideCode.data() + 72, halfCode.data() + 40, 17 * 4), 0) << "the same indices";
      }
      ASSERT_PTRAIN_OK(
          ptrain_codec_decode(&half, halfCode.data(), kind == PTRAIN_CODEC_RANDK ? &c3 : nullptr, out.data()));
      for (int64_t i = 0; i < 300; ++i)
        ASSERT_EQ(eHalf[i], (g[i] + 0.1f) - out[i]) << "kind " << kind << " dtype " << dtype << " at " << i;
    }
}

TEST(CodecDescriptor, ABadValueDtypeIsAnErrorNamingTheField) {
  int64_t bytes = 0;
  ptrain_codec_t c = makeCodec(PTRAIN_CODEC_TOPK);
  c.value_dtype = PTRAIN_DTYPE_F64;
  EXPECT_EQ(ptrain_codec_code_bytes(&c, &bytes), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("topk: value_dtype must be f32 (0), f16 (3) or bf16 (4), got 1"),
            std::string::npos)
      << ptrain_last_error();
  for (ptrain_codec_kind_t kind : {PTRAIN_CODEC_QUANT, PTRAIN_CODEC_CAST, PTRAIN_CODEC_POWERSGD}) {
    c = makeCodec(kind);
    c.value_dtype = PTRAIN_DTYPE_BF16;
    std::vector<float> g(300, 1.0f);
    std::vector<char> code(4096);
    EXPECT_EQ(ptrain_codec_encode(&c, g.data(), nullptr, nullptr, code.data()), PTRAIN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ptrain_last_error()).find("value_dtype must be f32 (0): only topk and randk send 16-bit"),
              std::string::npos)
        << ptrain_last_error();
  }
  c = makeCodec(PTRAIN_CODEC_RANDK);
  c.value_dtype = PTRAIN_DTYPE_BF16;
  std::vector<float> g(300, 1.0f), out(300);
  std::vector<char> code(40);
  EXPECT_EQ(ptrain_codec_encode(&c, g.data(), nullptr, nullptr, code.data()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("randk needs its counter state"), std::string::npos);
  EXPECT_EQ(ptrain_codec_decode(&c, code.data(), nullptr, out.data()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("randk needs its counter state"), std::string::npos);
}

} // namespace
