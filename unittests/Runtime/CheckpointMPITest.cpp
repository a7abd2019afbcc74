//===- CheckpointMPITest.cpp - Resuming a compressed run is bit-exact -----===//
//
// A data-parallel loop at the runtime API: gradients from the parameters and
// the data position, averaged by a PowerSGD compressed all-reduce (error
// feedback, warm-start Q), then AdamW. Saving after 3 steps with
// ptrain_checkpoint_save_ranks, restoring into fresh (zeroed) state and
// running 2 more steps must give every state bit for bit as 5 straight steps:
// parameters, moments, codec residual and Q, step counter and data position.
// Runs in PTrainRuntimeCollectiveTests (4 and 8 ranks).
//
//===----------------------------------------------------------------------===//

#include "MPITest.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

using namespace ptrain::testing;

constexpr int64_t kRows = 32, kCols = 24, kRank = 2, kN = kRows * kCols;
const int64_t kMatDims[2] = {kRows, kCols};
const int64_t kQDims[2] = {kCols, kRank};
const int64_t kOne[1] = {1};

struct TrainingRun {
  std::vector<float> w = randomFloats(kN, 1), m = std::vector<float>(kN), v = std::vector<float>(kN),
                     residual = std::vector<float>(kN), q = std::vector<float>(kCols * kRank);
  int64_t step = 0, dataPos = 0;

  std::vector<ptrain_state_desc_t> states(bool withResidual = true) {
    std::vector<ptrain_state_desc_t> s = {
        {"w", w.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 2, kMatDims},
        {"w/exp_avg", m.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_OPTIMIZER_MOMENT, 2, kMatDims},
        {"w/exp_avg_sq", v.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_OPTIMIZER_MOMENT, 2, kMatDims},
        {"w/powersgd/q", q.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_CODEC_WARM_START, 2, kQDims},
        {"step", &step, PTRAIN_DTYPE_I64, PTRAIN_STATE_STEP_COUNTER, 1, kOne},
        {"data_position", &dataPos, PTRAIN_DTYPE_I64, PTRAIN_STATE_STEP_COUNTER, 1, kOne},
    };
    if (withResidual)
      s.push_back({"w/powersgd/residual", residual.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_CODEC_RESIDUAL, 2, kMatDims});
    return s;
  }

  void train() {
    std::vector<float> g = randomFloats(kN, static_cast<unsigned>(rank * 100003 + dataPos)), avg(kN);
    for (int64_t i = 0; i < kN; ++i)
      g[i] += 0.01f * w[i];
    ptrain_codec_t c = codecOf(PTRAIN_CODEC_POWERSGD, kRows, kCols);
    c.rank = kRank;
    c.warm_start = 1;
    c.seed = 42;
    ptrain_request_t req;
    ASSERT_PTRAIN_OK(ptrain_compressed_all_reduce_start(world, &c, g.data(), residual.data(), q.data(), avg.data(),
                                                        PTRAIN_REDUCE_AVG, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
    ASSERT_PTRAIN_OK(ptrain_adamw_step_f32(w.data(), avg.data(), m.data(), v.data(), kN, step + 1, 1e-2f, 0.9f, 0.999f,
                                           1e-8f, 0.01f));
    ++step;
    ++dataPos;
  }
};

/// A fresh directory named by rank 0, known to every rank.
std::string sharedTempDir() {
  char name[512] = "";
  if (rank == 0) {
    std::snprintf(name, sizeof(name), "%s/ptrain-ckpt-XXXXXX", std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(name))
      name[0] = '\0';
  }
  std::vector<char> all(sizeof(name) * size);
  ptrain_request_t req;
  EXPECT_EQ(ptrain_all_gather_start(world, name, all.data(), sizeof(name) / 8, PTRAIN_DTYPE_I64, &req), PTRAIN_OK);
  EXPECT_EQ(ptrain_wait(req), PTRAIN_OK);
  return std::string(all.data());
}

TEST(RankedCheckpoint, ResumingAfter3StepsEquals5StraightSteps) {
  TrainingRun straight;
  for (int i = 0; i < 5; ++i)
    ASSERT_NO_FATAL_FAILURE(straight.train());

  TrainingRun first;
  for (int i = 0; i < 3; ++i)
    ASSERT_NO_FATAL_FAILURE(first.train());
  const std::string dir = sharedTempDir();
  ASSERT_FALSE(dir.empty());
  std::vector<ptrain_state_desc_t> saved = first.states();
  ASSERT_PTRAIN_OK(ptrain_checkpoint_save_ranks(world, saved.data(), saved.size(), dir.c_str()));

  TrainingRun resumed;
  resumed.w.assign(kN, 0.0f); // everything comes from the checkpoint
  std::vector<ptrain_state_desc_t> table = resumed.states();
  // A step without the codec residual cannot load it: codec state is part
  // of the checkpoint, and nothing is modified on error.
  std::vector<ptrain_state_desc_t> noResidual = resumed.states(false);
  EXPECT_EQ(ptrain_checkpoint_load_ranks(world, noResidual.data(), noResidual.size(), dir.c_str()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("holds state 'w/powersgd/residual'"), std::string::npos)
      << ptrain_last_error();
  EXPECT_EQ(resumed.step, 0);
  ASSERT_PTRAIN_OK(ptrain_checkpoint_load_ranks(world, table.data(), table.size(), dir.c_str()));
  EXPECT_EQ(resumed.step, 3);
  EXPECT_EQ(resumed.dataPos, 3);
  for (int i = 0; i < 2; ++i)
    ASSERT_NO_FATAL_FAILURE(resumed.train());

  EXPECT_EQ(resumed.w, straight.w);
  EXPECT_EQ(resumed.m, straight.m);
  EXPECT_EQ(resumed.v, straight.v);
  EXPECT_EQ(resumed.residual, straight.residual);
  EXPECT_EQ(resumed.q, straight.q);
  EXPECT_EQ(resumed.step, 5);
  EXPECT_EQ(resumed.dataPos, 5);
  // The residual and Q are live state, not zeros.
  EXPECT_NE(straight.residual, std::vector<float>(kN, 0.0f));

  // A rank file that is not the one the manifest lists is an error naming it.
  patientBarrier();
  char mine[64];
  std::snprintf(mine, sizeof(mine), "/rank-%05d.ckpt", rank);
  if (rank == size - 1) {
    std::string other = dir + "/rank-00000.ckpt";
    std::vector<ptrain_state_desc_t> s = first.states();
    ASSERT_PTRAIN_OK(ptrain_checkpoint_save(s.data(), s.size(), (dir + mine).c_str()));
    first.step = 99; // a different file of the same layout
    ASSERT_PTRAIN_OK(ptrain_checkpoint_save(s.data(), s.size(), (dir + mine).c_str()));
    EXPECT_EQ(ptrain_checkpoint_load_ranks(world, table.data(), table.size(), dir.c_str()),
              PTRAIN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ptrain_last_error()).find("not the one this checkpoint wrote"), std::string::npos)
        << ptrain_last_error();
  }
  patientBarrier();
  std::remove((dir + mine).c_str());
  patientBarrier();
  if (rank == 0) {
    std::remove((dir + "/manifest").c_str());
    rmdir(dir.c_str());
  }
}

} // namespace
