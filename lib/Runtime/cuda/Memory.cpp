//===- Memory.cpp - Device memory, copies and the stream of a compiled step ===//
//
// What a step compiled with --emit-cuda (docs/CodegenCuda.md) needs besides
// kernels: its device blocks (states, constants, arena: cudaMalloc once at
// ptrain_step_init), its stream, and copies between host and device on the
// current stream. A copy to the host synchronizes the stream, so its bytes
// are valid on return.
//
//===----------------------------------------------------------------------===//

#include "cuda/Device.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

extern "C" ptrain_status_t ptrain_cuda_malloc(int64_t num_bytes, void **out_ptr) {
  PTRAIN_CUDA_CHECK_SIZE(num_bytes);
  PTRAIN_CUDA_CHECK_PTR(out_ptr);
  *out_ptr = nullptr;
  PTRAIN_CUDA_TRY(cudaMalloc(out_ptr, num_bytes > 0 ? static_cast<size_t>(num_bytes) : 1));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_free(void *ptr) {
  if (ptr)
    PTRAIN_CUDA_TRY(cudaFree(ptr));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_stream_create(void **out_stream) {
  PTRAIN_CUDA_CHECK_PTR(out_stream);
  cudaStream_t s = nullptr;
  PTRAIN_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  *out_stream = s;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_stream_destroy(void *stream) {
  if (!stream)
    return PTRAIN_OK; // not the legacy stream 0: nothing was created
  // The thread's later calls must not run on a destroyed stream.
  if (static_cast<cudaStream_t>(stream) == currentStream())
    PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_cuda_set_stream(nullptr));
  PTRAIN_CUDA_TRY(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_copy_to_device(const void *host_src, int64_t num_bytes, void *out) {
  PTRAIN_CUDA_CHECK_SIZE(num_bytes);
  if (num_bytes == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(host_src);
  PTRAIN_CUDA_CHECK_PTR(out);
  PTRAIN_CUDA_TRY(cudaMemcpyAsync(out, host_src, num_bytes, cudaMemcpyHostToDevice, currentStream()));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_copy_to_host(const void *src, int64_t num_bytes, void *host_out) {
  PTRAIN_CUDA_CHECK_SIZE(num_bytes);
  if (num_bytes == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(src);
  PTRAIN_CUDA_CHECK_PTR(host_out);
  PTRAIN_CUDA_TRY(cudaMemcpyAsync(host_out, src, num_bytes, cudaMemcpyDeviceToHost, currentStream()));
  PTRAIN_CUDA_TRY(cudaStreamSynchronize(currentStream()));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_copy_bytes(const void *src, int64_t num_bytes, void *out) {
  PTRAIN_CUDA_CHECK_SIZE(num_bytes);
  if (num_bytes == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(src);
  PTRAIN_CUDA_CHECK_PTR(out);
  PTRAIN_CUDA_TRY(cudaMemcpyAsync(out, src, num_bytes, cudaMemcpyDeviceToDevice, currentStream()));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_zero_bytes(void *out, int64_t num_bytes) {
  PTRAIN_CUDA_CHECK_SIZE(num_bytes);
  if (num_bytes == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(out);
  PTRAIN_CUDA_TRY(cudaMemsetAsync(out, 0, num_bytes, currentStream()));
  return PTRAIN_OK;
}

// Events order the pipeline's communication streams against the compute stream (docs/CodegenCuda.md,
// "Streams and events"): recorded on one stream, waited on by another, on the device.
extern "C" ptrain_status_t ptrain_cuda_event_create(void **out_event) {
  PTRAIN_CUDA_CHECK_PTR(out_event);
  cudaEvent_t e = nullptr;
  PTRAIN_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  *out_event = e;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_event_destroy(void *event) {
  if (event)
    PTRAIN_CUDA_TRY(cudaEventDestroy(static_cast<cudaEvent_t>(event)));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_event_record(void *event, void *stream) {
  PTRAIN_CUDA_CHECK_PTR(event);
  PTRAIN_CUDA_TRY(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_stream_wait_event(void *stream, void *event) {
  PTRAIN_CUDA_CHECK_PTR(event);
  PTRAIN_CUDA_TRY(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0));
  return PTRAIN_OK;
}
