//===- CodecAttrTest.cpp - codec attributes through their C++ API --------===//
//
// What the compression passes and the lowering ask a codec: code types, state, parameters, summability and
// the bytes a code takes on the wire, for the shapes of the papers (Optimus-CC's hidden 1920 and 3072 with
// n = 1024 rows).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

class CodecAttrTest : public ::testing::Test {
protected:
  CodecAttrTest() { ctx.loadDialect<PTrainDialect>(); }

  RankedTensorType f32(ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, Float32Type::get(&ctx)); }

  /// Bytes all codes of `codec` take for `type`.
  int64_t codeBytes(CodecAttrInterface codec, RankedTensorType type) {
    int64_t bytes = 0;
    for (Type t : codec.getCodeTypes(type)) {
      auto tensor = cast<RankedTensorType>(t);
      bytes += tensor.getNumElements() * tensor.getElementTypeBitWidth() / 8;
    }
    return bytes;
  }

  /// Collects the diagnostics `verifyForType` reports.
  std::string verifyMessage(CodecAttrInterface codec, RankedTensorType type) {
    std::string message;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      message = diag.str();
      return success();
    });
    auto loc = UnknownLoc::get(&ctx);
    if (succeeded(codec.verifyForType([&] { return emitError(loc); }, type)))
      return "";
    return message;
  }

  MLIRContext ctx;
};

TEST_F(CodecAttrTest, PowerSGDRatioMatchesOptimusCC) {
  // Optimus-CC section 4.1 with rank 16 and n = 1024: n*m / (r*(n+m)) is about 42x at hidden 1920 and 48x
  // at hidden 3072.
  auto codec = PowerSGDAttr::get(&ctx, 16, nullptr, nullptr);
  for (auto [hidden, expected] : {std::pair<int64_t, double>{1920, 41.7}, {3072, 48.0}}) {
    auto type = f32({1024, hidden});
    ASSERT_EQ(verifyMessage(codec, type), "");
    double ratio = static_cast<double>(type.getNumElements() * 4) / codeBytes(codec, type);
    EXPECT_NEAR(ratio, expected, 0.1) << "hidden " << hidden;
  }
}

TEST_F(CodecAttrTest, PowerSGDWarmStartKeepsQ) {
  auto type = f32({4, 64, 128});
  auto warm = PowerSGDAttr::get(&ctx, 8, nullptr, nullptr);
  auto cold = PowerSGDAttr::get(&ctx, 8, BoolAttr::get(&ctx, false), nullptr);
  ASSERT_EQ(warm.getEncoderStateTypes(type).size(), 1u);
  EXPECT_EQ(warm.getEncoderStateTypes(type).front(), f32({128, 8}));
  EXPECT_TRUE(cold.getEncoderStateTypes(type).empty());
  EXPECT_TRUE(warm.getDecoderStateTypes(type).empty());
  EXPECT_TRUE(cast<CodecAttrInterface>(warm).isSummable());
}

TEST_F(CodecAttrTest, PowerSGDRankAboveMinNMIsRejected) {
  auto codec = PowerSGDAttr::get(&ctx, 65, nullptr, nullptr);
  EXPECT_NE(verifyMessage(codec, f32({64, 128})).find("exceeds min(n, m) = 64"), std::string::npos);
}

TEST_F(CodecAttrTest, MatrixViewPicksRowsAndColumns) {
  auto view = MatrixViewAttr::get(&ctx, {2}, {0, 1});
  auto nm = MatrixViewAttr::getMatrixShape(view, f32({4, 64, 128}), nullptr);
  ASSERT_TRUE(succeeded(nm));
  EXPECT_EQ(nm->first, 128);
  EXPECT_EQ(nm->second, 256);
  auto defaults = MatrixViewAttr::getMatrixShape(nullptr, f32({4, 64, 128}), nullptr);
  EXPECT_EQ(defaults->first, 256);
  EXPECT_EQ(defaults->second, 128);
}

TEST_F(CodecAttrTest, SparsityCodesAndSummability) {
  auto type = f32({64, 128});
  auto topk = TopKAttr::get(&ctx, 0, FloatAttr::get(Float64Type::get(&ctx), 0.01));
  // ceil(0.01 * 8192) = 82 values of 4 bytes and 82 int32 indices.
  EXPECT_EQ(topk.getKFor(type.getNumElements()), 82);
  EXPECT_EQ(codeBytes(topk, type), 82 * 8);
  EXPECT_FALSE(cast<CodecAttrInterface>(topk).isSummable());

  // A shared seed sends no indices and is summable; both sides keep a counter.
  auto randk = RandKAttr::get(&ctx, 82, nullptr, 42);
  EXPECT_EQ(codeBytes(randk, type), 82 * 4);
  EXPECT_TRUE(cast<CodecAttrInterface>(randk).isSummable());
  EXPECT_EQ(randk.getEncoderStateTypes(type).size(), 1u);
  EXPECT_EQ(randk.getDecoderStateTypes(type).size(), 1u);
}

