//===- MPITest.h - Shared setup of the runtime's mpirun tests ---*- C++ -*-===//
//
// The MPI test binaries run under `mpirun -np N`; every rank runs every test.
// This header holds the world communicator, the rank and size, a barrier
// with a generous deadline, and the main function (PTRAIN_MPI_TEST_MAIN).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_UNITTESTS_RUNTIME_MPITEST_H
#define PTRAIN_UNITTESTS_RUNTIME_MPITEST_H

#include "GradCheck.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>

namespace ptrain::testing {

inline ptrain_comm_t world = nullptr;
inline int32_t rank = -1, size = 0;

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A barrier with a generous deadline, so a rank that just sat out a 2 s
/// deadline test does not make the others miss theirs.
inline void patientBarrier(ptrain_comm_t comm = world) {
  double saved = 0.0;
  ASSERT_PTRAIN_OK(ptrain_comm_timeout(comm, &saved));
  ASSERT_PTRAIN_OK(ptrain_comm_set_timeout(comm, 60.0));
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(ptrain_barrier_start(comm, &req));
  ASSERT_PTRAIN_OK(ptrain_wait(req));
  ASSERT_PTRAIN_OK(ptrain_comm_set_timeout(comm, saved));
}

/// Waits on `req`, which must fail with DEADLINE_EXCEEDED after the 2 s
/// deadline (and well before 10 s), with a message holding every part;
/// returns the message.
inline std::string expectDeadline(ptrain_request_t req, std::initializer_list<const char *> parts) {
  const auto start = Clock::now();
  EXPECT_EQ(ptrain_wait(req), PTRAIN_ERROR_DEADLINE_EXCEEDED);
  const double elapsed = secondsSince(start);
  EXPECT_GE(elapsed, 2.0);
  EXPECT_LT(elapsed, 10.0);
  const std::string message = ptrain_last_error();
  for (const char *part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' missing from: " << message;
  return message;
}

/// A codec descriptor of `kind` on a rows x cols tensor, other fields zero.
inline ptrain_codec_t codecOf(ptrain_codec_kind_t kind, int64_t rows, int64_t cols) {
  ptrain_codec_t c;
  std::memset(&c, 0, sizeof(c));
  c.kind = kind;
  c.batch = 1;
  c.rows = rows;
  c.cols = cols;
  return c;
}

/// A copy of the world (for tests that break a communicator on purpose).
inline ptrain_comm_t copyOfWorld() {
  std::vector<int32_t> all(size);
  for (int32_t i = 0; i < size; ++i)
    all[i] = i;
  ptrain_comm_t copy = nullptr;
  EXPECT_EQ(ptrain_comm_create_group(world, all.data(), size, &copy), PTRAIN_OK) << ptrain_last_error();
  return copy;
}

inline int runMpiTests(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (ptrain_comm_init(&world) != PTRAIN_OK || ptrain_comm_rank(world, &rank) != PTRAIN_OK ||
      ptrain_comm_size(world, &size) != PTRAIN_OK) {
    std::fprintf(stderr, "ptrain_comm_init: %s\n", ptrain_last_error());
    return 1;
  }
  int failed = RUN_ALL_TESTS();
  if (ptrain_comm_destroy(world) != PTRAIN_OK) {
    std::fprintf(stderr, "ptrain_comm_destroy: %s\n", ptrain_last_error());
    return 1;
  }
  return failed;
}

} // namespace ptrain_testing

#define PTRAIN_MPI_TEST_MAIN                                                                                           \
  int main(int argc, char **argv) { return ptrain::testing::runMpiTests(argc, argv); }

#endif // PTRAIN_UNITTESTS_RUNTIME_MPITEST_H
