//===- Status.cpp - Errors of the ptrain runtime --------------------------===//

#include "common/Status.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace {
/// Long enough for any message this runtime formats (op, peer, bytes, MPI
/// text); longer messages are truncated, never overflowed.
constexpr size_t kMaxMessage = 1024;
thread_local char lastError[kMaxMessage] = "";
} // namespace

namespace ptrain::runtime {

ptrain_status_t fail(ptrain_status_t status, const char *call, const char *fmt,
                     ...) {
  int prefix = std::snprintf(lastError, kMaxMessage, "%s: ", call);
  if (prefix < 0 || static_cast<size_t>(prefix) >= kMaxMessage)
    prefix = 0;
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(lastError + prefix, kMaxMessage - prefix, fmt, args);
  va_end(args);
  return status;
}

void *allocBytes(size_t bytes) { return std::malloc(bytes == 0 ? 1 : bytes); }

} // namespace ptrain::runtime

extern "C" const char *ptrain_last_error(void) { return lastError; }

extern "C" ptrain_status_t ptrain_record_error(ptrain_status_t status, const char *call, const char *message) {
  return ptrain::runtime::fail(status, call ? call : "(unknown call)", "%s", message ? message : "");
}

extern "C" const char *ptrain_status_string(ptrain_status_t status) {
  switch (status) {
  case PTRAIN_OK:
    return "PTRAIN_OK";
  case PTRAIN_ERROR_INVALID_ARGUMENT:
    return "PTRAIN_ERROR_INVALID_ARGUMENT";
  case PTRAIN_ERROR_OUT_OF_MEMORY:
    return "PTRAIN_ERROR_OUT_OF_MEMORY";
  case PTRAIN_ERROR_COMM:
    return "PTRAIN_ERROR_COMM";
  case PTRAIN_ERROR_DEADLINE_EXCEEDED:
    return "PTRAIN_ERROR_DEADLINE_EXCEEDED";
  case PTRAIN_ERROR_MISMATCH:
    return "PTRAIN_ERROR_MISMATCH";
  case PTRAIN_ERROR_INTERNAL:
    return "PTRAIN_ERROR_INTERNAL";
  case PTRAIN_ERROR_DEVICE:
    return "PTRAIN_ERROR_DEVICE";
  }
  return "PTRAIN_ERROR_UNKNOWN";
}
