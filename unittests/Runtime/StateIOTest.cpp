//===- StateIOTest.cpp - ONNX initial values and checkpoints --------------===//

#include "SourceDir.h"
#include "GradCheck.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

using namespace ptrain::testing;

namespace {

const std::string kGpt = ptrain_test::sourceDir() + "/models/gpt/gpt.onnx";

struct Table {
  std::vector<float> wte = std::vector<float>(256 * 128, 7.0f);
  std::vector<float> lnb = std::vector<float>(128, 7.0f);
  std::vector<float> moment = std::vector<float>(128, 7.0f);
  int64_t step = 7;
  int64_t wteDims[2] = {256, 128}, vecDims[1] = {128};
  std::vector<ptrain_state_desc_t> desc() {
    return {
        {"wte.weight", wte.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 2, wteDims},
        {"blocks.0.ln_1.bias", lnb.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 1, vecDims},
        {"blocks.0.ln_1.bias/adam_m", moment.data(), PTRAIN_DTYPE_F32,
         PTRAIN_STATE_OPTIMIZER_MOMENT, 1, vecDims},
        {"step", &step, PTRAIN_DTYPE_I64, PTRAIN_STATE_STEP_COUNTER, 0, nullptr},
    };
  }
};

TEST(StateIO, InitLoadsParametersFromExternalDataAndZeroesTheRest) {
  Table t;
  auto d = t.desc();
  ASSERT_PTRAIN_OK(ptrain_state_init_onnx(d.data(), d.size(), kGpt.c_str()));
  double norm = 0;
  for (float v : t.wte)
    norm += double(v) * v;
  EXPECT_GT(norm, 1.0) << "wte.weight was loaded";
  EXPECT_NE(t.wte[0], 7.0f);
  for (float v : t.lnb)
    EXPECT_EQ(v, 0.0f) << "GPT biases start at zero";
  for (float v : t.moment)
    EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(t.step, 0);
}

TEST(StateIO, InitErrorsNameTheKeyAndModifyNothing) {
  Table t;
  auto d = t.desc();
  d[1].key = "no.such.weight";
  EXPECT_EQ(ptrain_state_init_onnx(d.data(), d.size(), kGpt.c_str()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "no initializer named 'no.such.weight'"),
            nullptr)
      << ptrain_last_error();
  EXPECT_EQ(t.wte[0], 7.0f) << "nothing is modified on error";
  d = t.desc();
  t.wteDims[0] = 255;
  EXPECT_EQ(ptrain_state_init_onnx(d.data(), d.size(), kGpt.c_str()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "'wte.weight'"), nullptr)
      << ptrain_last_error();
  EXPECT_EQ(ptrain_state_init_onnx(d.data(), d.size(), "/nonexistent.onnx"),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(StateIO, CheckpointRoundTripsByKey) {
  Table a;
  for (size_t i = 0; i < a.wte.size(); ++i)
    a.wte[i] = float(i) * 0.5f;
  a.step = 42;
  auto da = a.desc();
  const std::string path = ::testing::TempDir() + "ptrain_ckpt_roundtrip.bin";
  ASSERT_PTRAIN_OK(ptrain_checkpoint_save(da.data(), da.size(), path.c_str()));
  Table b;
  b.step = 0;
  auto db = b.desc();
  // Keys, not positions, decide: load into a reversed table.
  std::reverse(db.begin(), db.end());
  ASSERT_PTRAIN_OK(ptrain_checkpoint_load(db.data(), db.size(), path.c_str()));
  EXPECT_EQ(b.wte, a.wte);
  EXPECT_EQ(b.step, 42);
  std::remove(path.c_str());
}

TEST(StateIO, CheckpointDetectsCorruptionAndMissingKeys) {
  Table a;
  auto d = a.desc();
  const std::string path = ::testing::TempDir() + "ptrain_ckpt_corrupt.bin";
  ASSERT_PTRAIN_OK(ptrain_checkpoint_save(d.data(), d.size(), path.c_str()));
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // A flipped data byte fails the checksum.
  std::string bad = bytes;
  bad[bad.size() / 2] ^= 1;
  { std::ofstream(path, std::ios::binary) << bad; }
  Table b;
  auto db = b.desc();
  EXPECT_EQ(ptrain_checkpoint_load(db.data(), db.size(), path.c_str()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "checksum mismatch"), nullptr)
      << ptrain_last_error();
  EXPECT_EQ(b.step, 7) << "nothing is modified on error";
  // A table with a state the file lacks.
  { std::ofstream(path, std::ios::binary) << bytes; }
  db[3].key = "step2";
  EXPECT_EQ(ptrain_checkpoint_load(db.data(), db.size(), path.c_str()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "'step'"), nullptr)
      << ptrain_last_error();
  std::remove(path.c_str());
}

} // namespace
