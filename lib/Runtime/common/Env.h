//===- Env.h - Reading runtime settings from the environment ----*- C++ -*-===//
//
// Environment variables the runtime reads (PTRAIN_COMM_TIMEOUT_S, torchrun's
// RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT): parsed strictly, and a
// malformed value is an INVALID_ARGUMENT error naming the variable and value.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_ENV_H
#define PTRAIN_RUNTIME_COMMON_ENV_H

#include "common/Status.h"

namespace ptrain::runtime {

/// Reads `name` as a finite number of seconds > 0; unset or empty gives
/// `defaultSeconds`.
ptrain_status_t readEnvSeconds(const char *call, const char *name, double defaultSeconds, double &seconds);

/// Reads `name` as a decimal integer in [minValue, maxValue]; unset or empty is
/// an error ("<name> is not set").
ptrain_status_t readEnvInt(const char *call, const char *name, int64_t minValue, int64_t maxValue, int64_t &value);

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_ENV_H
