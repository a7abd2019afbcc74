//===- CommMPITest.cpp - Communicators, p2p, all-reduce, the deadline -----===//
//
// Runs under `mpirun -np N` (N >= 2) with PTRAIN_COMM_TIMEOUT_S=2; every rank
// runs every test. A rank that fails an assertion cannot hang the others: their
// waits end at the deadline with an error.
//
//===----------------------------------------------------------------------===//

#include "MPITest.h"

#include <string>
#include <vector>

namespace {

using namespace ptrain::testing;

TEST(Comm, RankSizeAndTheDeadlineFromTheEnvironment) {
  EXPECT_GE(size, 2);
  EXPECT_GE(rank, 0);
  EXPECT_LT(rank, size);
  double timeout = 0.0;
  ASSERT_PTRAIN_OK(ptrain_comm_timeout(world, &timeout));
  EXPECT_EQ(timeout, 2.0) << "run with PTRAIN_COMM_TIMEOUT_S=2";
}

TEST(Comm, SendRecvRoundTrip) {
  // Rank 0 sends 1000 floats to rank 1, which adds 1 and sends them back.
  const int64_t n = 1000, bytes = n * sizeof(float);
  std::vector<float> buf(n);
  ptrain_request_t req;
  if (rank == 0) {
    for (int64_t i = 0; i < n; ++i)
      buf[i] = static_cast<float>(i);
    ASSERT_PTRAIN_OK(ptrain_send_start(world, buf.data(), bytes, 1, 7, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
    std::vector<float> back(n, -1.0f);
    ASSERT_PTRAIN_OK(ptrain_recv_start(world, back.data(), bytes, 1, 8, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(back[i], static_cast<float>(i) + 1.0f) << i;
  } else if (rank == 1) {
    ASSERT_PTRAIN_OK(ptrain_recv_start(world, buf.data(), bytes, 0, 7, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
    for (float &v : buf)
      v += 1.0f;
    ASSERT_PTRAIN_OK(ptrain_send_start(world, buf.data(), bytes, 0, 8, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
  }
  patientBarrier();
}

TEST(Comm, AllReduceSumAndAvgInF32AndF64) {
  const int64_t n = 257;
  std::vector<float> send(n), recv(n, -1.0f);
  std::vector<double> inPlace(n);
  for (int64_t i = 0; i < n; ++i) {
    send[i] = static_cast<float>(rank + 1) * i;
    inPlace[i] = static_cast<double>(rank + 1) + 0.25 * i;
  }
  const double rankSum = size * (size + 1) / 2.0; // sum of (rank + 1)
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(
      ptrain_all_reduce_start(world, send.data(), recv.data(), n, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &req));
  ASSERT_PTRAIN_OK(ptrain_wait(req));
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(recv[i], static_cast<float>(rankSum * i)) << i;
  // In place, fp64, averaged: mean(rank + 1) + 0.25 i.
  ASSERT_PTRAIN_OK(
      ptrain_all_reduce_start(world, inPlace.data(), inPlace.data(), n, PTRAIN_DTYPE_F64, PTRAIN_REDUCE_AVG, &req));
  ASSERT_PTRAIN_OK(ptrain_wait(req));
  for (int64_t i = 0; i < n; ++i)
    ASSERT_DOUBLE_EQ(inPlace[i], rankSum / size + 0.25 * i) << i;
}

TEST(Comm, AllReduceOverAGroupOfRanks) {
  // Group {size - 1, 0}, listed out of order: its ranks are list positions,
  // and ranks outside it (rank 1 when size > 2) do not take part.
  const int32_t members[2] = {size - 1, 0};
  const bool member = rank == 0 || rank == size - 1;
  if (member) {
    ptrain_comm_t group = nullptr;
    ASSERT_PTRAIN_OK(ptrain_comm_create_group(world, members, 2, &group));
    int32_t groupRank = -1, groupSize = 0;
    ASSERT_PTRAIN_OK(ptrain_comm_rank(group, &groupRank));
    ASSERT_PTRAIN_OK(ptrain_comm_size(group, &groupSize));
    EXPECT_EQ(groupSize, 2);
    EXPECT_EQ(groupRank, rank == 0 ? 1 : 0);
    float value = static_cast<float>(rank + 1);
    ptrain_request_t req;
    ASSERT_PTRAIN_OK(ptrain_all_reduce_start(group, &value, &value, 1, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
    EXPECT_EQ(value, static_cast<float>(1 + size));
    ASSERT_PTRAIN_OK(ptrain_comm_destroy(group));
  } else {
    // A non-member may not create it.
    ptrain_comm_t group = nullptr;
    EXPECT_EQ(ptrain_comm_create_group(world, members, 2, &group), PTRAIN_ERROR_INVALID_ARGUMENT);
  }
  // A group of one: the reduction is the identity.
  ptrain_comm_t self = nullptr;
  ASSERT_PTRAIN_OK(ptrain_comm_create_group(world, &rank, 1, &self));
  double x = 3.5 * rank;
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(ptrain_all_reduce_start(self, &x, &x, 1, PTRAIN_DTYPE_F64, PTRAIN_REDUCE_AVG, &req));
  ASSERT_PTRAIN_OK(ptrain_wait(req));
  EXPECT_EQ(x, 3.5 * rank);
  ASSERT_PTRAIN_OK(ptrain_comm_destroy(self));
  patientBarrier();
}

TEST(Comm, RecvWithoutASendFailsAtTheDeadline) {
  if (rank == 0) {
    float buf[4];
    ptrain_request_t req;
    ASSERT_PTRAIN_OK(ptrain_recv_start(world, buf, sizeof(buf), 1, 4242, &req));
    // The step the driver set is named (ptrain_comm_set_step); -1 clears it.
    ASSERT_PTRAIN_OK(ptrain_comm_set_step(7));
    const std::string message = expectDeadline(
        req, {"ptrain_wait: recv from peer 1", "tag 4242", "16 bytes) at step 7 did not complete within 2 s"});
    ASSERT_PTRAIN_OK(ptrain_comm_set_step(-1));
    EXPECT_EQ(ptrain_comm_set_step(-2), PTRAIN_ERROR_INVALID_ARGUMENT);
    // The receive was cancelled, so the communicator still works.
    EXPECT_EQ(message.find("broken"), std::string::npos) << message;
  }
  patientBarrier();
}

TEST(Comm, ShortMessageIsAMismatch) {
  ptrain_request_t req;
  if (rank == 1) {
    double payload = 1.0;
    ASSERT_PTRAIN_OK(ptrain_send_start(world, &payload, 8, 0, 5, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
  } else if (rank == 0) {
    double buf[2];
    ASSERT_PTRAIN_OK(ptrain_recv_start(world, buf, 16, 1, 5, &req));
    EXPECT_EQ(ptrain_wait(req), PTRAIN_ERROR_MISMATCH);
    EXPECT_NE(std::string(ptrain_last_error()).find("received 8 bytes, expected 16"), std::string::npos)
        << ptrain_last_error();
  }
  patientBarrier();
}

TEST(Comm, CollectiveMissingARankBreaksOnlyItsCommunicator) {
  // Every rank but 0 starts an all-reduce on a copy of the world; rank 0
  // joins only after the others hit the deadline. A collective cannot be
  // cancelled, so their copy is marked broken; the world is unaffected.
  std::vector<int32_t> all(size);
  for (int32_t i = 0; i < size; ++i)
    all[i] = i;
  ptrain_comm_t copy = nullptr;
  ASSERT_PTRAIN_OK(ptrain_comm_create_group(world, all.data(), size, &copy));
  float value = 1.0f;
  ptrain_request_t req;
  if (rank != 0) {
    ASSERT_PTRAIN_OK(ptrain_all_reduce_start(copy, &value, &value, 1, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &req));
    EXPECT_EQ(ptrain_wait(req), PTRAIN_ERROR_DEADLINE_EXCEEDED);
    const std::string message = ptrain_last_error();
    EXPECT_NE(message.find("all_reduce (sum, f32, 1 elements, 4 bytes)"), std::string::npos) << message;
    EXPECT_NE(message.find("broken"), std::string::npos) << message;
    EXPECT_EQ(ptrain_barrier_start(copy, &req), PTRAIN_ERROR_COMM);
  }
  patientBarrier();
  if (rank == 0) {
    // Late, but it completes the collective the others left posted.
    ASSERT_PTRAIN_OK(ptrain_comm_set_timeout(copy, 30.0));
    ASSERT_PTRAIN_OK(ptrain_all_reduce_start(copy, &value, &value, 1, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
    EXPECT_EQ(value, static_cast<float>(size));
  }
  ASSERT_PTRAIN_OK(ptrain_comm_destroy(copy));
  patientBarrier();
}

TEST(Comm, InvalidPeerIsRejectedBeforeMPI) {
  float buf = 0.0f;
  ptrain_request_t req = nullptr;
  EXPECT_EQ(ptrain_send_start(world, &buf, 4, size, 0, &req), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(req, nullptr);
  EXPECT_NE(std::string(ptrain_last_error()).find("peer"), std::string::npos);
}

TEST(Comm, TrafficCountersCountSendsAndCollectivePayload) {
  // Rank 0 sends 1000 bytes to rank 1 twice; every rank all-reduces 257 floats and runs a PowerSGD rank-2
  // compressed all-reduce of an 8 x 16 matrix (P: 8 x 2, Q: 16 x 2 floats on the wire).
  ASSERT_PTRAIN_OK(ptrain_comm_reset_traffic(world));
  std::vector<char> bytes(1000, 1);
  ptrain_request_t req;
  for (int i = 0; i < 2; ++i) {
    if (rank == 0)
      ASSERT_PTRAIN_OK(ptrain_send_start(world, bytes.data(), 1000, 1, 40 + i, &req));
    else if (rank == 1)
      ASSERT_PTRAIN_OK(ptrain_recv_start(world, bytes.data(), 1000, 0, 40 + i, &req));
    if (rank <= 1)
      ASSERT_PTRAIN_OK(ptrain_wait(req));
  }
  std::vector<float> values(257, 1.0f);
  ASSERT_PTRAIN_OK(
      ptrain_all_reduce_start(world, values.data(), values.data(), 257, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &req));
  ASSERT_PTRAIN_OK(ptrain_wait(req));
  ptrain_codec_t codec = {};
  codec.kind = PTRAIN_CODEC_POWERSGD;
  codec.batch = 1;
  codec.rows = 8;
  codec.cols = 16;
  codec.rank = 2;
  std::vector<float> g(128), out(128);
  for (int i = 0; i < 128; ++i)
    g[i] = static_cast<float>((i * 7 + rank) % 11) - 5.0f;
  ASSERT_PTRAIN_OK(ptrain_compressed_all_reduce_start(world, &codec, g.data(), nullptr, nullptr, out.data(),
                                                      PTRAIN_REDUCE_SUM, &req));
  ASSERT_PTRAIN_OK(ptrain_wait(req));
  int64_t sent = -1, messages = -1;
  ASSERT_PTRAIN_OK(ptrain_comm_p2p_traffic(world, 1, &sent, &messages));
  EXPECT_EQ(sent, rank == 0 ? 2000 : 0);
  EXPECT_EQ(messages, rank == 0 ? 2 : 0);
  ASSERT_PTRAIN_OK(ptrain_comm_p2p_traffic(world, 0, &sent, &messages));
  EXPECT_EQ(sent, 0) << "rank 1 only received";
  int64_t collective = -1, operations = -1;
  ASSERT_PTRAIN_OK(ptrain_comm_collective_traffic(world, &collective, &operations));
  EXPECT_EQ(collective, 257 * 4 + (8 * 2 + 16 * 2) * 4);
  EXPECT_EQ(operations, 2);
  EXPECT_EQ(ptrain_comm_p2p_traffic(world, size, &sent, &messages), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("peer"), std::string::npos);
  ASSERT_PTRAIN_OK(ptrain_comm_reset_traffic(world));
  ASSERT_PTRAIN_OK(ptrain_comm_collective_traffic(world, &collective, &operations));
  EXPECT_EQ(collective, 0);
  patientBarrier();
}

} // namespace

PTRAIN_MPI_TEST_MAIN
