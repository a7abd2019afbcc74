//===- RendezvousFuzzer.cpp - libFuzzer target: the rendezvous messages ---===//
//
// Input: the bytes a rank receives during the TCP rendezvous (lib/Runtime/common/Rendezvous.cpp describes
// the protocol). The first byte picks the master's WORLD_SIZE (2 to 9); the master then reads joins from the
// rest (receiveJoin, judgeJoin: RendezvousMessages.h) until every rank joined, a join is rejected or the
// bytes end; what is left is read as a worker reads the master's verdicts (receiveVerdict), until the bytes
// end. The code is the one Rendezvous.cpp runs on its sockets. Checked:
//  - no read or write outside the buffers (AddressSanitizer);
//  - an accepted join is a ptrain rank in [1, world) that had not joined; a rejected one has a reason;
//  - a rejection's reason is NUL-terminated and at most kMaxReason bytes.
// A broken property aborts, which libFuzzer reports as a crash.
//
//===----------------------------------------------------------------------===//

#include "common/RendezvousMessages.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace ptrain::runtime::rendezvous;

namespace {

[[noreturn]] void broken(const char *what) {
  std::fprintf(stderr, "RendezvousFuzzer: property broken: %s\n", what);
  std::abort();
}

void check(bool ok, const char *what) {
  if (!ok)
    broken(what);
}

/// The fuzz input as a connection: it closes when the bytes end.
class BytesInbox final : public Inbox {
public:
  BytesInbox(const uint8_t *data, size_t size) : data(data), size(size) {}
  const char *read(void *buf, size_t n) override {
    if (n > size - pos) {
      pos = size;
      return "the peer closed the connection";
    }
    std::memcpy(buf, data + pos, n);
    pos += n;
    return nullptr;
  }
  bool empty() const { return pos == size; }

private:
  const uint8_t *data;
  size_t size, pos = 0;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const int32_t world = 2 + data[0] % 8;
  BytesInbox in(data + 1, size - 1);

  int fds[10];
  for (int &fd : fds)
    fd = -1;
  for (int joined = 1; joined < world;) {
    Join join;
    if (receiveJoin(in, join))
      break;
    if (!join.fromPtrainRank())
      continue; // The master closes such a connection and waits for the next.
    char reason[256];
    std::memset(reason, 'x', sizeof(reason));
    judgeJoin(join, world, fds, reason, sizeof(reason));
    check(std::memchr(reason, '\0', sizeof(reason)) != nullptr, "a join's reason is terminated");
    if (reason[0]) {
      check(join.world != world || join.rank <= 0 || join.rank >= world || fds[join.rank] >= 0,
            "only a bad join is rejected");
      break;
    }
    check(join.world == world && join.rank >= 1 && join.rank < world && fds[join.rank] < 0,
          "an accepted join is a new rank of this world");
    fds[join.rank] = join.rank;
    ++joined;
  }

  while (!in.empty()) {
    char reason[kMaxReason + 1];
    std::memset(reason, 'x', sizeof(reason));
    const char *why = nullptr;
    const Verdict v = receiveVerdict(in, reason, why);
    if (v == Verdict::Lost) {
      check(why != nullptr, "a lost verdict says why");
      break;
    }
    check(std::memchr(reason, '\0', sizeof(reason)) != nullptr, "a verdict's reason is terminated");
  }
  return 0;
}
