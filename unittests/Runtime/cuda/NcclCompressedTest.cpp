//===- NcclCompressedTest.cpp - Compressed all-reduces over NCCL, 1 rank --===//
//
// Part of runtime-nccl-np1 (`mpirun -np 1`, NcclCommTest.cpp's main and
// communicators): ptrain_nccl_compressed_all_reduce of every codec the CPU's
// ptrain_compressed_all_reduce_start supports, on a 1-rank NCCL communicator,
// against the CPU call on the 1-rank MPI world, over three steps so that the
// error-feedback residual, PowerSGD's warm-start Q and rand-k's counter carry
// over: result, residual and state bit for bit (PowerSGD: 1e-4 of the largest
// magnitude, cuBLAS sums in another order), and the bytes each handed to its
// library equal, counted as one operation. Skipped (77) without a device.
//
//===----------------------------------------------------------------------===//

#include "CudaTest.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ptrain::testing {
extern ptrain_comm_t world;
extern ptrain_nccl_comm_t nccl;
} // namespace ptrain::testing

namespace {
using namespace ptrain::testing;

struct Case {
  const char *name;
  ptrain_codec_t codec;
  bool errorFeedback;
  ptrain_reduce_op_t op;
};

ptrain_codec_t codecOf(ptrain_codec_kind_t kind, int64_t rows, int64_t cols) {
  ptrain_codec_t c = {};
  c.kind = kind;
  c.cast_dtype = PTRAIN_DTYPE_F32;
  c.batch = 1;
  c.rows = rows;
  c.cols = cols;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  ptrain_codec_t p = codecOf(PTRAIN_CODEC_POWERSGD, 64, 32);
  p.rank = 4;
  p.warm_start = 1;
  out.push_back({"powersgd rank 4, warm start, EF, avg", p, true, PTRAIN_REDUCE_AVG});
  ptrain_codec_t exact = codecOf(PTRAIN_CODEC_POWERSGD, 1, 37);
  exact.rank = 1;
  out.push_back({"powersgd exact path (1-D), EF, sum", exact, true, PTRAIN_REDUCE_SUM});
  ptrain_codec_t t = codecOf(PTRAIN_CODEC_TOPK, 16, 33);
  t.k = 50;
  out.push_back({"topk k 50, EF, avg", t, true, PTRAIN_REDUCE_AVG});
  ptrain_codec_t r = codecOf(PTRAIN_CODEC_RANDK, 16, 33);
  r.k = 77;
  r.seed = 11;
  out.push_back({"randk k 77, EF, sum", r, true, PTRAIN_REDUCE_SUM});
  ptrain_codec_t q = codecOf(PTRAIN_CODEC_QUANT, 16, 33);
  q.bits = 4;
  q.granularity = PTRAIN_QUANT_BLOCK;
  q.block_size = 64;
  out.push_back({"quant 4-bit block 64 asymmetric, EF, avg", q, true, PTRAIN_REDUCE_AVG});
  ptrain_codec_t q8 = codecOf(PTRAIN_CODEC_QUANT, 16, 33);
  q8.bits = 8;
  q8.granularity = PTRAIN_QUANT_CHANNEL;
  q8.symmetric = 1;
  out.push_back({"quant 8-bit channel symmetric, sum", q8, false, PTRAIN_REDUCE_SUM});
  ptrain_codec_t h = codecOf(PTRAIN_CODEC_CAST, 16, 33);
  h.cast_dtype = PTRAIN_DTYPE_F16;
  out.push_back({"cast f16, EF, avg", h, true, PTRAIN_REDUCE_AVG});
  ptrain_codec_t b = codecOf(PTRAIN_CODEC_CAST, 16, 33);
  b.cast_dtype = PTRAIN_DTYPE_BF16;
  out.push_back({"cast bf16, sum", b, false, PTRAIN_REDUCE_SUM});
  return out;
}

void expectClose(const std::vector<float> &cpu, const std::vector<float> &gpu, double tolerance, const char *what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  double scale = 0.0, worst = 0.0;
  for (float v : cpu)
    scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < cpu.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(cpu[i]) - gpu[i]));
  EXPECT_LE(worst, tolerance * std::max(scale, 1e-30))
      << what << ": worst |cpu - gpu| " << worst << " of max " << scale;
}

class NcclCompressed : public ::testing::TestWithParam<Case> {};

