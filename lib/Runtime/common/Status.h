//===- Status.h - Errors of the ptrain runtime ------------------*- C++ -*-===//
//
// Internal helpers for the error model of ptrain_runtime.h: a failing call
// records a message in a thread-local buffer and returns its status code.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_STATUS_H
#define PTRAIN_RUNTIME_COMMON_STATUS_H

#include "ptrain/Runtime/ptrain_runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace ptrain::runtime {

/// Records "<call>: <printf-formatted message>" as this thread's last error and
/// returns `status`, so failures read `return fail(ERR, __func__, "...", ...)`.
ptrain_status_t fail(ptrain_status_t status, const char *call, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));

/// malloc that never returns nullptr for 0 bytes; nullptr means out of memory.
void *allocBytes(size_t bytes);

/// Allocates `count` elements of T without throwing; nullptr on failure or
/// overflow. Free with std::free.
template <typename T> T *allocArray(int64_t count) {
  if (count < 0 || static_cast<uint64_t>(count) > SIZE_MAX / sizeof(T))
    return nullptr;
  return static_cast<T *>(allocBytes(static_cast<size_t>(count) * sizeof(T)));
}

/// Frees allocArray's memory: `std::unique_ptr<T[], FreeDeleter>`.
struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};

} // namespace ptrain::runtime

/// Returns INVALID_ARGUMENT from the enclosing call when `cond` does not hold.
#define PTRAIN_CHECK_ARG(cond, ...)                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      return ::ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,  \
                                     __VA_ARGS__);                             \
  } while (0)

/// Checks that a required pointer is non-null.
#define PTRAIN_CHECK_PTR(ptr)                                                  \
  PTRAIN_CHECK_ARG((ptr) != nullptr, "'%s' must not be null", #ptr)

/// Checks that a size is non-negative.
#define PTRAIN_CHECK_SIZE(size)                                                \
  PTRAIN_CHECK_ARG((size) >= 0, "'%s' must be >= 0, got %lld", #size,          \
                   static_cast<long long>(size))

/// Propagates a failing status from a nested runtime call (its message stays).
#define PTRAIN_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    ptrain_status_t ptrainStatus_ = (expr);                                    \
    if (ptrainStatus_ != PTRAIN_OK)                                            \
      return ptrainStatus_;                                                    \
  } while (0)

#endif // PTRAIN_RUNTIME_COMMON_STATUS_H
