//===- CheckpointTable.h - The state table the checkpoint fuzz target loads ===//
//
// A small step's keyed states (the kinds a compiled step has: parameters, AdamW moments, a codec residual,
// the step counter and the data position; f32 and i64; ranks 0 to 2, a zero-size state), shared by the fuzz target
// (CheckpointFuzzer.cpp) and the seed writer (CheckpointSeeds.cpp), so that the seeds are checkpoints of
// exactly this table written by ptrain_checkpoint_save.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_FUZZ_CHECKPOINTTABLE_H
#define PTRAIN_FUZZ_CHECKPOINTTABLE_H

#include "ptrain/Runtime/ptrain_runtime.h"

#include <array>
#include <cstdint>

namespace ptrain::fuzz {

/// The states and the memory they live in (owned by the table).
struct CheckpointTable {
  static constexpr int kStates = 8;
  int64_t wteDims[2] = {5, 3}, biasDims[1] = {3}, positionDims[1] = {2}, emptyDims[2] = {0, 4};
  float wte[15] = {}, bias[3] = {}, m[15] = {}, v[15] = {}, residual[3] = {};
  int64_t step = 0, position[2] = {};
  float empty[1] = {};
  std::array<ptrain_state_desc_t, kStates> desc;

  CheckpointTable() {
    desc[0] = {"params.wte", wte, PTRAIN_DTYPE_F32, 0, 2, wteDims, 0, 0};
    desc[1] = {"params.bias", bias, PTRAIN_DTYPE_F32, 0, 1, biasDims, 0, 0};
    desc[2] = {"adamw.m.params.wte", m, PTRAIN_DTYPE_F32, 1, 2, wteDims, 0, 0};
    desc[3] = {"adamw.v.params.wte", v, PTRAIN_DTYPE_F32, 1, 2, wteDims, 0, 0};
    desc[4] = {"codec.residual.params.bias", residual, PTRAIN_DTYPE_F32, 2, 1, biasDims, 0, 0};
    desc[5] = {"step", &step, PTRAIN_DTYPE_I64, 3, 0, nullptr, 0, 0};
    desc[6] = {"data.position", position, PTRAIN_DTYPE_I64, 3, 1, positionDims, 0, 0};
    desc[7] = {"params.empty", empty, PTRAIN_DTYPE_F32, 0, 2, emptyDims, 0, 0};
  }
};

} // namespace ptrain::fuzz

#endif // PTRAIN_FUZZ_CHECKPOINTTABLE_H
