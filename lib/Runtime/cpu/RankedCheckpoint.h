//===- RankedCheckpoint.h - The manifest of a ranked checkpoint -*- C++ -*-===//
//
// Reading the manifest and checking a rank's file against it
// (CheckpointManifest.cpp), shared by RankedCheckpoint.cpp (same layout) and
// Reshard.cpp (another DP degree).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_RANKEDCHECKPOINT_H
#define PTRAIN_RUNTIME_CPU_RANKEDCHECKPOINT_H

#include "common/Status.h"

#include <cstdio>

namespace ptrain::runtime {

/// The manifest's first word.
constexpr const char *kManifestMagic = "ptrain-checkpoint-manifest";

/// One "rank <r> <file> <bytes> <checksum>" line of a manifest.
struct ManifestEntry {
  char file[256] = "";
  int64_t bytes = -1;
  uint64_t checksum = 0;
};

/// Joins `dir` and `name` into `out` (`size` bytes); an error if it does not fit.
ptrain_status_t joinPath(const char *call, const char *dir, const char *name, char *out, size_t size);

/// The size in bytes and the stored checksum (the last 8 bytes) of a checkpoint file.
ptrain_status_t fileSummary(const char *call, const char *path, int64_t *outBytes, uint64_t *outChecksum);

/// Parses the manifest text read from `f` (named `manifest` in errors): the
/// number of ranks that wrote it and, when `rankOfInterest` >= 0, that rank's
/// entry. Errors (PTRAIN_ERROR_INVALID_ARGUMENT): a malformed manifest, no
/// entry for `rankOfInterest`.
ptrain_status_t parseManifest(const char *call, FILE *f, const char *manifest, int rankOfInterest, int *outRanks,
                              ManifestEntry *outEntry);

/// Reads dir/manifest (parseManifest): the number of ranks that wrote it and, when
/// `rankOfInterest` >= 0, that rank's entry (an error if it has none).
ptrain_status_t readManifest(const char *call, const char *dir, int rankOfInterest, int *outRanks,
                             ManifestEntry *outEntry);

/// Joins dir and the entry's file into `outPath` and checks the file's size
/// and checksum against the entry.
ptrain_status_t checkRankFile(const char *call, const char *dir, const ManifestEntry &entry, char *outPath,
                              size_t pathSize);

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_RANKEDCHECKPOINT_H
