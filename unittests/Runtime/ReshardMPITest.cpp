//===- ReshardMPITest.cpp - A dp2 checkpoint loaded at dp1 and dp4 --------===//
//
// Ranks 0 and 1 train a data-parallel loop (PowerSGD compressed all-reduce
// with error feedback and warm-start Q, then AdamW) for 3 steps and save a
// ranked checkpoint; the table also holds a pipeline link's residual and
// rand-k counter as a pipelined step would. The checkpoint is then loaded
// with ptrain_checkpoint_load_resharded by rank 0 alone (dp1) and by ranks
// 0-3 (dp4): parameters, moments, Q, counters identical to the saved ones;
// the DP residual the mean of the two saved residuals; the link residual
// zero; each of the two named in the report. The reference values come from
// reading the two rank files with ptrain_checkpoint_load. Runs in
// PTrainRuntimeCollectiveTests (4 and 8 ranks).
//
//===----------------------------------------------------------------------===//

#include "MPITest.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

using namespace ptrain::testing;

constexpr int64_t kRows = 16, kCols = 12, kRank = 2, kN = kRows * kCols, kLink = 40;
const int64_t kMatDims[2] = {kRows, kCols};
const int64_t kQDims[2] = {kCols, kRank};
const int64_t kLinkDims[1] = {kLink};
const int64_t kOne[1] = {1};

struct Replica {
  std::vector<float> w = randomFloats(kN, 7), m = std::vector<float>(kN), v = std::vector<float>(kN),
                     residual = std::vector<float>(kN), q = std::vector<float>(kCols * kRank),
                     linkResidual = std::vector<float>(kLink);
  int64_t step = 0, linkCounter = 0;

  std::vector<ptrain_state_desc_t> states() {
    return {
        {"w", w.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 2, kMatDims},
        {"w/exp_avg", m.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_OPTIMIZER_MOMENT, 2, kMatDims},
        {"w/exp_avg_sq", v.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_OPTIMIZER_MOMENT, 2, kMatDims},
        {"sc/w/q", q.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_CODEC_WARM_START, 2, kQDims},
        {"sc/w/residual", residual.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_CODEC_RESIDUAL, 2, kMatDims},
        {"pp0->1/residual", linkResidual.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_CODEC_RESIDUAL, 1, kLinkDims},
        {"pp0->1/counter", &linkCounter, PTRAIN_DTYPE_I64, PTRAIN_STATE_CODEC_SEED, 1, kOne},
        {"step", &step, PTRAIN_DTYPE_I64, PTRAIN_STATE_STEP_COUNTER, 1, kOne},
    };
  }

