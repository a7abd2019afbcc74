//===- Rendezvous.cpp - torchrun-style TCP rendezvous ---------------------===//
//
// The store that bootstraps a job without MPI (issue 9): torchrun's RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT, a TCP star around rank 0, and
// byte exchanges over it (the NCCL unique id on GPU; any bytes on CPU).
//
// Protocol (all integers little-endian, one TCP connection per rank > 0):
//   join:    rank r -> master  "PTRV" u32 version (1), i32 rank, i32 world
//            master -> rank r  u32 status (0 ok, 1 rejected), u32 n, n bytes
//                              of text (the reason; empty when ok)
//            The master answers once every rank has joined, or rejects a
//            rank at once (another WORLD_SIZE, a rank out of range or seen
//            twice) and then fails itself with the same reason.
//   gather:  rank r -> master  u64 n, n bytes
//            master -> rank r  u32 status, u32 n, text; then world * n bytes
//                              (every rank's bytes in rank order) when ok.
// Every read, write, accept and connect is polled against the deadline, so
// no call blocks longer than its timeout; an unreachable master is retried
// (connection refused: the master may start later) until then.
//
//===----------------------------------------------------------------------===//

#include "common/Env.h"
#include "common/RendezvousMessages.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <new>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using ptrain::runtime::fail;

struct ptrain_rendezvous {
  int32_t rank = 0;
  int32_t world = 1;
  double timeoutS = 300.0;
  /// Rank 0: the listening socket and one connection per rank (fds[0] = -1);
  /// other ranks: fds[0] is the connection to the master.
  int listenFd = -1;
  int *fds = nullptr;
  char master[300] = "";
};

namespace {
using Clock = std::chrono::steady_clock;
using ptrain::runtime::rendezvous::kMagic;
using ptrain::runtime::rendezvous::kMaxReason;
using ptrain::runtime::rendezvous::kVersion;
constexpr double kDefaultTimeoutS = 300.0;
constexpr int kRetryMs = 50;

Clock::time_point deadlineIn(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

/// Milliseconds left until `deadline` (>= 0), for poll().
int msLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : left > 1000000 ? 1000000 : static_cast<int>(left);
}

/// Waits until `fd` is ready for `events`: 1 ready, 0 deadline, -1 error.
int waitFd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, msLeft(deadline));
    if (n > 0)
      return (p.revents & (events | POLLHUP | POLLERR)) ? 1 : -1;
    if (n == 0)
      return 0;
    if (errno != EINTR)
      return -1;
  }
}

/// Reads or writes exactly `n` bytes before the deadline. Returns nullptr on
/// success, else what went wrong ("timed out", "connection closed", errno).
const char *transfer(int fd, void *buf, size_t n, bool write, Clock::time_point deadline) {
  char *p = static_cast<char *>(buf);
  while (n > 0) {
    int ready = waitFd(fd, write ? POLLOUT : POLLIN, deadline);
    if (ready == 0)
      return "timed out";
    if (ready < 0)
      return "the connection failed";
    ssize_t done = write ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (done == 0)
      return "the peer closed the connection";
    if (done < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
        continue;
      return std::strerror(errno);
    }
    p += done;
    n -= static_cast<size_t>(done);
  }
  return nullptr;
}

void setNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

void closeAll(ptrain_rendezvous *r) {
  if (r->listenFd >= 0)
    ::close(r->listenFd);
  r->listenFd = -1;
  if (r->fds)
    for (int i = 0; i < r->world; ++i)
      if (r->fds[i] >= 0)
        ::close(r->fds[i]);
  delete[] r->fds;
  r->fds = nullptr;
}

/// The status header the master sends: 0 and no text, or 1 and the reason.
bool sendVerdict(int fd, const char *reason, Clock::time_point deadline) {
  uint32_t head[2] = {reason ? 1u : 0u, reason ? static_cast<uint32_t>(std::strlen(reason)) : 0u};
  if (head[1] > kMaxReason)
    head[1] = kMaxReason;
  if (transfer(fd, head, sizeof(head), true, deadline))
    return false;
  char copy[kMaxReason + 1];
  if (reason)
    std::memcpy(copy, reason, head[1]);
  return !reason || !transfer(fd, copy, head[1], true, deadline);
}

