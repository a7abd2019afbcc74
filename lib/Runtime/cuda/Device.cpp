//===- Device.cpp - Errors, streams and scratch of the CUDA runtime -------===//

#include "cuda/Device.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace ptrain::cuda {
namespace {
thread_local cudaStream_t stream = nullptr;

struct DeviceBuffer {
  void *ptr = nullptr;
  size_t bytes = 0;
};
thread_local DeviceBuffer slots[static_cast<int>(DeviceSlot::Count)];
thread_local DeviceBuffer host;
} // namespace

ptrain_status_t fail(ptrain_status_t status, const char *call, const char *fmt, ...) {
  char message[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  return ptrain_record_error(status, call, message);
}

ptrain_status_t check(const char *call, cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return PTRAIN_OK;
  return fail(PTRAIN_ERROR_DEVICE, call, "%s: %s: %s", what, cudaGetErrorName(err), cudaGetErrorString(err));
}

cudaStream_t currentStream() { return stream; }

void *deviceScratch(const char *call, DeviceSlot slot, size_t bytes) {
  DeviceBuffer &b = slots[static_cast<int>(slot)];
  if (bytes == 0)
    bytes = 1;
  if (b.bytes >= bytes)
    return b.ptr;
  // Grow by at least 1.5x so that slowly increasing sizes do not reallocate every call.
  const size_t want = bytes < b.bytes + b.bytes / 2 ? b.bytes + b.bytes / 2 : bytes;
  // The old buffer may still be read by queued kernels: cudaFree waits for
  // the device before freeing.
  if (b.ptr && check(call, cudaFree(b.ptr), "cudaFree(scratch)") != PTRAIN_OK)
    return nullptr;
  b.ptr = nullptr;
  b.bytes = 0;
  if (check(call, cudaMalloc(&b.ptr, want), "cudaMalloc(scratch)") != PTRAIN_OK) {
    b.ptr = nullptr;
    return nullptr;
  }
  b.bytes = want;
  return b.ptr;
}

void *hostScratch(const char *call, size_t bytes) {
  if (bytes == 0)
    bytes = 1;
  if (host.bytes >= bytes)
    return host.ptr;
  // Pageable memory: cudaMemcpyAsync from it returns once the data is staged,
  // and into it once the copy completed, so the buffer is free on return.
  std::free(host.ptr);
  host.ptr = std::malloc(bytes);
  host.bytes = host.ptr ? bytes : 0;
  if (!host.ptr)
    fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate %zu bytes of host scratch", bytes);
  return host.ptr;
}

} // namespace ptrain::cuda

extern "C" ptrain_status_t ptrain_cuda_device_count(int32_t *out_count) {
  PTRAIN_CUDA_CHECK_PTR(out_count);
  int count = 0;
  PTRAIN_CUDA_TRY(cudaGetDeviceCount(&count));
  *out_count = count;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_set_stream(void *s) {
  ptrain::cuda::stream = static_cast<cudaStream_t>(s);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_synchronize(void) {
  PTRAIN_CUDA_TRY(cudaStreamSynchronize(ptrain::cuda::currentStream()));
  return PTRAIN_OK;
}
