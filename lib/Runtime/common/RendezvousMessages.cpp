//===- RendezvousMessages.cpp - The rendezvous protocol's messages --------===//

#include "common/RendezvousMessages.h"

#include <cstdio>
#include <cstring>

namespace ptrain::runtime::rendezvous {

const char *receiveJoin(Inbox &in, Join &out) {
  unsigned char bytes[16];
  if (const char *why = in.read(bytes, sizeof(bytes)))
    return why;
  std::memcpy(&out.magic, bytes, 4);
  std::memcpy(&out.version, bytes + 4, 4);
  std::memcpy(&out.rank, bytes + 8, 4);
  std::memcpy(&out.world, bytes + 12, 4);
  return nullptr;
}

void judgeJoin(const Join &join, int32_t world, const int *fds, char *reason, size_t reasonSize) {
  reason[0] = '\0';
  if (join.world != world)
    std::snprintf(reason, reasonSize, "rank %d has WORLD_SIZE=%d but the master (rank 0) has WORLD_SIZE=%d",
                  join.rank, join.world, world);
  else if (join.rank <= 0 || join.rank >= world)
    std::snprintf(reason, reasonSize, "RANK=%d is not in [1, %d)", join.rank, world);
  else if (fds[join.rank] >= 0)
    std::snprintf(reason, reasonSize, "RANK=%d joined twice", join.rank);
}

Verdict receiveVerdict(Inbox &in, char (&reason)[kMaxReason + 1], const char *&why) {
  uint32_t head[2];
  reason[0] = '\0';
  if ((why = in.read(head, sizeof(head))))
    return Verdict::Lost;
  if (head[0] == 0)
    return Verdict::Ok;
  const uint32_t n = head[1] > kMaxReason ? kMaxReason : head[1];
  if (in.read(reason, n))
    std::snprintf(reason, sizeof(reason), "(the reason was cut off)");
  else
    reason[n] = '\0';
  return Verdict::Rejected;
}

} // namespace ptrain::runtime::rendezvous
