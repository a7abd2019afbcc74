//===- RendezvousTest.cpp - torchrun-style TCP rendezvous, real processes -===//
//
// Every case forks real processes that meet on loopback through the
// rendezvous (as torchrun's workers would), each with its own RANK; a child
// reports its status and ptrain_last_error() through a pipe.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/ptrain_runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#define PTRAIN_RETURN_IF_ERROR_TEST(expr)                                                                              \
  do {                                                                                                                 \
    ptrain_status_t st_ = (expr);                                                                                      \
    if (st_ != PTRAIN_OK)                                                                                              \
      return st_;                                                                                                      \
  } while (0)

namespace {

/// A port no one listens on right now (bound to 0, read back, closed).
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct ChildResult {
  int status = -1;     // the call's ptrain_status_t, or -1 if the child died
  std::string message; // ptrain_last_error() when status != 0
  double seconds = 0;  // how long the child's body ran
};

/// Runs body(rank) in `ranks` forked processes at once; body returns a status.
std::vector<ChildResult> runRanks(int ranks, const std::function<ptrain_status_t(int)> &body) {
  std::vector<int> readFds(ranks);
  std::vector<pid_t> pids(ranks);
  for (int r = 0; r < ranks; ++r) {
    int p[2];
    EXPECT_EQ(::pipe(p), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      auto start = std::chrono::steady_clock::now();
      ptrain_status_t st = body(r);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      char buf[2048];
      int n = std::snprintf(buf, sizeof(buf), "%d %.3f %s", st, secs, st == PTRAIN_OK ? "" : ptrain_last_error());
      if (::write(p[1], buf, static_cast<size_t>(n)) < 0)
        ::_exit(3);
      ::_exit(0);
    }
    ::close(p[1]);
    readFds[r] = p[0];
    pids[r] = pid;
  }
  std::vector<ChildResult> out(ranks);
  for (int r = 0; r < ranks; ++r) {
    std::string text;
    char buf[512];
    ssize_t n;
    while ((n = ::read(readFds[r], buf, sizeof(buf))) > 0)
      text.append(buf, static_cast<size_t>(n));
    ::close(readFds[r]);
    int wstatus = 0;
    ::waitpid(pids[r], &wstatus, 0);
    int status = -1, used = 0;
    double secs = 0;
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 &&
        std::sscanf(text.c_str(), "%d %lf %n", &status, &secs, &used) >= 2) {
      out[r].status = status;
      out[r].seconds = secs;
      out[r].message = text.substr(static_cast<size_t>(used));
    }
  }
  return out;
}

/// A 128-byte id (the size of ncclUniqueId) that depends on the rank.
std::vector<unsigned char> idOf(int rank) {
  std::vector<unsigned char> id(128);
  for (size_t i = 0; i < id.size(); ++i)
    id[i] = static_cast<unsigned char>(rank * 37 + i * 11 + 1);
  return id;
}

/// Joins, all-gathers every rank's id and checks them, then broadcasts rank
/// 0's id (as the NCCL bootstrap does) and checks it.
ptrain_status_t exchangeIds(ptrain_rendezvous_t rv, int world) {
  int32_t rank = -1, size = -1;
  PTRAIN_RETURN_IF_ERROR_TEST(ptrain_rendezvous_rank(rv, &rank, &size));
  if (size != world)
    return PTRAIN_ERROR_INTERNAL;
  std::vector<unsigned char> all(128 * static_cast<size_t>(world));
  std::vector<unsigned char> mine = idOf(rank);
  PTRAIN_RETURN_IF_ERROR_TEST(ptrain_rendezvous_all_gather(rv, mine.data(), 128, all.data()));
  for (int r = 0; r < world; ++r)
    if (std::memcmp(all.data() + 128 * r, idOf(r).data(), 128) != 0)
      return PTRAIN_ERROR_INTERNAL;
  PTRAIN_RETURN_IF_ERROR_TEST(ptrain_rendezvous_broadcast(rv, mine.data(), 128, 0));
  if (mine != idOf(0))
    return PTRAIN_ERROR_INTERNAL;
  // An empty all-gather is a barrier.
  PTRAIN_RETURN_IF_ERROR_TEST(ptrain_rendezvous_all_gather(rv, nullptr, 0, nullptr));
  return ptrain_rendezvous_destroy(rv);
}

