//===- CheckpointFuzzer.cpp - libFuzzer target: the checkpoint loader -----===//
//
// Input: the content of a checkpoint file (lib/Runtime/common/Checkpoint.cpp describes the format), loaded
// into the state table of CheckpointTable.h by loadCheckpointBytes, the check ptrain_checkpoint_load runs on
// a file's bytes. Every input is loaded twice: as it is, and with its FNV-1a 64 checksum appended, so that
// mutated headers get past the checksum into the parser. Checked on every input:
//  - the loader never reads outside the bytes (AddressSanitizer) and returns PTRAIN_OK or
//    PTRAIN_ERROR_INVALID_ARGUMENT with an error that names the file;
//  - a failed load modifies no state (Checkpoint.cpp: every check runs before the first copy);
//  - a successful load leaves every state holding bytes of the file.
// A broken property aborts, which libFuzzer reports as a crash.
//
//===----------------------------------------------------------------------===//

#include "CheckpointTable.h"
#include "common/Checkpoint.h"
#include "common/StateTable.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void broken(const char *what) {
  std::fprintf(stderr, "CheckpointFuzzer: property broken: %s (last error: %s)\n", what, ptrain_last_error());
  std::abort();
}

void check(bool ok, const char *what) {
  if (!ok)
    broken(what);
}

/// Fills every state with the byte `fill`.
void paint(ptrain::fuzz::CheckpointTable &t, const int64_t *bytes, unsigned char fill) {
  for (int i = 0; i < t.kStates; ++i)
    std::memset(t.desc[i].data, fill, static_cast<size_t>(bytes[i]));
}

bool painted(const ptrain::fuzz::CheckpointTable &t, const int64_t *bytes, unsigned char fill) {
  for (int i = 0; i < t.kStates; ++i)
    for (int64_t b = 0; b < bytes[i]; ++b)
      if (static_cast<const unsigned char *>(t.desc[i].data)[b] != fill)
        return false;
  return true;
}

bool contains(const std::string &file, const void *data, int64_t n) {
  return n == 0 || file.find(std::string(static_cast<const char *>(data), static_cast<size_t>(n))) != std::string::npos;
}

void loadOnce(const std::string &file) {
  static ptrain::fuzz::CheckpointTable table;
  ptrain::runtime::StateBytes bytes;
  check(ptrain::runtime::checkStateTable("fuzz", table.desc.data(), table.kStates, bytes) == PTRAIN_OK,
        "the fuzz state table is valid");
  paint(table, bytes.get(), 0xA5);
  const ptrain_status_t st = ptrain::runtime::loadCheckpointBytes("fuzz", table.desc.data(), table.kStates,
                                                                  bytes.get(), file.data(),
                                                                  static_cast<int64_t>(file.size()), "fuzz.ckpt");
  if (st != PTRAIN_OK) {
    check(st == PTRAIN_ERROR_INVALID_ARGUMENT, "a bad checkpoint is an invalid argument");
    check(std::strstr(ptrain_last_error(), "fuzz.ckpt") != nullptr, "the error names the file");
    check(painted(table, bytes.get(), 0xA5), "a failed load modifies no state");
    return;
  }
  for (int i = 0; i < table.kStates; ++i)
    check(contains(file, table.desc[i].data, bytes.get()[i]), "a loaded state holds bytes of the file");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string file(reinterpret_cast<const char *>(data), size);
  loadOnce(file);
  uint64_t hash = 1469598103934665603ull; // FNV-1a 64, as Checkpoint.cpp
  for (unsigned char c : file) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  file.append(reinterpret_cast<const char *>(&hash), 8);
  loadOnce(file);
  return 0;
}
