//===- CommConfigTest.cpp - Communicator arguments checked before MPI -----===//
//
// What can be checked without mpirun: these calls fail before MPI is touched
// (MPI is never initialized in this process).
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include <cstdlib>
#include <string>

namespace {

TEST(CommConfig, MalformedTimeoutIsRejectedBeforeMPIStarts) {
  for (const char *bad : {"soon", "0", "-5", "2s", "inf"}) {
    ASSERT_EQ(setenv("PTRAIN_COMM_TIMEOUT_S", bad, 1), 0);
    ptrain_comm_t comm = reinterpret_cast<ptrain_comm_t>(0x1);
    EXPECT_EQ(ptrain_comm_init(&comm), PTRAIN_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(comm, nullptr) << bad;
    EXPECT_NE(std::string(ptrain_last_error()).find(bad), std::string::npos)
        << ptrain_last_error();
  }
  unsetenv("PTRAIN_COMM_TIMEOUT_S");
}

TEST(CommConfig, NullHandlesAreInvalidArguments) {
  int32_t rank = 0;
  double seconds = 0.0;
  ptrain_request_t req = nullptr;
  float buf = 0.0f;
  EXPECT_EQ(ptrain_comm_rank(nullptr, &rank), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_comm_timeout(nullptr, &seconds),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_send_start(nullptr, &buf, 4, 0, 0, &req),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_all_reduce_start(nullptr, &buf, &buf, 1, PTRAIN_DTYPE_F32,
                                    PTRAIN_REDUCE_SUM, &req),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_wait(nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_comm_destroy(nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
}

} // namespace