/// The bytes of one connection, each read polled against the deadline.
class SocketInbox final : public ptrain::runtime::rendezvous::Inbox {
public:
  SocketInbox(int fd, Clock::time_point deadline) : fd(fd), deadline(deadline) {}
  const char *read(void *buf, size_t n) override { return transfer(fd, buf, n, false, deadline); }

private:
  int fd;
  Clock::time_point deadline;
};

/// Reads the master's status header; on a rejection, fails with its reason.
ptrain_status_t readVerdict(const char *call, ptrain_rendezvous *r, Clock::time_point deadline, const char *what) {
  namespace rv = ptrain::runtime::rendezvous;
  SocketInbox inbox(r->fds[0], deadline);
  char reason[kMaxReason + 1];
  const char *why = nullptr;
  switch (rv::receiveVerdict(inbox, reason, why)) {
  case rv::Verdict::Ok:
    return PTRAIN_OK;
  case rv::Verdict::Lost:
    return fail(why[0] == 't' ? PTRAIN_ERROR_DEADLINE_EXCEEDED : PTRAIN_ERROR_COMM, call,
                "rank %d: no answer from the master %s to %s within %g s: %s", r->rank, r->master, what, r->timeoutS,
                why);
  case rv::Verdict::Rejected:
    break;
  }
  return fail(PTRAIN_ERROR_MISMATCH, call, "rank %d: the master %s rejected %s: %s", r->rank, r->master, what, reason);
}

/// Resolves host:port to an IPv4 address.
ptrain_status_t resolve(const char *call, const char *host, int32_t port, sockaddr_in &out) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  int err = ::getaddrinfo(host, nullptr, &hints, &found);
  if (err != 0 || !found)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "MASTER_ADDR '%s' does not resolve to an IPv4 address: %s", host,
                gai_strerror(err));
  std::memcpy(&out, found->ai_addr, sizeof(out));
  out.sin_port = htons(static_cast<uint16_t>(port));
  ::freeaddrinfo(found);
  return PTRAIN_OK;
}

/// Rank 0: listens on the port (every interface), accepts world - 1 ranks.
ptrain_status_t runMaster(const char *call, ptrain_rendezvous *r, int32_t port, Clock::time_point deadline) {
  r->listenFd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (r->listenFd < 0)
    return fail(PTRAIN_ERROR_COMM, call, "socket: %s", std::strerror(errno));
  int one = 1;
  ::setsockopt(r->listenFd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  any.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(r->listenFd, reinterpret_cast<sockaddr *>(&any), sizeof(any)) != 0)
    return fail(PTRAIN_ERROR_COMM, call, "rank 0 cannot listen on MASTER_PORT %d: %s", port, std::strerror(errno));
  if (::listen(r->listenFd, r->world) != 0)
    return fail(PTRAIN_ERROR_COMM, call, "listen on port %d: %s", port, std::strerror(errno));
  setNonBlocking(r->listenFd);
  for (int joined = 1; joined < r->world;) {
    int ready = waitFd(r->listenFd, POLLIN, deadline);
    if (ready <= 0) {
      char missing[256] = "";
      size_t used = 0;
      for (int i = 1; i < r->world && used + 12 < sizeof(missing); ++i)
        if (r->fds[i] < 0)
          used +=
              static_cast<size_t>(std::snprintf(missing + used, sizeof(missing) - used, "%s%d", used ? ", " : "", i));
      return fail(PTRAIN_ERROR_DEADLINE_EXCEEDED, call,
                  "rank 0 (the master, port %d): %d of %d ranks joined within %g s; missing rank(s) %s", port, joined,
                  r->world, r->timeoutS, missing);
    }
    int fd = ::accept(r->listenFd, nullptr, nullptr);
    if (fd < 0)
      continue;
    setNonBlocking(fd);
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SocketInbox inbox(fd, deadline);
    ptrain::runtime::rendezvous::Join join;
    if (ptrain::runtime::rendezvous::receiveJoin(inbox, join) || !join.fromPtrainRank()) {
      ::close(fd); // Not a ptrain rank (a port scanner, another program): ignore it.
      continue;
    }
    char reason[256];
    ptrain::runtime::rendezvous::judgeJoin(join, r->world, r->fds, reason, sizeof(reason));
    const int32_t rank = join.rank;
    if (reason[0]) {
      // Every rank that joined hears the reason too, so none waits for the rest.
      sendVerdict(fd, reason, deadline);
      ::close(fd);
      for (int i = 1; i < r->world; ++i)
        if (r->fds[i] >= 0)
          sendVerdict(r->fds[i], reason, deadline);
      return fail(PTRAIN_ERROR_MISMATCH, call, "rank 0 (the master): %s", reason);
    }
    r->fds[rank] = fd;
    ++joined;
  }
  for (int i = 1; i < r->world; ++i)
    if (!sendVerdict(r->fds[i], nullptr, deadline))
      return fail(PTRAIN_ERROR_COMM, call, "rank 0: lost rank %d while confirming the rendezvous", i);
  return PTRAIN_OK;
}

