//===- CheckpointManifestFuzzer.cpp - libFuzzer target: a ranked checkpoint's manifest ===//
//
// Input: the text of <dir>/manifest (lib/Runtime/cpu/RankedCheckpoint.cpp describes it), parsed by
// parseManifest (CheckpointManifest.cpp), the reader ptrain_checkpoint_load_ranks and
// ptrain_checkpoint_load_resharded run, for no rank of interest and for ranks 0, 1 and 5. Checked:
//  - the parser never reads or writes outside its buffers (AddressSanitizer);
//  - it returns PTRAIN_OK or PTRAIN_ERROR_INVALID_ARGUMENT naming the manifest;
//  - on success the number of ranks is positive, the rank of interest is one of them, and its entry names
//    a file inside the checkpoint directory (a plain file name: no '/', not "." or "..").
// A broken property aborts, which libFuzzer reports as a crash.
//
//===----------------------------------------------------------------------===//

#include "cpu/RankedCheckpoint.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

[[noreturn]] void broken(const char *what) {
  std::fprintf(stderr, "CheckpointManifestFuzzer: property broken: %s (last error: %s)\n", what,
               ptrain_last_error());
  std::abort();
}

void check(bool ok, const char *what) {
  if (!ok)
    broken(what);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int rank : {-1, 0, 1, 5}) {
    // fmemopen of 0 bytes fails on glibc: read an empty manifest from a 1-byte buffer holding a NUL.
    FILE *f = size ? fmemopen(const_cast<uint8_t *>(data), size, "r") : fmemopen(const_cast<char *>(""), 1, "r");
    if (!f)
      return 0;
    int ranks = 0;
    ptrain::runtime::ManifestEntry entry;
    const ptrain_status_t st = ptrain::runtime::parseManifest("fuzz", f, "ckpt/manifest", rank, &ranks, &entry);
    std::fclose(f);
    if (st != PTRAIN_OK) {
      check(st == PTRAIN_ERROR_INVALID_ARGUMENT, "a bad manifest is an invalid argument");
      check(std::strstr(ptrain_last_error(), "ckpt/manifest") != nullptr, "the error names the manifest");
      continue;
    }
    check(ranks > 0, "a manifest lists at least one rank");
    if (rank < 0)
      continue;
    check(rank < ranks, "the rank of interest is one of the manifest's");
    check(std::memchr(entry.file, '\0', sizeof(entry.file)) != nullptr, "the entry's file name is terminated");
    check(entry.file[0] != '\0' && std::strchr(entry.file, '/') == nullptr && std::strcmp(entry.file, ".") != 0 &&
              std::strcmp(entry.file, "..") != 0,
          "the entry names a file inside the checkpoint directory");
  }
  return 0;
}
