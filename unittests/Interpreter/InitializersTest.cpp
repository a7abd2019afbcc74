//===- InitializersTest.cpp - ONNX tensor data on the bundled GPT ---------===//
//
// Reads the bundled model's files (models/gpt): external-data initializers and the TensorProto test data.
//
//===----------------------------------------------------------------------===//

#include "SourceDir.h"
#include "ptrain/Import/ONNX/Initializers.h"

#include "onnx/onnx_pb.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir::ptrain;

namespace {

const std::string kGPT = ptrain_test::sourceDir() + "/models/gpt/";

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

/// Writes a model with hand-made initializers (and a 16-byte data file) into a temporary folder.
class MalformedInitializers : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("ptrain-onnx-data", dir));
    onnx::ModelProto model;
    onnx::GraphProto *graph = model.mutable_graph();
    auto add = [&](const char *name, int type, std::initializer_list<int64_t> dims) {
      onnx::TensorProto *t = graph->add_initializer();
      t->set_name(name);
      t->set_data_type(type);
      for (int64_t d : dims)
        t->add_dims(d);
      return t;
    };
    auto external = [](onnx::TensorProto *t, const std::string &location, const char *offset, const char *length) {
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      for (auto [key, value] :
           {std::pair<const char *, std::string>{"location", location}, {"offset", offset}, {"length", length}}) {
        onnx::StringStringEntryProto *e = t->add_external_data();
        e->set_key(key);
        e->set_value(value);
      }
    };
    external(add("ok", onnx::TensorProto::FLOAT, {2}), "w.bin", "8", "8");
    external(add("past_end", onnx::TensorProto::FLOAT, {4}), "w.bin", "8", "16");
    external(add("absolute", onnx::TensorProto::FLOAT, {1}), "/etc/passwd", "0", "4");
    external(add("no_file", onnx::TensorProto::FLOAT, {1}), "missing.bin", "0", "4");
    add("bytes", onnx::TensorProto::UINT8, {1})->set_raw_data(std::string(1, '\0'));
    // 1.5 as bfloat16 (0x3FC0) and as IEEE half (0x3E00): in raw_data (little-endian) and in int32_data.
    add("bf16_raw", onnx::TensorProto::BFLOAT16, {1})->set_raw_data(std::string("\xC0\x3F", 2));
    add("bf16_int32", onnx::TensorProto::BFLOAT16, {1})->add_int32_data(0x3FC0);
    add("half_raw", onnx::TensorProto::FLOAT16, {1})->set_raw_data(std::string("\x00\x3E", 2));
    onnx::TensorProto *mask = add("mask", onnx::TensorProto::BOOL, {2});
    mask->set_raw_data(std::string("\x01\x00", 2));
    onnx::TensorProto *shortData = add("short", onnx::TensorProto::INT64, {3});
    shortData->add_int64_data(1);
    shortData->add_int64_data(2);
    onnx::TensorProto *ints = add("ints", onnx::TensorProto::INT32, {2});
    ints->add_int32_data(-7);
    ints->add_int32_data(9);

    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, "m.onnx");
    modelPath = std::string(path);
    std::error_code ec;
    llvm::raw_fd_ostream(modelPath, ec) << model.SerializeAsString();
    ASSERT_FALSE(ec);
    llvm::SmallString<128> data(dir);
    llvm::sys::path::append(data, "w.bin");
    float values[4] = {0.0f, 0.0f, 1.5f, -2.0f};
    llvm::raw_fd_ostream(data, ec).write(reinterpret_cast<const char *>(values), sizeof(values));
    ASSERT_FALSE(ec);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::string errorOf(llvm::StringRef name) {
    llvm::Expected<onnx_data::ONNXInitializers> inits = onnx_data::ONNXInitializers::open(modelPath);
    EXPECT_TRUE(static_cast<bool>(inits));
    if (!inits)
      return llvm::toString(inits.takeError());
    llvm::Expected<interp::Tensor> value = inits->read(name);
    if (value) {
      ADD_FAILURE() << "expected an error for " << name.str();
      return "";
    }
    return llvm::toString(value.takeError());
  }

  llvm::SmallString<128> dir;
  std::string modelPath;
};

TEST_F(MalformedInitializers, GoodEntriesDecode) {
  onnx_data::ONNXInitializers inits = llvm::cantFail(onnx_data::ONNXInitializers::open(modelPath));
  interp::Tensor ok = llvm::cantFail(inits.read("ok"));
  EXPECT_EQ(ok.floats()[0], 1.5);
  EXPECT_EQ(ok.floats()[1], -2.0);
  interp::Tensor ints = llvm::cantFail(inits.read("ints"));
  EXPECT_EQ(ints.getTypeString(), "tensor<2xi32>");
  EXPECT_EQ(ints.ints()[0], -7);
  // bf16 in raw_data and in int32_data decode to the same value.
  interp::Tensor raw = llvm::cantFail(inits.read("bf16_raw")), bits = llvm::cantFail(inits.read("bf16_int32"));
  EXPECT_EQ(raw.getTypeString(), "tensor<1xbf16>");
  EXPECT_EQ(raw.floats()[0], 1.5);
  EXPECT_EQ(bits.floats()[0], 1.5);
  interp::Tensor half = llvm::cantFail(inits.read("half_raw"));
  EXPECT_EQ(half.getTypeString(), "tensor<1xf16>");
  EXPECT_EQ(half.floats()[0], 1.5);
  interp::Tensor mask = llvm::cantFail(inits.read("mask"));
  EXPECT_EQ(mask.getTypeString(), "tensor<2xi1>");
  EXPECT_EQ(mask.ints()[0], 1);
  EXPECT_EQ(mask.ints()[1], 0);
}

TEST_F(MalformedInitializers, ErrorsNameTheProblem) {
  EXPECT_NE(errorOf("past_end").find("initializer 'past_end' has external data [8, 24) past the end"),
            std::string::npos);
  EXPECT_NE(errorOf("absolute").find("absolute external data location"), std::string::npos);
  EXPECT_NE(errorOf("no_file").find("missing.bin', which cannot be read"), std::string::npos);
  EXPECT_NE(errorOf("bytes").find("unsupported data type 2 (UINT8)"), std::string::npos);
  EXPECT_NE(errorOf("short").find("initializer 'short' holds 2 values, the shape 3 needs 3"), std::string::npos);
}

} // namespace