TEST_P(NcclCompressed, EqualsTheCpuOverThreeSteps) {
  const Case &c = GetParam();
  const int64_t numel = c.codec.batch * c.codec.rows * c.codec.cols;
  const bool powersgd = c.codec.kind == PTRAIN_CODEC_POWERSGD;
  const bool randk = c.codec.kind == PTRAIN_CODEC_RANDK;
  const int64_t qCount = c.codec.batch * c.codec.cols * c.codec.rank;
  const bool exactPath = (c.codec.rows + c.codec.cols) * c.codec.rank >= c.codec.rows * c.codec.cols;
  // Host (CPU runtime) and device copies of the residual, the state and the result.
  std::vector<float> eHost(numel, 0.0f), qHost(powersgd ? qCount : 0, 0.0f), outHost(numel);
  int64_t counterHost = 5;
  DeviceArray<float> eDev(eHost), qDev(std::vector<float>(std::max<int64_t>(qCount, 1), 0.0f)), outDev(numel);
  DeviceArray<int64_t> counterDev(std::vector<int64_t>{counterHost});
  ASSERT_EQ(ptrain_comm_reset_traffic(world), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_reset_traffic(nccl), PTRAIN_OK);
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> g = randomValues(numel, 100 + step, 2.0f);
    DeviceArray<float> gDev(g);
    void *stateHost = powersgd ? static_cast<void *>(qHost.data()) : randk ? &counterHost : nullptr;
    void *stateDev = powersgd ? static_cast<void *>(qDev.get()) : randk ? counterDev.get() : nullptr;
    ptrain_request_t req = nullptr;
    ASSERT_EQ(ptrain_compressed_all_reduce_start(world, &c.codec, g.data(), c.errorFeedback ? eHost.data() : nullptr,
                                                 stateHost, outHost.data(), c.op, &req),
              PTRAIN_OK)
        << ptrain_last_error();
    ASSERT_EQ(ptrain_wait(req), PTRAIN_OK) << ptrain_last_error();
    ASSERT_EQ(ptrain_nccl_compressed_all_reduce(nccl, &c.codec, gDev.get(), c.errorFeedback ? eDev.get() : nullptr,
                                                stateDev, outDev.get(), c.op),
              PTRAIN_OK)
        << ptrain_last_error();
    ASSERT_EQ(ptrain_nccl_wait(nccl), PTRAIN_OK) << ptrain_last_error();
    const std::string at = std::string(c.name) + ", step " + std::to_string(step);
    if (powersgd && !exactPath) {
      expectClose(outHost, outDev.download(), 1e-4, (at + ": result").c_str());
      expectClose(eHost, eDev.download(), 1e-4, (at + ": residual").c_str());
      expectClose(qHost, qDev.download(), 1e-4, (at + ": warm-start Q").c_str());
    } else {
      expectSameBits(outHost, outDev.download(), (at + ": result").c_str());
      expectSameBits(eHost, eDev.download(), (at + ": residual").c_str());
    }
    if (randk) {
      EXPECT_EQ(counterDev.download()[0], counterHost) << at << ": the rand-k counter";
    }
  }
  int64_t cpuBytes = -1, cpuOps = -1, gpuBytes = -2, gpuOps = -2;
  ASSERT_EQ(ptrain_comm_collective_traffic(world, &cpuBytes, &cpuOps), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_collective_traffic(nccl, &gpuBytes, &gpuOps), PTRAIN_OK);
  EXPECT_GT(cpuBytes, 0);
  EXPECT_EQ(gpuBytes, cpuBytes) << c.name << ": bytes handed to NCCL vs MPI over 3 steps";
  EXPECT_EQ(gpuOps, 3);
  EXPECT_EQ(cpuOps, 3);
}

INSTANTIATE_TEST_SUITE_P(EveryCodec, NcclCompressed, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return "case" + std::to_string(info.index);
                         });

// A warm-start PowerSGD without its Q state is refused by name, nothing posted.
TEST(NcclCompressedErrors, WarmStartWithoutStateIsRefused) {
  ptrain_codec_t p = codecOf(PTRAIN_CODEC_POWERSGD, 64, 32);
  p.rank = 4;
  p.warm_start = 1;
  DeviceArray<float> g(64 * 32), out(64 * 32);
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nccl, &p, g.get(), nullptr, nullptr, out.get(), PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("powersgd with warm_start needs the Q state"), std::string::npos)
      << ptrain_last_error();
  ptrain_codec_t r = codecOf(PTRAIN_CODEC_RANDK, 64, 32);
  r.k = 8;
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nccl, &r, g.get(), nullptr, nullptr, out.get(), PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("randk needs its counter state"), std::string::npos)
      << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_wait(nccl), PTRAIN_OK) << ptrain_last_error();
}

} // namespace