/// Ranks > 0: connects to the master, retrying until the deadline.
ptrain_status_t runWorker(const char *call, ptrain_rendezvous *r, const sockaddr_in &addr, Clock::time_point deadline) {
  const char *lastError = "timed out";
  char lastText[128] = "";
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
      return fail(PTRAIN_ERROR_COMM, call, "socket: %s", std::strerror(errno));
    setNonBlocking(fd);
    int rc = ::connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof(addr));
    int err = rc == 0 ? 0 : errno;
    if (rc != 0 && err == EINPROGRESS) {
      int ready = waitFd(fd, POLLOUT, deadline);
      socklen_t len = sizeof(err);
      err = ready == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 ? err : ready == 0 ? ETIMEDOUT : EIO;
    }
    if (err == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      r->fds[0] = fd;
      break;
    }
    ::close(fd);
    std::snprintf(lastText, sizeof(lastText), "%s", std::strerror(err));
    lastError = lastText;
    if (msLeft(deadline) <= kRetryMs)
      return fail(PTRAIN_ERROR_DEADLINE_EXCEEDED, call,
                  "rank %d cannot reach the master at %s (MASTER_ADDR:MASTER_PORT) within %g s: %s", r->rank, r->master,
                  r->timeoutS, lastError);
    std::this_thread::sleep_for(std::chrono::milliseconds(kRetryMs));
  }
  const int32_t hello[4] = {static_cast<int32_t>(kMagic), static_cast<int32_t>(kVersion), r->rank, r->world};
  if (const char *why = transfer(r->fds[0], const_cast<int32_t *>(hello), sizeof(hello), true, deadline))
    return fail(PTRAIN_ERROR_COMM, call, "rank %d: cannot send its join to the master %s: %s", r->rank, r->master, why);
  return readVerdict(call, r, deadline, "the join");
}
} // namespace

