//===- CheckpointManifest.cpp - The manifest of a ranked checkpoint -------===//
//
// Reading <dir>/manifest (RankedCheckpoint.cpp describes the directory and
// the manifest's lines) and checking a rank's file against its entry; shared
// by RankedCheckpoint.cpp (same layout) and Reshard.cpp (another DP degree).
// It needs no communicator: the fuzz target fuzz/CheckpointManifestFuzzer.cpp
// calls parseManifest on bytes in memory.
//
//===----------------------------------------------------------------------===//

#include "cpu/RankedCheckpoint.h"

#include <cstdio>
#include <cstring>

using ptrain::runtime::fail;

namespace ptrain::runtime {
ptrain_status_t joinPath(const char *call, const char *dir, const char *name, char *out, size_t size) {
  if (std::snprintf(out, size, "%s/%s", dir, name) >= static_cast<int>(size))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "path too long: %s/%s", dir, name);
  return PTRAIN_OK;
}

ptrain_status_t fileSummary(const char *call, const char *path, int64_t *outBytes, uint64_t *outChecksum) {
  FILE *f = std::fopen(path, "rb");
  if (!f)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: cannot open", path);
  bool ok = std::fseek(f, 0, SEEK_END) == 0;
  const long size = ok ? std::ftell(f) : -1;
  ok = ok && size >= 8 && std::fseek(f, size - 8, SEEK_SET) == 0 && std::fread(outChecksum, 1, 8, f) == 8;
  std::fclose(f);
  if (!ok)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: cannot read its checksum (truncated?)", path);
  *outBytes = size;
  return PTRAIN_OK;
}

/// Whether the `length` bytes read as a manifest entry's file name are a plain file name: no NUL among them,
/// no '/', not "." or "..": the rank's file lies inside the checkpoint directory.
static bool plainFileName(const char *name, int length) {
  return length > 0 && std::strlen(name) == static_cast<size_t>(length) && std::strchr(name, '/') == nullptr &&
         std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0;
}

ptrain_status_t parseManifest(const char *call, FILE *f, const char *manifest, int rankOfInterest, int *outRanks,
                              ManifestEntry *outEntry) {
  char magic[64] = "";
  int version = 0, ranks = 0;
  bool ok = std::fscanf(f, "%63s %d ranks %d", magic, &version, &ranks) == 3 &&
            std::strcmp(magic, kManifestMagic) == 0 && version == 1 && ranks > 0;
  bool found = false;
  for (int r = 0; ok && r < ranks; ++r) {
    int listed = -1;
    char entryFile[256];
    long long entryBytes;
    unsigned long long entrySum;
    int nameBegin = 0, nameEnd = 0;
    ok = std::fscanf(f, " rank %d %n%255s%n %lld %llx", &listed, &nameBegin, entryFile, &nameEnd, &entryBytes,
                     &entrySum) == 4 &&
         listed == r;
    // %s stops at white space only: a NUL or a '/' in the name would point the loader elsewhere than the file
    // this directory holds (found by fuzz/CheckpointManifestFuzzer.cpp).
    if (ok && !plainFileName(entryFile, nameEnd - nameBegin))
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: rank %d's file '%s' is not a file name inside the checkpoint directory", manifest, r,
                  entryFile);
    if (ok && r == rankOfInterest) {
      std::snprintf(outEntry->file, sizeof(outEntry->file), "%s", entryFile);
      outEntry->bytes = entryBytes;
      outEntry->checksum = entrySum;
      found = true;
    }
  }
  if (!ok)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: malformed manifest", manifest);
  *outRanks = ranks;
  if (rankOfInterest >= 0 && !found)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: written by %d ranks, has no rank %d", manifest, ranks,
                rankOfInterest);
  return PTRAIN_OK;
}

ptrain_status_t readManifest(const char *call, const char *dir, int rankOfInterest, int *outRanks,
                             ManifestEntry *outEntry) {
  char manifest[4096];
  PTRAIN_RETURN_IF_ERROR(joinPath(call, dir, "manifest", manifest, sizeof(manifest)));
  FILE *f = std::fopen(manifest, "r");
  if (!f)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: cannot open (not a complete checkpoint directory?)",
                manifest);
  const ptrain_status_t st = parseManifest(call, f, manifest, rankOfInterest, outRanks, outEntry);
  std::fclose(f);
  return st;
}

ptrain_status_t checkRankFile(const char *call, const char *dir, const ManifestEntry &entry, char *outPath,
                              size_t pathSize) {
  PTRAIN_RETURN_IF_ERROR(joinPath(call, dir, entry.file, outPath, pathSize));
  int64_t actualBytes = 0;
  uint64_t actualSum = 0;
  PTRAIN_RETURN_IF_ERROR(fileSummary(call, outPath, &actualBytes, &actualSum));
  if (actualBytes != entry.bytes || actualSum != entry.checksum)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "%s: %lld bytes with checksum %016llx, but the manifest "
                "lists %lld bytes with checksum %016llx: the file is not the "
                "one this checkpoint wrote",
                outPath, static_cast<long long>(actualBytes), static_cast<unsigned long long>(actualSum),
                static_cast<long long>(entry.bytes), static_cast<unsigned long long>(entry.checksum));
  return PTRAIN_OK;
}
} // namespace ptrain::runtime
