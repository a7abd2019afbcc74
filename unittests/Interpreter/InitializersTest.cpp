//===- InitializersTest.cpp - ONNX tensor data on the bundled GPT ---------===//
//
// Reads the bundled model's files (models/gpt): external-data initializers and the TensorProto test data.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Import/ONNX/Initializers.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir::ptrain;

namespace {

const std::string kGPT = std::string(PTRAIN_SOURCE_DIR) + "/models/gpt/";

TEST(ONNXData, ReadsTensorProtoFiles) {
  llvm::Expected<interp::Tensor> ids = onnx_data::readTensorProtoFile(kGPT + "test_data_set_0/input_0.pb");
  ASSERT_TRUE(static_cast<bool>(ids)) << llvm::toString(ids.takeError());
  EXPECT_EQ(ids->getDType(), interp::DType::I64);
  EXPECT_EQ(ids->getShape(), (llvm::ArrayRef<int64_t>{4, 64}));
  // "The Zen of Python" as bytes (models/gpt/README.md).
  EXPECT_EQ(ids->ints()[0], 'T');
  EXPECT_EQ(ids->ints()[1], 'h');
  EXPECT_EQ(ids->ints()[4], 'Z');

  llvm::Expected<interp::Tensor> logits = onnx_data::readTensorProtoFile(kGPT + "test_data_set_0/output_0.pb");
  ASSERT_TRUE(static_cast<bool>(logits)) << llvm::toString(logits.takeError());
  EXPECT_EQ(logits->getTypeString(), "tensor<4x64x256xf32>");
  EXPECT_TRUE(std::isfinite(logits->maxAbs()));
  EXPECT_GT(logits->maxAbs(), 0.0);
}

TEST(ONNXData, ReadsExternalInitializers) {
  llvm::Expected<onnx_data::ONNXInitializers> inits = onnx_data::ONNXInitializers::open(kGPT + "gpt.onnx");
  ASSERT_TRUE(static_cast<bool>(inits)) << llvm::toString(inits.takeError());
  EXPECT_EQ(inits->getNames().size(), 52u);
  EXPECT_TRUE(inits->contains("wpe.weight"));
  llvm::Expected<interp::Tensor> wte = inits->read("wte.weight");
  ASSERT_TRUE(static_cast<bool>(wte)) << llvm::toString(wte.takeError());
  EXPECT_EQ(wte->getTypeString(), "tensor<256x128xf32>");
  // The LayerNorm weight at offset 163840 is freshly initialized: all ones.
  llvm::Expected<interp::Tensor> ln = inits->read("blocks.0.ln_1.weight");
  ASSERT_TRUE(static_cast<bool>(ln)) << llvm::toString(ln.takeError());
  EXPECT_EQ(ln->getTypeString(), "tensor<128xf32>");
  for (double v : ln->floats())
    EXPECT_EQ(v, 1.0);
}

TEST(ONNXData, ErrorsNameFileAndInitializer) {
  llvm::Expected<onnx_data::ONNXInitializers> inits = onnx_data::ONNXInitializers::open(kGPT + "gpt.onnx");
  ASSERT_TRUE(static_cast<bool>(inits)) << llvm::toString(inits.takeError());
  llvm::Expected<interp::Tensor> missing = inits->read("lm_head.weight");
  ASSERT_FALSE(static_cast<bool>(missing));
  std::string message = llvm::toString(missing.takeError());
  EXPECT_NE(message.find("gpt.onnx: no initializer named 'lm_head.weight'"), std::string::npos) << message;

  llvm::Expected<onnx_data::ONNXInitializers> none = onnx_data::ONNXInitializers::open(kGPT + "absent.onnx");
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_NE(llvm::toString(none.takeError()).find("absent.onnx: cannot read"), std::string::npos);

  // Markdown text is not a valid protobuf message.
  llvm::Expected<interp::Tensor> text = onnx_data::readTensorProtoFile(kGPT + "README.md");
  ASSERT_FALSE(static_cast<bool>(text));
  EXPECT_NE(llvm::toString(text.takeError()).find("README.md"), std::string::npos);
}

} // namespace