extern "C" ptrain_status_t ptrain_rendezvous_init(int32_t rank, int32_t world_size, const char *master_addr,
                                                  int32_t master_port, double timeout_s,
                                                  ptrain_rendezvous_t *out_rendezvous) {
  PTRAIN_CHECK_PTR(out_rendezvous);
  *out_rendezvous = nullptr;
  PTRAIN_CHECK_PTR(master_addr);
  PTRAIN_CHECK_ARG(world_size >= 1, "world_size must be >= 1, got %d", world_size);
  PTRAIN_CHECK_ARG(rank >= 0 && rank < world_size, "rank %d is not in [0, world_size = %d)", rank, world_size);
  PTRAIN_CHECK_ARG(master_port >= 1 && master_port <= 65535, "master_port must be in [1, 65535], got %d", master_port);
  PTRAIN_CHECK_ARG(timeout_s > 0.0 && timeout_s < 1e9, "timeout_s must be a positive number of seconds, got %g",
                   timeout_s);
  sockaddr_in addr{};
  PTRAIN_RETURN_IF_ERROR(resolve(__func__, master_addr, master_port, addr));
  auto *r = new (std::nothrow) ptrain_rendezvous();
  int *fds = new (std::nothrow) int[static_cast<size_t>(world_size)];
  if (!r || !fds) {
    delete r;
    delete[] fds;
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "the rendezvous");
  }
  for (int i = 0; i < world_size; ++i)
    fds[i] = -1;
  r->rank = rank;
  r->world = world_size;
  r->timeoutS = timeout_s;
  r->fds = fds;
  std::snprintf(r->master, sizeof(r->master), "%s:%d", master_addr, master_port);
  const auto deadline = deadlineIn(timeout_s);
  ptrain_status_t st = rank == 0 ? (world_size == 1 ? PTRAIN_OK : runMaster(__func__, r, master_port, deadline))
                                 : runWorker(__func__, r, addr, deadline);
  if (st != PTRAIN_OK) {
    closeAll(r);
    delete r;
    return st;
  }
  *out_rendezvous = r;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_rendezvous_init_env(double timeout_s, ptrain_rendezvous_t *out_rendezvous) {
  PTRAIN_CHECK_PTR(out_rendezvous);
  *out_rendezvous = nullptr;
  int64_t world = 0, rank = 0, port = 0;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::readEnvInt(__func__, "WORLD_SIZE", 1, 1 << 20, world));
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::readEnvInt(__func__, "RANK", 0, world - 1, rank));
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::readEnvInt(__func__, "MASTER_PORT", 1, 65535, port));
  const char *addr = std::getenv("MASTER_ADDR");
  PTRAIN_CHECK_ARG(addr && *addr, "MASTER_ADDR is not set");
  if (timeout_s <= 0.0)
    PTRAIN_RETURN_IF_ERROR(
        ptrain::runtime::readEnvSeconds(__func__, "PTRAIN_COMM_TIMEOUT_S", kDefaultTimeoutS, timeout_s));
  return ptrain_rendezvous_init(static_cast<int32_t>(rank), static_cast<int32_t>(world), addr,
                                static_cast<int32_t>(port), timeout_s, out_rendezvous);
}

