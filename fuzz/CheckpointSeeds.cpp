//===- CheckpointSeeds.cpp - Seed checkpoints for CheckpointFuzzer --------===//
//
// Usage: ptrain-fuzz-checkpoint-seeds OUT_DIR
// Writes (creating OUT_DIR if needed) checkpoints of the fuzz state table (CheckpointTable.h) with ptrain_checkpoint_save, the runtime's
// own writer: zeros, a ramp, and extreme values (NaN, infinities, INT64_MIN), as OUT_DIR/<name>.ckpt.
//
//===----------------------------------------------------------------------===//

#include "CheckpointTable.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <sys/stat.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  ::mkdir(argv[1], 0777); // An existing folder is fine; a failure shows in the first save.
  ptrain::fuzz::CheckpointTable t;
  auto save = [&](const char *name) {
    const std::string path = std::string(argv[1]) + "/" + name + ".ckpt";
    if (ptrain_checkpoint_save(t.desc.data(), t.kStates, path.c_str()) != PTRAIN_OK) {
      std::fprintf(stderr, "%s\n", ptrain_last_error());
      return false;
    }
    return true;
  };
  if (!save("zeros"))
    return 1;
  for (int i = 0; i < 15; ++i)
    t.wte[i] = t.m[i] = t.v[i] = 0.25f * static_cast<float>(i);
  t.step = 7;
  t.position[0] = 3;
  t.position[1] = 1 << 20;
  if (!save("ramp"))
    return 1;
  t.wte[0] = std::numeric_limits<float>::quiet_NaN();
  t.wte[1] = std::numeric_limits<float>::infinity();
  t.bias[0] = -std::numeric_limits<float>::infinity();
  t.residual[2] = std::numeric_limits<float>::denorm_min();
  t.step = std::numeric_limits<int64_t>::min();
  return save("extremes") ? 0 : 1;
}
