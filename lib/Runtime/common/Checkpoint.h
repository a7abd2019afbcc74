//===- Checkpoint.h - Checking and loading a checkpoint's bytes --*- C++ -*-===//
//
// The check of a checkpoint file's content (Checkpoint.cpp describes the format), apart from reading the
// file: ptrain_checkpoint_load reads the file and calls it; the fuzz target fuzz/CheckpointFuzzer.cpp calls
// it on bytes in memory.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_CHECKPOINT_H
#define PTRAIN_RUNTIME_COMMON_CHECKPOINT_H

#include "common/Status.h"

namespace ptrain::runtime {

/// Checks the `size` bytes at `data` (the content of the checkpoint file `path`, named in errors) against
/// the state table `states` -- magic, version, bounds, checksum, every state present once with its dtype
/// and shape, no other key -- and only then copies each state's bytes into its `data`. `bytes[i]` is state
/// i's size in bytes, from checkStateTable (StateTable.h), which the table must have passed. Returns
/// PTRAIN_OK, or PTRAIN_ERROR_INVALID_ARGUMENT naming `call`, `path` and what is wrong, with no state
/// modified.
ptrain_status_t loadCheckpointBytes(const char *call, const ptrain_state_desc_t *states, int64_t num_states,
                                    const int64_t *bytes, const char *data, int64_t size, const char *path);

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_CHECKPOINT_H