void setEnv(int rank, int world, int port) {
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
}

TEST(RendezvousTest, FourProcessesExchangeIdsFromTheEnvironment) {
  const int port = freePort();
  auto results = runRanks(4, [&](int rank) -> ptrain_status_t {
    // Ranks start in another order than their numbers: 3 first, the master last.
    ::usleep(static_cast<useconds_t>((3 - rank) * 100000));
    setEnv(rank, 4, port);
    ptrain_rendezvous_t rv = nullptr;
    PTRAIN_RETURN_IF_ERROR_TEST(ptrain_rendezvous_init_env(20.0, &rv));
    return exchangeIds(rv, 4);
  });
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(results[r].status, PTRAIN_OK) << "rank " << r << ": " << results[r].message;
}

TEST(RendezvousTest, EightProcessesWithExplicitArguments) {
  const int port = freePort();
  auto results = runRanks(8, [&](int rank) -> ptrain_status_t {
    ptrain_rendezvous_t rv = nullptr;
    PTRAIN_RETURN_IF_ERROR_TEST(ptrain_rendezvous_init(rank, 8, "localhost", port, 20.0, &rv));
    return exchangeIds(rv, 8);
  });
  for (int r = 0; r < 8; ++r)
    EXPECT_EQ(results[r].status, PTRAIN_OK) << "rank " << r << ": " << results[r].message;
}

TEST(RendezvousTest, WorldOfOneNeedsNoMaster) {
  ptrain_rendezvous_t rv = nullptr;
  ASSERT_EQ(ptrain_rendezvous_init(0, 1, "127.0.0.1", freePort(), 1.0, &rv), PTRAIN_OK) << ptrain_last_error();
  EXPECT_EQ(exchangeIds(rv, 1), PTRAIN_OK) << ptrain_last_error();
}

