//===- StateTable.cpp - Checks shared by state loading and saving ---------===//

#include "common/StateTable.h"

#include <cstring>

ptrain_status_t ptrain::runtime::checkStateTable(
    const char *call, const ptrain_state_desc_t *states, int64_t numStates,
    int64_t *outBytes) {
  if (numStates < 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "'num_states' must be >= 0, got %lld",
                static_cast<long long>(numStates));
  if (numStates > 0 && states == nullptr)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "'states' must not be null");
  for (int64_t i = 0; i < numStates; ++i) {
    const ptrain_state_desc_t &s = states[i];
    if (s.key == nullptr || s.key[0] == '\0')
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "state %lld has no key", static_cast<long long>(i));
    const int64_t elem = stateElemBytes(s.dtype);
    if (elem == 0)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "state '%s' has unsupported dtype %d (f32 = 0, i64 = 2)",
                  s.key, s.dtype);
    if (s.rank < 0 || (s.rank > 0 && s.dims == nullptr) || s.data == nullptr)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "state '%s' has a bad rank %d, null dims or null data", s.key,
                  s.rank);
    int64_t bytes = elem;
    for (int32_t d = 0; d < s.rank; ++d) {
      if (s.dims[d] < 0)
        return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                    "state '%s' has a negative dim %lld", s.key,
                    static_cast<long long>(s.dims[d]));
      bytes *= s.dims[d];
    }
    outBytes[i] = bytes;
    for (int64_t j = 0; j < i; ++j)
      if (std::strcmp(states[j].key, s.key) == 0)
        return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                    "two states have the key '%s'", s.key);
  }
  return PTRAIN_OK;
}
