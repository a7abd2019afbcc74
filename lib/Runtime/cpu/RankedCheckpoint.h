//===- RankedCheckpoint.h - The manifest of a ranked checkpoint -*- C++ -*-===//
//
// Reading the manifest and checking a rank's file against it, shared by
// RankedCheckpoint.cpp (same layout) and Reshard.cpp (another DP degree).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_RANKEDCHECKPOINT_H
#define PTRAIN_RUNTIME_CPU_RANKEDCHECKPOINT_H

#include "cpu/Comm.h"

namespace ptrain::runtime {

/// One "rank <r> <file> <bytes> <checksum>" line of a manifest.
struct ManifestEntry {
  char file[256] = "";
  int64_t bytes = -1;
  uint64_t checksum = 0;
};

/// Reads dir/manifest: the number of ranks that wrote it and, when
/// `rankOfInterest` >= 0, that rank's entry (an error if it has none).
ptrain_status_t readManifest(const char *call, const char *dir, int rankOfInterest, int *outRanks,
                             ManifestEntry *outEntry);

/// Joins dir and the entry's file into `outPath` and checks the file's size
/// and checksum against the entry.
ptrain_status_t checkRankFile(const char *call, const char *dir, const ManifestEntry &entry, char *outPath,
                              size_t pathSize);

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_RANKEDCHECKPOINT_H
