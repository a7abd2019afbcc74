//===- FingerprintMPITest.cpp - The debug mode names mismatched operations ===//
//
// Runs under `mpirun -np N` (N >= 3) with PTRAIN_COMM_DEBUG=1 and a generous
// PTRAIN_COMM_TIMEOUT_S (30; the tests that wait for a deadline set 2 s on
// their own communicator): real ranks post different operations, and every
// rank must get an error that names both ranks' operations instead of a hang.
//
//===----------------------------------------------------------------------===//

#include "MPITest.h"

#include <string>
#include <vector>

namespace {

using namespace ptrain::testing;

void expectParts(const std::string &message, std::initializer_list<const char *> parts) {
  for (const char *part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' missing from: " << message;
}

TEST(DebugMode, MatchingOperationsPass) {
  std::vector<float> x(8, 1.0f);
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(ptrain_all_reduce_start(world, x.data(), x.data(), 8, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &req));
  ASSERT_PTRAIN_OK(ptrain_wait(req));
  EXPECT_EQ(x[0], static_cast<float>(size));
  if (rank < 2) {
    ASSERT_PTRAIN_OK(rank == 0 ? ptrain_send_start(world, x.data(), 32, 1, 4, &req)
                               : ptrain_recv_start(world, x.data(), 32, 0, 4, &req));
    ASSERT_PTRAIN_OK(ptrain_wait(req));
  }
  patientBarrier();
}

TEST(DebugMode, ARankPostingAnotherCountIsNamed) {
  // The last rank posts 9 elements where the others post 8: every rank gets
  // MISMATCH naming rank 0's and the last rank's all-reduce, before any data
  // moves, and the communicator stays usable.
  // The driver's training step ends the message.
  std::vector<float> x(9, 1.0f);
  const int64_t count = rank == size - 1 ? 9 : 8;
  ptrain_request_t req = nullptr;
  ASSERT_PTRAIN_OK(ptrain_comm_set_step(12));
  EXPECT_EQ(ptrain_all_reduce_start(world, x.data(), x.data(), count, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &req),
            PTRAIN_ERROR_MISMATCH);
  ASSERT_PTRAIN_OK(ptrain_comm_set_step(-1));
  EXPECT_EQ(req, nullptr);
  const std::string last = std::to_string(size - 1);
  expectParts(ptrain_last_error(), {"rank 0 posts all_reduce", "(count 8, f32", ("rank " + last).c_str(),
                                    "(count 9, f32", "debug mode", "at step 12)"});
  patientBarrier();
}

TEST(DebugMode, ARankPostingAnotherOperationIsNamed) {
  // Rank 1 starts a barrier where the others start an all-gather.
  std::vector<float> x(4, 0.0f), all(4 * size);
  ptrain_request_t req = nullptr;
  const ptrain_status_t st = rank == 1
                                 ? ptrain_barrier_start(world, &req)
                                 : ptrain_all_gather_start(world, x.data(), all.data(), 4, PTRAIN_DTYPE_F32, &req);
  EXPECT_EQ(st, PTRAIN_ERROR_MISMATCH);
  expectParts(ptrain_last_error(), {"rank 0 posts all_gather", "rank 1 posts barrier"});
  patientBarrier();
}

TEST(DebugMode, ASendOfAnotherSizeIsNamedByTheReceiver) {
  ptrain_comm_t copy = copyOfWorld();
  ASSERT_NE(copy, nullptr);
  ASSERT_PTRAIN_OK(ptrain_comm_set_timeout(copy, 2.0));
  std::vector<char> buf(16);
  ptrain_request_t req = nullptr;
  if (rank == 0) {
    ASSERT_PTRAIN_OK(ptrain_send_start(copy, buf.data(), 16, 1, 5, &req));
    // Nobody receives it: MPI completes the small send eagerly, or it ends
    // at the deadline.
    const ptrain_status_t st = ptrain_wait(req);
    EXPECT_TRUE(st == PTRAIN_OK || st == PTRAIN_ERROR_DEADLINE_EXCEEDED) << ptrain_last_error();
  } else if (rank == 1) {
    EXPECT_EQ(ptrain_recv_start(copy, buf.data(), 8, 0, 5, &req), PTRAIN_ERROR_MISMATCH);
    expectParts(ptrain_last_error(), {"rank 0 posted send #0 to rank 1 (tag 5, 16 bytes)",
                                      "rank 1 posts recv #0 from rank 0 (tag 5, 8 bytes)"});
  }
  patientBarrier();
  ASSERT_PTRAIN_OK(ptrain_comm_destroy(copy));
}

TEST(DebugMode, ARankThatNeverPostsIsADeadlineErrorNamingTheOperation) {
  ptrain_comm_t copy = copyOfWorld();
  ASSERT_NE(copy, nullptr);
  ASSERT_PTRAIN_OK(ptrain_comm_set_timeout(copy, 2.0));
  if (rank != 0) {
    std::vector<float> x(3, 1.0f);
    ptrain_request_t req = nullptr;
    const auto start = Clock::now();
    EXPECT_EQ(ptrain_all_reduce_start(copy, x.data(), x.data(), 3, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_AVG, &req),
              PTRAIN_ERROR_DEADLINE_EXCEEDED);
    const double elapsed = secondsSince(start);
    EXPECT_GE(elapsed, 2.0);
    EXPECT_LT(elapsed, 10.0);
    expectParts(ptrain_last_error(), {"all_reduce #0 (count 3, f32, reduction 1)", "a rank never posted"});
  }
  patientBarrier();
  if (rank == 0) {
    // Late, it completes the fingerprint exchange the others left posted, so
    // the communicator can be freed: with a barrier, which the exchange
    // reports as a mismatch, so no real operation is posted.
    ptrain_request_t req = nullptr;
    ASSERT_PTRAIN_OK(ptrain_comm_set_timeout(copy, 30.0));
    EXPECT_EQ(ptrain_barrier_start(copy, &req), PTRAIN_ERROR_MISMATCH);
    expectParts(ptrain_last_error(), {"rank 0 posts barrier #0", "rank 1 posts all_reduce #0"});
  }
  patientBarrier();
  ASSERT_PTRAIN_OK(ptrain_comm_destroy(copy));
  patientBarrier();
}

} // namespace

PTRAIN_MPI_TEST_MAIN