TEST_F(CodecAttrTest, QuantizationPacksBits) {
  auto type = f32({4, 64, 128});
  for (int64_t bits : {2, 4, 8}) {
    auto codec = QuantAttr::get(&ctx, bits, QuantGranularity::Channel, 0, nullptr, nullptr);
    // Packed values plus one fp32 scale per hidden channel.
    EXPECT_EQ(codeBytes(codec, type), type.getNumElements() * bits / 8 + 128 * 4) << bits << " bits";
    EXPECT_FALSE(cast<CodecAttrInterface>(codec).isSummable());
  }
  auto block = QuantAttr::get(&ctx, 8, QuantGranularity::Block, 100, BoolAttr::get(&ctx, false), nullptr);
  // 32768 / 100 rounds up to 328 blocks, each with a scale and a zero point.
  EXPECT_EQ(block.getNumScales(type), 328);
  EXPECT_EQ(block.getCodeTypes(type).size(), 3u);
}

TEST_F(CodecAttrTest, CastHalvesBytesAndLinearAEHasParams) {
  auto type = f32({4, 64, 128});
  auto cast16 = CastAttr::get(&ctx, BFloat16Type::get(&ctx));
  EXPECT_EQ(codeBytes(cast16, type), type.getNumElements() * 2);
  EXPECT_TRUE(cast<CodecAttrInterface>(cast16).isSummable());

  auto ae = LinearAEAttr::get(&ctx, 50, nullptr);
  EXPECT_EQ(ae.getCodeTypes(type).front(), f32({256, 50}));
  EXPECT_EQ(ae.getEncoderParamTypes(type).front(), f32({128, 50}));
  EXPECT_EQ(ae.getDecoderParamTypes(type).front(), f32({50, 128}));
}

// Codecs on 16-bit traffic (docs/Compression.md, "Codecs on 16-bit traffic"): what each codec gives for a bf16
// input of a 4 x 64 x 128 message, against the same message in f32.
TEST_F(CodecAttrTest, SixteenBitInputsKeepF32FactorsScalesAndResiduals) {
  auto wide = f32({4, 64, 128});
  auto bf16 = RankedTensorType::get({4, 64, 128}, BFloat16Type::get(&ctx));
  // The residual and the compute type are f32; an f32 tensor is its own.
  EXPECT_EQ(getCodecComputeType(bf16), wide);
  EXPECT_EQ(getCodecComputeType(wide), wide);
  // PowerSGD: P, Q and the warm start stay f32.
  auto powersgd = PowerSGDAttr::get(&ctx, 4, nullptr, nullptr);
  EXPECT_EQ(powersgd.getCodeTypes(bf16), powersgd.getCodeTypes(wide));
  EXPECT_EQ(powersgd.getEncoderStateTypes(bf16), powersgd.getEncoderStateTypes(wide));
  // Top-k: 2-byte values and int32 indices, 6 bytes a kept value instead of 8; rand-k: 2 instead of 4.
  auto topk = TopKAttr::get(&ctx, 0, FloatAttr::get(Float64Type::get(&ctx), 0.25));
  EXPECT_EQ(codeBytes(topk, bf16), 8192 * 6);
  EXPECT_EQ(codeBytes(topk, wide), 8192 * 8);
  auto randk = RandKAttr::get(&ctx, 82, nullptr, 42);
  EXPECT_EQ(codeBytes(randk, bf16), 82 * 2);
  // Quantization and TAH-Quant: the same codes as the widened tensor.
  auto quant = QuantAttr::get(&ctx, 8, QuantGranularity::Block, 64, nullptr, nullptr);
  EXPECT_EQ(quant.getCodeTypes(bf16), quant.getCodeTypes(wide));
  auto tah = TahQuantAttr::get(&ctx, 64, 3, 4, nullptr);
  EXPECT_EQ(tah.getCodeTypes(bf16), tah.getCodeTypes(wide));
  // The cast codec and the linear autoencoder refuse a 16-bit input, by name.
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto emit = [&] { return emitError(UnknownLoc::get(&ctx)); };
  auto cast16 = CastAttr::get(&ctx, BFloat16Type::get(&ctx));
  EXPECT_TRUE(succeeded(cast16.verifyForType(emit, wide)));
  EXPECT_TRUE(failed(cast16.verifyForType(emit, bf16)));
  EXPECT_EQ(message, "cast codec 'bf16' on the 16-bit input 'tensor<4x64x128xbf16>' saves no bytes: a bf16 or f16 "
                     "tensor travels uncompressed instead");
  EXPECT_TRUE(failed(LinearAEAttr::get(&ctx, 50, nullptr).verifyForType(emit, bf16)));
}

TEST_F(CodecAttrTest, AttributeVerifiersRejectBadParameters) {
  // getChecked reports through the diagnostic handler and returns null instead of building a bad codec.
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto loc = UnknownLoc::get(&ctx);
  auto emit = [&] { return emitError(loc); };
  EXPECT_FALSE(QuantAttr::getChecked(emit, &ctx, int64_t{3}, QuantGranularity::Tensor, int64_t{0}, BoolAttr(),
                                      MatrixViewAttr()));
  EXPECT_EQ(message, "quantization bits must be 2, 4 or 8, got 3");
  EXPECT_FALSE(PowerSGDAttr::getChecked(emit, &ctx, int64_t{0}, BoolAttr(), MatrixViewAttr()));
  EXPECT_EQ(message, "PowerSGD rank must be >= 1, got 0");
  EXPECT_FALSE(CastAttr::getChecked(emit, &ctx, Type(Float32Type::get(&ctx))));
  EXPECT_EQ(message, "cast codec target must be f16 or bf16, got 'f32'");
}

} // namespace
