//===- Device.h - Errors, streams and scratch of the CUDA runtime -*- C++ -*-===//
//
// The CUDA runtime's side of the error model of ptrain_runtime.h: failures
// are recorded in libptrain_runtime's thread-local buffer through
// ptrain_record_error, so ptrain_last_error() reads CPU and CUDA messages
// alike. Every CUDA runtime call is checked (PTRAIN_CUDA_TRY); a failure is
// PTRAIN_ERROR_DEVICE naming the call, the CUDA function and its error string.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CUDA_DEVICE_H
#define PTRAIN_RUNTIME_CUDA_DEVICE_H

#include "ptrain/Runtime/ptrain_runtime_cuda.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ptrain::cuda {

/// Records "<call>: <printf-formatted message>" as this thread's last error
/// and returns `status`.
ptrain_status_t fail(ptrain_status_t status, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/// PTRAIN_OK, or a DEVICE error "<call>: <what>: <cudaGetErrorName>: <string>".
ptrain_status_t check(const char *call, cudaError_t err, const char *what);

/// The stream this thread's calls run on (ptrain_cuda_set_stream).
cudaStream_t currentStream();

/// Reused device scratch, as cpu/codecs/Scratch.h on the host: at least
/// `bytes` bytes of this thread's slot (grow-only; contents unspecified), or
/// nullptr after recording a DEVICE error for `call`.
enum class DeviceSlot { Keys = 0, Values = 1, SortedKeys = 2, SortedValues = 3, Temp = 4, Flag = 5, Count = 6 };
void *deviceScratch(const char *call, DeviceSlot slot, size_t bytes);

/// Reused pageable host scratch (one slot: a call's copies to or from it
/// complete before cudaMemcpyAsync returns), or nullptr after recording an
/// OUT_OF_MEMORY error.
void *hostScratch(const char *call, size_t bytes);

/// Launch geometry of an elementwise kernel over n items: blocks of
/// kThreads, at most kMaxBlocks (the kernels loop with a grid stride).
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;
inline unsigned gridFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

} // namespace ptrain::cuda

/// Returns INVALID_ARGUMENT, naming the entry point `call`, from the enclosing function when `cond` does not hold
/// (the _IN forms serve a helper shared by several entry points; the others name the enclosing function).
#define PTRAIN_CUDA_CHECK_ARG_IN(call, cond, ...)                                                                      \
  do {                                                                                                                 \
    if (!(cond))                                                                                                       \
      return ::ptrain::cuda::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, __VA_ARGS__);                                   \
  } while (0)
#define PTRAIN_CUDA_CHECK_PTR_IN(call, ptr) PTRAIN_CUDA_CHECK_ARG_IN(call, (ptr) != nullptr, "'%s' must not be null", #ptr)
#define PTRAIN_CUDA_CHECK_SIZE_IN(call, size)                                                                          \
  PTRAIN_CUDA_CHECK_ARG_IN(call, (size) >= 0, "'%s' must be >= 0, got %lld", #size, static_cast<long long>(size))

#define PTRAIN_CUDA_CHECK_ARG(cond, ...) PTRAIN_CUDA_CHECK_ARG_IN(__func__, cond, __VA_ARGS__)
#define PTRAIN_CUDA_CHECK_PTR(ptr) PTRAIN_CUDA_CHECK_PTR_IN(__func__, ptr)
#define PTRAIN_CUDA_CHECK_SIZE(size) PTRAIN_CUDA_CHECK_SIZE_IN(__func__, size)

/// Propagates a failing status (its message stays).
#define PTRAIN_CUDA_RETURN_IF_ERROR(expr)                                                                              \
  do {                                                                                                                 \
    ptrain_status_t ptrainStatus_ = (expr);                                                                            \
    if (ptrainStatus_ != PTRAIN_OK)                                                                                    \
      return ptrainStatus_;                                                                                            \
  } while (0)

/// Checks a CUDA runtime call (or the last launch: cudaGetLastError()).
#define PTRAIN_CUDA_TRY(expr) PTRAIN_CUDA_RETURN_IF_ERROR(::ptrain::cuda::check(__func__, (expr), #expr))

#endif // PTRAIN_RUNTIME_CUDA_DEVICE_H
