//===- CodecDescriptorTest.cpp - ptrain_codec_t and serialized codes ------===//

#include "GradCheck.h"

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

} // namespace
