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

// ptrain_codec_t {kind, bits, granularity, symmetric, warm_start, cast_dtype, batch, rows, cols, rank, k,
// block_size, seed[, low_bits, tile_size, value_dtype]}: the matrices 64 x 32 (PowerSGD) and 16 x 33 (odd sizes:
// partial quantization blocks, padded cast chunks), the exact path on 1 x 37.
std::vector<Case> cases() {
  constexpr ptrain_dtype_t F32 = PTRAIN_DTYPE_F32;
  return {
      {"powersgd rank 4, warm start, EF, avg",
       {PTRAIN_CODEC_POWERSGD, 0, 0, 0, 1, F32, 1, 64, 32, 4, 0, 0, 0},
       true,
       PTRAIN_REDUCE_AVG},
      {"powersgd exact path (1-D), EF, sum",
       {PTRAIN_CODEC_POWERSGD, 0, 0, 0, 0, F32, 1, 1, 37, 1, 0, 0, 0},
       true,
       PTRAIN_REDUCE_SUM},
      {"topk k 50, EF, avg", {PTRAIN_CODEC_TOPK, 0, 0, 0, 0, F32, 1, 16, 33, 0, 50, 0, 0}, true, PTRAIN_REDUCE_AVG},
      {"randk k 77, EF, sum", {PTRAIN_CODEC_RANDK, 0, 0, 0, 0, F32, 1, 16, 33, 0, 77, 0, 11}, true, PTRAIN_REDUCE_SUM},
      // Descriptor version 2: 16-bit top-k / rand-k values (a 16-bit TP site), rounded, the loss in the residual.
      {"topk k 50 bf16 values, EF, avg",
       {PTRAIN_CODEC_TOPK, 0, 0, 0, 0, F32, 1, 16, 33, 0, 50, 0, 0, 0, 0, PTRAIN_DTYPE_BF16},
       true,
       PTRAIN_REDUCE_AVG},
      {"randk k 77 f16 values, EF, sum",
       {PTRAIN_CODEC_RANDK, 0, 0, 0, 0, F32, 1, 16, 33, 0, 77, 0, 11, 0, 0, PTRAIN_DTYPE_F16},
       true,
       PTRAIN_REDUCE_SUM},
      {"randk k 77 bf16 values, avg",
       {PTRAIN_CODEC_RANDK, 0, 0, 0, 0, F32, 1, 16, 33, 0, 77, 0, 11, 0, 0, PTRAIN_DTYPE_BF16},
       false,
       PTRAIN_REDUCE_AVG},
      {"quant 4-bit block 64 asymmetric, EF, avg",
       {PTRAIN_CODEC_QUANT, 4, PTRAIN_QUANT_BLOCK, 0, 0, F32, 1, 16, 33, 0, 0, 64, 0},
       true,
       PTRAIN_REDUCE_AVG},
      {"quant 8-bit channel symmetric, sum",
       {PTRAIN_CODEC_QUANT, 8, PTRAIN_QUANT_CHANNEL, 1, 0, F32, 1, 16, 33, 0, 0, 0, 0},
       false,
       PTRAIN_REDUCE_SUM},
      {"cast f16, EF, avg",
       {PTRAIN_CODEC_CAST, 0, 0, 0, 0, PTRAIN_DTYPE_F16, 1, 16, 33, 0, 0, 0, 0},
       true,
       PTRAIN_REDUCE_AVG},
      {"cast bf16, sum",
       {PTRAIN_CODEC_CAST, 0, 0, 0, 0, PTRAIN_DTYPE_BF16, 1, 16, 33, 0, 0, 0, 0},
       false,
       PTRAIN_REDUCE_SUM},
  };
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
  const ptrain_codec_t p = {PTRAIN_CODEC_POWERSGD, 0, 0, 0, 1, PTRAIN_DTYPE_F32, 1, 64, 32, 4, 0, 0, 0};
  DeviceArray<float> g(64 * 32), out(64 * 32);
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nccl, &p, g.get(), nullptr, nullptr, out.get(), PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("powersgd with warm_start needs the Q state"), std::string::npos)
      << ptrain_last_error();
  const ptrain_codec_t r = {PTRAIN_CODEC_RANDK, 0, 0, 0, 0, PTRAIN_DTYPE_F32, 1, 64, 32, 0, 8, 0, 0};
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nccl, &r, g.get(), nullptr, nullptr, out.get(), PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("randk needs its counter state"), std::string::npos)
      << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_wait(nccl), PTRAIN_OK) << ptrain_last_error();
}

} // namespace