TEST(RendezvousTest, UnreachableMasterFailsWithinTheTimeout) {
  const int port = freePort();
  auto results = runRanks(1, [&](int) {
    ptrain_rendezvous_t rv = nullptr;
    return ptrain_rendezvous_init(1, 2, "127.0.0.1", port, 1.0, &rv);
  });
  EXPECT_EQ(results[0].status, PTRAIN_ERROR_DEADLINE_EXCEEDED) << results[0].message;
  EXPECT_NE(results[0].message.find("cannot reach the master at 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << results[0].message;
  EXPECT_NE(results[0].message.find("within 1 s"), std::string::npos) << results[0].message;
  EXPECT_GE(results[0].seconds, 0.9);
  EXPECT_LT(results[0].seconds, 3.0);
}

TEST(RendezvousTest, MissingRankIsNamedByTheMaster) {
  const int port = freePort();
  auto results = runRanks(2, [&](int rank) {
    ptrain_rendezvous_t rv = nullptr;
    // World 3, but rank 2 never starts.
    return ptrain_rendezvous_init(rank, 3, "127.0.0.1", port, 1.5, &rv);
  });
  EXPECT_EQ(results[0].status, PTRAIN_ERROR_DEADLINE_EXCEEDED) << results[0].message;
  EXPECT_NE(results[0].message.find("2 of 3 ranks joined within 1.5 s; missing rank(s) 2"), std::string::npos)
      << results[0].message;
  EXPECT_LT(results[0].seconds, 4.0);
  EXPECT_NE(results[1].status, PTRAIN_OK);
  EXPECT_LT(results[1].seconds, 4.0);
}

TEST(RendezvousTest, WorldSizeMismatchIsReportedOnBothSides) {
  const int port = freePort();
  auto results = runRanks(2, [&](int rank) {
    setEnv(rank, rank == 0 ? 2 : 3, port);
    ptrain_rendezvous_t rv = nullptr;
    return ptrain_rendezvous_init_env(10.0, &rv);
  });
  const std::string reason = "rank 1 has WORLD_SIZE=3 but the master (rank 0) has WORLD_SIZE=2";
  EXPECT_EQ(results[0].status, PTRAIN_ERROR_MISMATCH) << results[0].message;
  EXPECT_NE(results[0].message.find(reason), std::string::npos) << results[0].message;
  EXPECT_EQ(results[1].status, PTRAIN_ERROR_MISMATCH) << results[1].message;
  EXPECT_NE(results[1].message.find("rejected the join: " + reason), std::string::npos) << results[1].message;
  EXPECT_LT(results[1].seconds, 5.0); // told at once, not at the timeout
}

TEST(RendezvousTest, DuplicateRankIsRejected) {
  const int port = freePort();
  auto results = runRanks(3, [&](int rank) {
    ptrain_rendezvous_t rv = nullptr;
    if (rank == 2)
      ::usleep(300000); // the second rank 1 arrives after the first
    return ptrain_rendezvous_init(rank == 0 ? 0 : 1, 3, "127.0.0.1", port, 10.0, &rv);
  });
  EXPECT_EQ(results[0].status, PTRAIN_ERROR_MISMATCH) << results[0].message;
  EXPECT_NE(results[0].message.find("RANK=1 joined twice"), std::string::npos) << results[0].message;
  EXPECT_EQ(results[1].status, PTRAIN_ERROR_MISMATCH) << results[1].message;
  EXPECT_EQ(results[2].status, PTRAIN_ERROR_MISMATCH) << results[2].message;
}

TEST(RendezvousTest, GatherOfDifferentSizesFailsOnEveryRank) {
  const int port = freePort();
  auto results = runRanks(3, [&](int rank) -> ptrain_status_t {
    ptrain_rendezvous_t rv = nullptr;
    PTRAIN_RETURN_IF_ERROR_TEST(ptrain_rendezvous_init(rank, 3, "127.0.0.1", port, 10.0, &rv));
    char data[16] = {}, out[48];
    return ptrain_rendezvous_all_gather(rv, data, rank == 2 ? 16 : 8, out);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(results[r].status, PTRAIN_ERROR_MISMATCH) << "rank " << r << ": " << results[r].message;
    EXPECT_NE(results[r].message.find("rank 2 gathers 16 bytes but rank 0 gathers 8"), std::string::npos)
        << "rank " << r << ": " << results[r].message;
  }
}

TEST(RendezvousTest, EnvironmentErrorsNameTheVariable) {
  auto expectError = [](const char *what) {
    ptrain_rendezvous_t rv = nullptr;
    EXPECT_EQ(ptrain_rendezvous_init_env(1.0, &rv), PTRAIN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ptrain_last_error()).find(what), std::string::npos) << ptrain_last_error();
    EXPECT_EQ(rv, nullptr);
  };
  setEnv(0, 2, 29500);
  ::unsetenv("RANK");
  expectError("RANK is not set");
  ::setenv("RANK", "two", 1);
  expectError("RANK must be an integer in [0, 1], got 'two'");
  ::setenv("RANK", "2", 1);
  expectError("RANK must be an integer in [0, 1], got '2'");
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", "0", 1);
  expectError("WORLD_SIZE must be an integer");
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("MASTER_PORT", "70000", 1);
  expectError("MASTER_PORT must be an integer in [1, 65535], got '70000'");
  ::setenv("MASTER_PORT", "29500", 1);
  ::unsetenv("MASTER_ADDR");
  expectError("MASTER_ADDR is not set");
  ::setenv("MASTER_ADDR", "no.such.host.invalid", 1);
  expectError("MASTER_ADDR 'no.such.host.invalid' does not resolve");
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("PTRAIN_COMM_TIMEOUT_S", "soon", 1);
  ptrain_rendezvous_t rv = nullptr;
  EXPECT_EQ(ptrain_rendezvous_init_env(0.0, &rv), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("PTRAIN_COMM_TIMEOUT_S must be a positive number"),
            std::string::npos);
  ::unsetenv("PTRAIN_COMM_TIMEOUT_S");
  for (const char *v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    ::unsetenv(v);
}

TEST(RendezvousTest, ArgumentErrors) {
  ptrain_rendezvous_t rv = nullptr;
  EXPECT_EQ(ptrain_rendezvous_init(2, 2, "127.0.0.1", 29500, 1.0, &rv), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("rank 2 is not in [0, world_size = 2)"), std::string::npos);
  EXPECT_EQ(ptrain_rendezvous_init(0, 2, "127.0.0.1", 29500, 0.0, &rv), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_rendezvous_init(0, 2, nullptr, 29500, 1.0, &rv), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_rendezvous_init(0, 2, "127.0.0.1", 0, 1.0, &rv), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_rendezvous_destroy(nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
}

} // namespace