  void train(ptrain_comm_t dp, int replica) {
    std::vector<float> g = randomFloats(kN, static_cast<unsigned>(replica * 7919 + step)), avg(kN);
    for (int64_t i = 0; i < kN; ++i)
      g[i] += 0.01f * w[i];
    ptrain_codec_t c = codecOf(PTRAIN_CODEC_POWERSGD, kRows, kCols);
    c.rank = kRank;
    c.warm_start = 1;
    c.seed = 5;
    ptrain_request_t req;
    ASSERT_PTRAIN_OK(ptrain_compressed_all_reduce_start(dp, &c, g.data(), residual.data(), q.data(), avg.data(),
                                                        PTRAIN_REDUCE_AVG, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
    ASSERT_PTRAIN_OK(ptrain_adamw_step_f32(w.data(), avg.data(), m.data(), v.data(), kN, step + 1, 1e-2f, 0.9f, 0.999f,
                                           1e-8f, 0.01f));
    // What a compressed pipeline send would leave: a replica's own error.
    std::vector<float> e = randomFloats(kLink, static_cast<unsigned>(replica * 31 + step + 1));
    for (int64_t i = 0; i < kLink; ++i)
      linkResidual[i] += e[i];
    ++step;
    linkCounter += 3;
  }
};

/// A fresh directory named by rank 0, known to every rank.
std::string sharedDir() {
  char name[512] = "";
  if (rank == 0) {
    std::snprintf(name, sizeof(name), "%s/ptrain-reshard-XXXXXX",
                  std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(name))
      name[0] = '\0';
  }
  std::vector<char> all(sizeof(name) * size);
  ptrain_request_t req;
  EXPECT_EQ(ptrain_all_gather_start(world, name, all.data(), sizeof(name) / 8, PTRAIN_DTYPE_I64, &req), PTRAIN_OK);
  EXPECT_EQ(ptrain_wait(req), PTRAIN_OK);
  return std::string(all.data());
}

ptrain_comm_t groupOfFirst(int n) {
  std::vector<int32_t> ranks(n);
  for (int i = 0; i < n; ++i)
    ranks[i] = i;
  ptrain_comm_t comm = nullptr;
  EXPECT_EQ(ptrain_comm_create_group(world, ranks.data(), n, &comm), PTRAIN_OK) << ptrain_last_error();
  return comm;
}

/// Loads at the degree of `comm` and checks every state against the saved
/// replicas `saved[0..1]`.
void expectResharded(ptrain_comm_t comm, const std::string &dir, Replica (&saved)[2]) {
  Replica loaded;
  loaded.w.assign(kN, 0.0f);
  std::vector<ptrain_state_desc_t> table = loaded.states();
  char report[2048];
  ASSERT_PTRAIN_OK(
      ptrain_checkpoint_load_resharded(comm, table.data(), table.size(), dir.c_str(), 1, report, sizeof(report)));
  EXPECT_EQ(loaded.w, saved[0].w);
  EXPECT_EQ(loaded.m, saved[0].m);
  EXPECT_EQ(loaded.v, saved[0].v);
  EXPECT_EQ(loaded.q, saved[0].q);
  EXPECT_EQ(loaded.step, 3);
  EXPECT_EQ(loaded.linkCounter, 9);
  std::vector<float> mean(kN);
  for (int64_t i = 0; i < kN; ++i)
    mean[i] = static_cast<float>((static_cast<double>(saved[0].residual[i]) + saved[1].residual[i]) / 2);
  EXPECT_EQ(loaded.residual, mean);
  EXPECT_EQ(loaded.linkResidual, std::vector<float>(kLink, 0.0f));
  int32_t n = 0;
  ASSERT_PTRAIN_OK(ptrain_comm_size(comm, &n));
  const std::string text = report;
  const std::string degrees = "dp 2 -> " + std::to_string(n);
  EXPECT_NE(text.find("averaged 'sc/w/residual' (data-parallel codec residual) over the 2 old replicas of stage 0 (" +
                      degrees + ")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("reset 'pp0->1/residual' to zero"), std::string::npos) << text;
  // Nothing else was changed, so nothing else is reported.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;

  // The step continues at the new degree: every replica applies the same
  // averaged update, so parameters stay equal across replicas.
  ASSERT_NO_FATAL_FAILURE(loaded.train(comm, static_cast<int>(rank)));
  std::vector<float> all(kN * n);
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(ptrain_all_gather_start(comm, loaded.w.data(), all.data(), kN, PTRAIN_DTYPE_F32, &req));
  ASSERT_PTRAIN_OK(ptrain_wait(req));
  for (int r = 1; r < n; ++r)
    EXPECT_EQ(std::vector<float>(all.begin() + r * kN, all.begin() + (r + 1) * kN), loaded.w) << "replica " << r;
}

TEST(ReshardedCheckpoint, SavedAtDp2LoadsAtDp1AndDp4) {
  ASSERT_GE(size, 4);
  const std::string dir = sharedDir();
  ASSERT_FALSE(dir.empty());
  if (rank < 2) {
    ptrain_comm_t dp2 = groupOfFirst(2);
    Replica r;
    for (int i = 0; i < 3; ++i)
      ASSERT_NO_FATAL_FAILURE(r.train(dp2, rank));
    std::vector<ptrain_state_desc_t> s = r.states();
    ASSERT_PTRAIN_OK(ptrain_checkpoint_save_ranks(dp2, s.data(), s.size(), dir.c_str()));
    ASSERT_PTRAIN_OK(ptrain_comm_destroy(dp2));
  }
  patientBarrier();

  // The reference: both rank files read by the single-file loader.
  Replica saved[2];
  for (int r = 0; r < 2; ++r) {
    std::vector<ptrain_state_desc_t> s = saved[r].states();
    char path[600];
    std::snprintf(path, sizeof(path), "%s/rank-%05d.ckpt", dir.c_str(), r);
    ASSERT_PTRAIN_OK(ptrain_checkpoint_load(s.data(), s.size(), path));
  }
  // A real data-parallel run: replicas agree on what is replicated, differ in
  // what is not.
  ASSERT_EQ(saved[0].w, saved[1].w);
  ASSERT_EQ(saved[0].q, saved[1].q);
  ASSERT_NE(saved[0].residual, saved[1].residual);
  ASSERT_NE(saved[0].linkResidual, std::vector<float>(kLink, 0.0f));

  if (rank == 0) {
    ptrain_comm_t dp1 = groupOfFirst(1);
    ASSERT_NO_FATAL_FAILURE(expectResharded(dp1, dir, saved));
    ASSERT_PTRAIN_OK(ptrain_comm_destroy(dp1));
  }
  if (rank < 4) {
    ptrain_comm_t dp4 = groupOfFirst(4);
    ASSERT_NO_FATAL_FAILURE(expectResharded(dp4, dir, saved));

    // A pipeline split that does not divide the old ranks is an error, and
    // so is a table without one of the file's keys; no state changes.
    Replica untouched;
    std::vector<ptrain_state_desc_t> table = untouched.states();
    EXPECT_EQ(ptrain_checkpoint_load_resharded(dp4, table.data(), table.size(), dir.c_str(), 4, nullptr, 0),
              PTRAIN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ptrain_last_error()).find("written by 2 ranks, which pp = 4 does not divide"),
              std::string::npos)
        << ptrain_last_error();
    table.pop_back();
    EXPECT_EQ(ptrain_checkpoint_load_resharded(dp4, table.data(), table.size(), dir.c_str(), 1, nullptr, 0),
              PTRAIN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ptrain_last_error()).find("holds state 'step'"), std::string::npos) << ptrain_last_error();
    EXPECT_EQ(untouched.step, 0);
    EXPECT_EQ(untouched.residual, std::vector<float>(kN, 0.0f));
    ASSERT_PTRAIN_OK(ptrain_comm_destroy(dp4));
  }
  if (rank < 2) {
    // The same degree is ptrain_checkpoint_load_ranks: each rank its own file, no report.
    ptrain_comm_t dp2 = groupOfFirst(2);
    Replica again;
    std::vector<ptrain_state_desc_t> table = again.states();
    char report[64] = "x";
    ASSERT_PTRAIN_OK(
        ptrain_checkpoint_load_resharded(dp2, table.data(), table.size(), dir.c_str(), 1, report, sizeof(report)));
    EXPECT_STREQ(report, "");
    EXPECT_EQ(again.residual, saved[rank].residual);
    EXPECT_EQ(again.linkResidual, saved[rank].linkResidual);
    ASSERT_PTRAIN_OK(ptrain_comm_destroy(dp2));
  }
  patientBarrier();
  if (rank == 0) {
    for (const char *f : {"/rank-00000.ckpt", "/rank-00001.ckpt", "/manifest"})
      std::remove((dir + f).c_str());
    rmdir(dir.c_str());
  }
}

} // namespace