extern "C" ptrain_status_t ptrain_rendezvous_rank(ptrain_rendezvous_t rendezvous, int32_t *out_rank,
                                                  int32_t *out_world_size) {
  PTRAIN_CHECK_PTR(rendezvous);
  PTRAIN_CHECK_PTR(out_rank);
  PTRAIN_CHECK_PTR(out_world_size);
  *out_rank = rendezvous->rank;
  *out_world_size = rendezvous->world;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_rendezvous_all_gather(ptrain_rendezvous_t rendezvous, const void *data,
                                                        int64_t num_bytes, void *out) {
  PTRAIN_CHECK_PTR(rendezvous);
  PTRAIN_CHECK_ARG(num_bytes >= 0 && num_bytes <= (int64_t(1) << 30), "num_bytes must be in [0, 2^30], got %lld",
                   static_cast<long long>(num_bytes));
  PTRAIN_CHECK_ARG(num_bytes == 0 || (data && out), "'data' and 'out' must not be null");
  ptrain_rendezvous *r = rendezvous;
  const auto deadline = deadlineIn(r->timeoutS);
  const size_t n = static_cast<size_t>(num_bytes);
  char *all = static_cast<char *>(out);
  if (r->rank != 0) {
    uint64_t size = static_cast<uint64_t>(num_bytes);
    const char *why = transfer(r->fds[0], &size, sizeof(size), true, deadline);
    if (!why)
      why = transfer(r->fds[0], const_cast<void *>(data), n, true, deadline);
    if (why)
      return fail(PTRAIN_ERROR_COMM, __func__, "rank %d: cannot send %lld bytes to the master %s: %s", r->rank,
                  static_cast<long long>(num_bytes), r->master, why);
    PTRAIN_RETURN_IF_ERROR(readVerdict(__func__, r, deadline, "the all-gather"));
    if (const char *whyAll = transfer(r->fds[0], all, n * static_cast<size_t>(r->world), false, deadline))
      return fail(whyAll[0] == 't' ? PTRAIN_ERROR_DEADLINE_EXCEEDED : PTRAIN_ERROR_COMM, __func__,
                  "rank %d: the all-gather's result from the master %s: %s", r->rank, r->master, whyAll);
    return PTRAIN_OK;
  }
  if (n)
    std::memmove(all, data, n);
  char reason[256] = "";
  ptrain_status_t st = PTRAIN_OK;
  for (int i = 1; i < r->world && st == PTRAIN_OK; ++i) {
    uint64_t size = 0;
    const char *why = transfer(r->fds[i], &size, sizeof(size), false, deadline);
    if (!why && size != static_cast<uint64_t>(num_bytes)) {
      std::snprintf(reason, sizeof(reason), "rank %d gathers %llu bytes but rank 0 gathers %lld", i,
                    static_cast<unsigned long long>(size), static_cast<long long>(num_bytes));
      st = fail(PTRAIN_ERROR_MISMATCH, __func__, "rank 0 (the master): %s", reason);
      break;
    }
    if (!why)
      why = transfer(r->fds[i], all + n * static_cast<size_t>(i), n, false, deadline);
    if (why)
      st = fail(why[0] == 't' ? PTRAIN_ERROR_DEADLINE_EXCEEDED : PTRAIN_ERROR_COMM, __func__,
                "rank 0 (the master): rank %d did not send its %lld bytes within %g s: %s", i,
                static_cast<long long>(num_bytes), r->timeoutS, why);
  }
  for (int i = 1; i < r->world; ++i) {
    if (!sendVerdict(r->fds[i],
                     st == PTRAIN_OK ? nullptr
                     : reason[0]     ? reason
                                     : "another rank failed",
                     deadline) ||
        (st == PTRAIN_OK && transfer(r->fds[i], all, n * static_cast<size_t>(r->world), true, deadline)))
      if (st == PTRAIN_OK)
        st = fail(PTRAIN_ERROR_COMM, __func__, "rank 0 (the master): lost rank %d sending the result", i);
  }
  return st;
}

extern "C" ptrain_status_t ptrain_rendezvous_broadcast(ptrain_rendezvous_t rendezvous, void *data, int64_t num_bytes,
                                                       int32_t root) {
  PTRAIN_CHECK_PTR(rendezvous);
  PTRAIN_CHECK_ARG(root >= 0 && root < rendezvous->world, "root %d is not a rank of the rendezvous (world size %d)",
                   root, rendezvous->world);
  PTRAIN_CHECK_ARG(num_bytes >= 0 && num_bytes <= (int64_t(1) << 30) / rendezvous->world,
                   "num_bytes must be in [0, 2^30 / world size], got %lld", static_cast<long long>(num_bytes));
  // Through the all-gather: the payloads this store carries (ids, a few
  // hundred bytes) make its world-times traffic irrelevant.
  char *all = ptrain::runtime::allocArray<char>(num_bytes * rendezvous->world);
  if (!all)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "%lld bytes",
                static_cast<long long>(num_bytes * rendezvous->world));
  ptrain_status_t st = ptrain_rendezvous_all_gather(rendezvous, data, num_bytes, all);
  if (st == PTRAIN_OK && num_bytes > 0)
    std::memcpy(data, all + num_bytes * root, static_cast<size_t>(num_bytes));
  std::free(all);
  return st;
}

extern "C" ptrain_status_t ptrain_rendezvous_destroy(ptrain_rendezvous_t rendezvous) {
  PTRAIN_CHECK_PTR(rendezvous);
  closeAll(rendezvous);
  delete rendezvous;
  return PTRAIN_OK;
}
