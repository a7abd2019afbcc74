//===- EmbeddedWeightsTest.cpp - embedded weights stay in the model file ---===//
//
// A model with weights in raw_data, written by protobuf itself: the wire-format rewrite
// (ptrain/Import/ONNX/EmbeddedWeights.h) must point every large float initializer at its bytes in the file,
// copy nothing else differently, and ONNXInitializers must read the same values from the mapping.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Import/ONNX/EmbeddedWeights.h"
#include "ptrain/Import/ONNX/Initializers.h"

#include "onnx/onnx_pb.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir::ptrain;

namespace {

class EmbeddedWeights : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("ptrain-embedded", dir));
    onnx::GraphProto *graph = model.mutable_graph();
    graph->set_name("g");
    onnx::NodeProto *node = graph->add_node();
    node->set_op_type("MatMul");
    node->add_input("x");
    node->add_input("w");
    node->add_output("y");
    auto add = [&](const char *name, int type, std::vector<int64_t> dims, const void *data, size_t size) {
      onnx::TensorProto *t = graph->add_initializer();
      t->set_name(name);
      t->set_data_type(type);
      for (int64_t d : dims)
        t->add_dims(d);
      t->set_raw_data(std::string(static_cast<const char *>(data), size));
    };
    for (int i = 0; i < 512 * 4; ++i)
      w.push_back(0.25f * static_cast<float>(i % 97) - 3.0f);
    add("w", onnx::TensorProto::FLOAT, {512, 4}, w.data(), w.size() * 4);
    float bias[4] = {1.5f, -2.0f, 0.0f, 7.0f}; // 16 bytes: stays inline
    add("b", onnx::TensorProto::FLOAT, {4}, bias, sizeof(bias));
    std::vector<int64_t> shape(300, 2); // 2400 bytes of int64: a constant, stays inline
    add("shape", onnx::TensorProto::INT64, {300}, shape.data(), shape.size() * 8);
    std::vector<double> d(200, -0.5); // 1600 bytes of float64: moved
    add("d", onnx::TensorProto::DOUBLE, {200}, d.data(), d.size() * 8);
    model.set_ir_version(8);
    model.add_opset_import()->set_version(17);
    bytes = model.SerializeAsString();
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, "embedded.onnx");
    modelPath = std::string(path);
    std::error_code ec;
    llvm::raw_fd_ostream(modelPath, ec) << bytes;
    ASSERT_FALSE(ec);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  llvm::SmallString<128> dir;
  onnx::ModelProto model;
  std::vector<float> w;
  std::string bytes, modelPath;
};

std::string entry(const onnx::TensorProto &t, const std::string &key) {
  for (const onnx::StringStringEntryProto &e : t.external_data())
    if (e.key() == key)
      return e.value();
  return "";
}

TEST_F(EmbeddedWeights, LargeFloatInitializersPointIntoTheFile) {
  llvm::Expected<onnx_data::ExternalizedWeights> result = onnx_data::externalizeEmbeddedWeights(bytes, "embedded.onnx");
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  EXPECT_EQ(result->tensors, 2);
  EXPECT_EQ(result->bytes, 512u * 4 * 4 + 200 * 8);
  // Only the moved raw_data is gone (plus ~60 bytes of external_data entries per moved tensor).
  EXPECT_LT(result->model.size(), bytes.size() - result->bytes + 2 * 80);

  onnx::ModelProto stripped;
  ASSERT_TRUE(stripped.ParseFromString(result->model));
  EXPECT_EQ(stripped.graph().node(0).op_type(), "MatMul");
  EXPECT_EQ(stripped.opset_import(0).version(), 17);
  ASSERT_EQ(stripped.graph().initializer_size(), 4);
  for (int i = 0; i < 4; ++i) {
    const onnx::TensorProto &before = model.graph().initializer(i), &after = stripped.graph().initializer(i);
    EXPECT_EQ(after.name(), before.name());
    EXPECT_EQ(after.data_type(), before.data_type());
    EXPECT_EQ(std::vector<int64_t>(after.dims().begin(), after.dims().end()),
              std::vector<int64_t>(before.dims().begin(), before.dims().end()));
    bool moved = before.name() == "w" || before.name() == "d";
    EXPECT_EQ(after.data_location() == onnx::TensorProto::EXTERNAL, moved) << before.name();
    if (!moved) {
      EXPECT_EQ(after.raw_data(), before.raw_data()) << before.name();
      continue;
    }
    EXPECT_FALSE(after.has_raw_data());
    EXPECT_EQ(entry(after, "location"), "embedded.onnx");
    uint64_t offset = std::stoull(entry(after, "offset")), length = std::stoull(entry(after, "length"));
    ASSERT_EQ(length, before.raw_data().size());
    EXPECT_EQ(bytes.substr(offset, length), before.raw_data()) << before.name();
  }
}

TEST_F(EmbeddedWeights, InitializersReadTheSameValuesFromTheMapping) {
  llvm::Expected<onnx_data::ONNXInitializers> inits = onnx_data::ONNXInitializers::open(modelPath);
  ASSERT_TRUE(static_cast<bool>(inits)) << llvm::toString(inits.takeError());
  EXPECT_EQ(inits->getNames(), (std::vector<std::string>{"w", "b", "shape", "d"}));
  llvm::Expected<interp::Tensor> wt = inits->read("w");
  ASSERT_TRUE(static_cast<bool>(wt)) << llvm::toString(wt.takeError());
  EXPECT_EQ(wt->getTypeString(), "tensor<512x4xf32>");
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_EQ(wt->floats()[i], static_cast<double>(w[i])) << i;
  llvm::Expected<interp::Tensor> b = inits->read("b");
  ASSERT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  EXPECT_EQ(b->floats()[3], 7.0);
  llvm::Expected<interp::Tensor> d = inits->read("d");
  ASSERT_TRUE(static_cast<bool>(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(d->floats()[199], -0.5);
}

TEST_F(EmbeddedWeights, MalformedWireFormatNamesTheByteOffset) {
  // Cut inside w's raw_data: the graph's length runs past the end of the file.
  std::string cut = bytes.substr(0, bytes.size() / 2);
  llvm::Expected<onnx_data::ExternalizedWeights> result = onnx_data::externalizeEmbeddedWeights(cut, "m.onnx");
  ASSERT_FALSE(static_cast<bool>(result));
  std::string message = llvm::toString(result.takeError());
  EXPECT_NE(message.find("not a valid ONNX model: the ModelProto at byte "), std::string::npos) << message;
  EXPECT_NE(message.find("past the end of the message"), std::string::npos) << message;
  // A wire type ONNX never uses (3, a group start) at the first byte.
  llvm::Expected<onnx_data::ExternalizedWeights> group =
      onnx_data::externalizeEmbeddedWeights(llvm::StringRef("\x0b", 1), "m.onnx");
  ASSERT_FALSE(static_cast<bool>(group));
  EXPECT_NE(llvm::toString(group.takeError()).find("at byte 0 has wire type 3"), std::string::npos);
}

} // namespace
