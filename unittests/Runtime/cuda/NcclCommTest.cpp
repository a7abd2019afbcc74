//===- NcclCommTest.cpp - NCCL communicators on one rank ------------------===//
//
// Run as `mpirun -np 1` (runtime-nccl-np1, with NcclCompressedTest.cpp's
// compressed all-reduces): the NCCL communicator bootstrapped
// from the MPI one, self send/recv in a group, all-reduce (sum, avg, in
// place, f16), all-gather, reduce-scatter, split per axis, the traffic
// counters, argument errors,
// and the watchdog: a receive nobody sends must end in DEADLINE_EXCEEDED
// naming it within the deadline, with the communicator aborted.
//
// Without a device the binary checks that communicator creation fails
// cleanly (a DEVICE error naming cudaGetDeviceCount, no crash, no hang) and
// exits 77, CTest's SKIP_RETURN_CODE, since nothing else can run.
//
//===----------------------------------------------------------------------===//

#include "CudaTest.h"

#include <chrono>
#include <string>

namespace ptrain::testing {
// The 1-rank MPI world and its NCCL communicator, shared with NcclCompressedTest.cpp.
ptrain_comm_t world = nullptr;
ptrain_nccl_comm_t nccl = nullptr;
} // namespace ptrain::testing

namespace {
using namespace ptrain::testing;

bool lastErrorHas(const char *text) { return std::string(ptrain_last_error()).find(text) != std::string::npos; }

TEST(NcclComm, BootstrapGivesRankAndSize) {
  int32_t rank = -1, size = -1;
  ASSERT_EQ(ptrain_nccl_comm_rank(nccl, &rank), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_comm_size(nccl, &size), PTRAIN_OK);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(size, 1);
}

TEST(NcclComm, SelfSendRecvInAGroup) {
  std::vector<int32_t> data(1031);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<int32_t>(i * 7 - 300);
  DeviceArray<int32_t> send(data), recv(data.size());
  const int64_t bytes = static_cast<int64_t>(data.size() * sizeof(int32_t));
  ASSERT_EQ(ptrain_nccl_group_start(), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_send(nccl, send.get(), bytes, 0), PTRAIN_OK) << ptrain_last_error();
  ASSERT_EQ(ptrain_nccl_recv(nccl, recv.get(), bytes, 0), PTRAIN_OK) << ptrain_last_error();
  ASSERT_EQ(ptrain_nccl_group_end(), PTRAIN_OK) << ptrain_last_error();
  ASSERT_EQ(ptrain_nccl_wait(nccl), PTRAIN_OK) << ptrain_last_error();
  expectEqualArrays(data, recv.download(), "received");
}

TEST(NcclComm, CollectivesOnOneRankAreIdentities) {
  const std::vector<float> x = {1.5f, -2.0f, 3.25f, 1e-3f, 6e4f};
  DeviceArray<float> in(x), out(x.size());
  ASSERT_EQ(ptrain_nccl_all_reduce(nccl, in.get(), out.get(), 5, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM), PTRAIN_OK)
      << ptrain_last_error();
  ASSERT_EQ(ptrain_nccl_wait(nccl), PTRAIN_OK) << ptrain_last_error();
  expectSameBits(x, out.download(), "sum");
  ASSERT_EQ(ptrain_nccl_all_reduce(nccl, in.get(), in.get(), 5, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_AVG), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_wait(nccl), PTRAIN_OK) << ptrain_last_error();
  expectSameBits(x, in.download(), "avg in place");
  // 0x7bff = 65504, the largest binary16.
  const std::vector<uint16_t> h = {0x3c00, 0x7bff, 0x8001, 0x0000};
  DeviceArray<uint16_t> hin(h), hout(h.size());
  ASSERT_EQ(ptrain_nccl_all_reduce(nccl, hin.get(), hout.get(), 4, PTRAIN_DTYPE_F16, PTRAIN_REDUCE_SUM), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_wait(nccl), PTRAIN_OK) << ptrain_last_error();
  expectEqualArrays(h, hout.download(), "f16 sum");
  const std::vector<int64_t> ids = {5, -1, 1ll << 40};
  DeviceArray<int64_t> iin(ids), iout(ids.size());
  ASSERT_EQ(ptrain_nccl_all_gather(nccl, iin.get(), iout.get(), 3, PTRAIN_DTYPE_I64), PTRAIN_OK);
  DeviceArray<float> rs(x.size());
  ASSERT_EQ(ptrain_nccl_reduce_scatter(nccl, out.get(), rs.get(), 5, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_wait(nccl), PTRAIN_OK) << ptrain_last_error();
  expectEqualArrays(ids, iout.download(), "all-gather");
  expectSameBits(x, rs.download(), "reduce-scatter");
}

TEST(NcclComm, TrafficCountersCountEnqueuedBytes) {
  ptrain_nccl_comm_t c = nullptr;
  ASSERT_EQ(ptrain_nccl_comm_split(nccl, 0, 0, &c), PTRAIN_OK) << ptrain_last_error();
  int64_t bytes = -1, messages = -1;
  ASSERT_EQ(ptrain_nccl_p2p_traffic(c, 0, &bytes, &messages), PTRAIN_OK) << ptrain_last_error();
  EXPECT_EQ(bytes, 0);
  EXPECT_EQ(messages, 0);
  DeviceArray<float> send(std::vector<float>(257, 1.0f)), recv(257);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(ptrain_nccl_group_start(), PTRAIN_OK);
    ASSERT_EQ(ptrain_nccl_send(c, send.get(), 1028, 0), PTRAIN_OK) << ptrain_last_error();
    ASSERT_EQ(ptrain_nccl_recv(c, recv.get(), 1028, 0), PTRAIN_OK) << ptrain_last_error();
    ASSERT_EQ(ptrain_nccl_group_end(), PTRAIN_OK) << ptrain_last_error();
  }
  ASSERT_EQ(ptrain_nccl_all_reduce(c, send.get(), recv.get(), 257, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_wait(c), PTRAIN_OK) << ptrain_last_error();
  ASSERT_EQ(ptrain_nccl_p2p_traffic(c, 0, &bytes, &messages), PTRAIN_OK);
  EXPECT_EQ(bytes, 2 * 1028); // sends only: receives are the peer's traffic
  EXPECT_EQ(messages, 2);
  ASSERT_EQ(ptrain_nccl_collective_traffic(c, &bytes, &messages), PTRAIN_OK);
  EXPECT_EQ(bytes, 1028);
  EXPECT_EQ(messages, 1);
  EXPECT_EQ(ptrain_nccl_p2p_traffic(c, 1, &bytes, &messages), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("peer 1 is outside [0, 1)")) << ptrain_last_error();
  ASSERT_EQ(ptrain_nccl_reset_traffic(c), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_p2p_traffic(c, 0, &bytes, &messages), PTRAIN_OK);
  EXPECT_EQ(bytes + messages, 0);
  ASSERT_EQ(ptrain_nccl_collective_traffic(c, &bytes, &messages), PTRAIN_OK);
  EXPECT_EQ(bytes + messages, 0);
  ASSERT_EQ(ptrain_nccl_comm_destroy(c), PTRAIN_OK) << ptrain_last_error();
}

TEST(NcclComm, SplitGivesOneCommunicatorPerColor) {
  ptrain_nccl_comm_t axis = nullptr, none = nullptr;
  ASSERT_EQ(ptrain_nccl_comm_split(nccl, 0, 0, &axis), PTRAIN_OK) << ptrain_last_error();
  ASSERT_NE(axis, nullptr);
  int32_t size = 0;
  ASSERT_EQ(ptrain_nccl_comm_size(axis, &size), PTRAIN_OK);
  EXPECT_EQ(size, 1);
  DeviceArray<float> v(std::vector<float>{2.0f, 4.0f});
  ASSERT_EQ(ptrain_nccl_all_reduce(axis, v.get(), v.get(), 2, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM), PTRAIN_OK);
  ASSERT_EQ(ptrain_nccl_wait(axis), PTRAIN_OK) << ptrain_last_error();
  expectSameBits({2.0f, 4.0f}, v.download(), "split all-reduce");
  ASSERT_EQ(ptrain_nccl_comm_destroy(axis), PTRAIN_OK) << ptrain_last_error();
  ASSERT_EQ(ptrain_nccl_comm_split(nccl, -1, 0, &none), PTRAIN_OK) << ptrain_last_error();
  EXPECT_EQ(none, nullptr);
}

TEST(NcclComm, ArgumentErrorsNameTheArgument) {
  DeviceArray<int64_t> v(4);
  EXPECT_EQ(ptrain_nccl_all_reduce(nccl, v.get(), v.get(), 4, PTRAIN_DTYPE_I64, PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("dtype 2 is not supported")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_send(nccl, v.get(), 8, 1), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("peer 1 is outside [0, 1)")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_comm_set_timeout(nccl, 0.0), PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(NcclWatchdog, ReceiveNobodySendsHitsTheDeadlineAndAborts) {
  ptrain_nccl_comm_t c = nullptr;
  ASSERT_EQ(ptrain_nccl_comm_split(nccl, 0, 0, &c), PTRAIN_OK) << ptrain_last_error();
  ASSERT_EQ(ptrain_nccl_comm_set_timeout(c, 2.0), PTRAIN_OK);
  DeviceArray<uint8_t> buf(1024);
  const auto start = std::chrono::steady_clock::now();
  ptrain_status_t st = ptrain_nccl_recv(c, buf.get(), 1024, 0);
  if (st == PTRAIN_OK)
    st = ptrain_nccl_wait(c);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(st, PTRAIN_ERROR_DEADLINE_EXCEEDED) << ptrain_last_error();
  EXPECT_TRUE(lastErrorHas("recv(1024 bytes from 0)")) << ptrain_last_error();
  EXPECT_TRUE(lastErrorHas("ncclCommAbort")) << ptrain_last_error();
  EXPECT_LT(elapsed, 2.0 + 10.0);
  EXPECT_EQ(ptrain_nccl_all_reduce(c, buf.get(), buf.get(), 4, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM), PTRAIN_ERROR_COMM);
  EXPECT_TRUE(lastErrorHas("the communicator was aborted after")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_comm_destroy(c), PTRAIN_OK);
}

} // namespace

int main(int argc, char **argv) {
  if (ptrain_comm_init(&world) != PTRAIN_OK) {
    std::fprintf(stderr, "ptrain_comm_init: %s\n", ptrain_last_error());
    return 1;
  }
  const std::string reason = noDeviceReason();
  if (!reason.empty()) {
    const ptrain_status_t st = ptrain_nccl_comm_init(world, &nccl);
    const bool clean = st == PTRAIN_ERROR_DEVICE && nccl == nullptr && lastErrorHas("cudaGetDeviceCount");
    std::printf("no usable CUDA device (%s); ptrain_nccl_comm_init: %s: %s\n", reason.c_str(), ptrain_status_string(st),
                ptrain_last_error());
    ptrain_comm_destroy(world);
    if (!clean) {
      std::printf("FAILED: expected a PTRAIN_ERROR_DEVICE naming cudaGetDeviceCount\n");
      return 1;
    }
    std::printf("SKIPPED: the NCCL tests need a device\n");
    return kSkipReturnCode;
  }
  if (ptrain_nccl_comm_init(world, &nccl) != PTRAIN_OK) {
    std::fprintf(stderr, "ptrain_nccl_comm_init: %s\n", ptrain_last_error());
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  ptrain_nccl_comm_destroy(nccl);
  ptrain_comm_destroy(world);
  return result;
}
