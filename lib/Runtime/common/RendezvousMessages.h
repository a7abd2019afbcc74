//===- RendezvousMessages.h - The rendezvous protocol's messages -*- C++ -*-===//
//
// What a rank makes of the bytes it receives during the TCP rendezvous (Rendezvous.cpp describes the
// protocol): the master's join check and a worker's reading of the master's verdict. The bytes come from an
// Inbox: a socket polled against the deadline in Rendezvous.cpp, bytes in memory in the fuzz target
// fuzz/RendezvousFuzzer.cpp, so that both run this same code.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_RENDEZVOUSMESSAGES_H
#define PTRAIN_RUNTIME_COMMON_RENDEZVOUSMESSAGES_H

#include <cstddef>
#include <cstdint>

namespace ptrain::runtime::rendezvous {

constexpr uint32_t kMagic = 0x56525450; // "PTRV"
constexpr uint32_t kVersion = 1;
/// The longest reason text a verdict carries (bytes, without a NUL).
constexpr uint32_t kMaxReason = 1024;

/// Where a rank reads the next bytes of the connection from.
class Inbox {
public:
  virtual ~Inbox() = default;
  /// Reads exactly `n` bytes into `buf`: nullptr on success, else what went wrong ("timed out" -- the
  /// first letter 't' marks a deadline --, "the peer closed the connection", an errno text).
  virtual const char *read(void *buf, size_t n) = 0;
};

/// A join as the master decodes it: "PTRV", u32 version, i32 rank, i32 world (16 bytes, little-endian).
struct Join {
  uint32_t magic = 0, version = 0;
  int32_t rank = 0, world = 0;
  /// Whether the sender speaks this protocol (a port scanner or another program does not: it is ignored).
  bool fromPtrainRank() const { return magic == kMagic && version == kVersion; }
};

/// Reads one join: nullptr, or what went wrong with the connection.
const char *receiveJoin(Inbox &in, Join &out);

/// The master's check of a ptrain rank's join against its own WORLD_SIZE `world` and its connections by rank
/// `fds` (`world` entries; -1 where rank r has not joined yet): "" in `reason` when accepted, else why the rendezvous fails
/// (another WORLD_SIZE, a rank outside [1, world), a rank that joined twice). `reason` has `reasonSize`
/// bytes (> 0) and is always NUL-terminated.
void judgeJoin(const Join &join, int32_t world, const int *fds, char *reason, size_t reasonSize);

/// A worker's reading of the master's verdict: u32 status (0 ok, else rejected), u32 n, n bytes of reason.
enum class Verdict { Ok, Rejected, Lost };
/// Reads one verdict. Ok; Rejected with the reason in `reason` (the first kMaxReason bytes, NUL-terminated;
/// "(the reason was cut off)" if the connection ended inside it); Lost when the header did not arrive, with
/// the connection's error in `why`.
Verdict receiveVerdict(Inbox &in, char (&reason)[kMaxReason + 1], const char *&why);

} // namespace ptrain::runtime::rendezvous

#endif // PTRAIN_RUNTIME_COMMON_RENDEZVOUSMESSAGES_H
