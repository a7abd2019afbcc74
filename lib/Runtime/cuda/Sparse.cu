//===- Sparse.cu - Top-k and rand-k sparsification on the GPU -------------===//
//
// #ptrain.topk with the CPU's selection rule (cpu/codecs/TopK.cpp): the k
// largest magnitudes, ordered by the fp32 bit pattern with the sign cleared
// (NaN above inf), ties at the k-th magnitude to the smaller index, indices
// ascending. On the device: v = g + e and its magnitude keys in one pass;
// a stable descending radix sort of (key, index) pairs (CUB; stability is
// the tie rule); an ascending sort of the first k indices; a gather of the
// values that zeroes e at the kept positions (e = v - decode(code)).
//
// #ptrain.randk with the shared-seed position rule of cpu/codecs/RandK.cpp:
// the positions are a function of (seed, counter, n, k) only and Floyd's
// algorithm is sequential, so they are drawn on the host by
// ptrain_randk_indices (the CPU rule itself, O(k + n / 64)) and copied; the
// device adds e += g over the tensor and gathers (zeroing e) or scatters.
//
//===----------------------------------------------------------------------===//

#include "cuda/Device.h"

#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <climits>

using namespace ptrain::cuda;

namespace {

ptrain_status_t checkSparsity(const char *call, int64_t n, int64_t k) {
  if (n < 1 || n > INT32_MAX)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "n must be in [1, %d] (int32 indices), got %lld", INT32_MAX,
                static_cast<long long>(n));
  if (k < 1 || k > n)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "k must be in [1, n = %lld], got %lld", static_cast<long long>(n),
                static_cast<long long>(k));
  return PTRAIN_OK;
}

__global__ void __launch_bounds__(kThreads)
    topkKeys(const float *__restrict__ g, float *__restrict__ residual, int64_t n, uint32_t *__restrict__ keys,
             uint32_t *__restrict__ idx) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float x = g[i];
    if (residual) {
      x = __fadd_rn(x, residual[i]);
      residual[i] = x;
    }
    keys[i] = __float_as_uint(x) & 0x7fffffffu;
    idx[i] = static_cast<uint32_t>(i);
  }
}

/// values[j] = v[idx[j]], indices[j] = idx[j] and, with error feedback,
/// e[idx[j]] = 0 (the kept positions are distinct).
__global__ void __launch_bounds__(kThreads)
    gatherKept(const float *v, float *residual, const uint32_t *__restrict__ idx, int64_t k, float *__restrict__ values,
               int32_t *__restrict__ indices) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride) {
    const uint32_t i = idx[j];
    values[j] = v[i];
    if (indices)
      indices[j] = static_cast<int32_t>(i);
    if (residual)
      residual[i] = 0.0f;
  }
}

/// out[indices[j]] = values[j]; the first j whose index is outside [0, n)
/// goes to *bad (atomicMin) and is not written.
__global__ void __launch_bounds__(kThreads)
    scatterChecked(const float *__restrict__ values, const int32_t *__restrict__ indices, int64_t k, int64_t n,
                   float *__restrict__ out, unsigned long long *bad) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride) {
    const int32_t i = indices[j];
    if (i < 0 || i >= n)
      atomicMin(bad, static_cast<unsigned long long>(j));
    else
      out[i] = values[j];
  }
}

__global__ void __launch_bounds__(kThreads) addInto(const float *__restrict__ g, float *__restrict__ e, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    e[i] = __fadd_rn(e[i], g[i]);
}

__global__ void __launch_bounds__(kThreads)
    scatterPositions(const float *__restrict__ values, const uint32_t *__restrict__ idx, int64_t k,
                     float *__restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride)
    out[idx[j]] = values[j];
}

/// The rand-k positions of (seed, counter) drawn on the host and copied to a
/// device scratch slot.
ptrain_status_t randkPositionsOnDevice(const char *call, uint64_t seed, int64_t counter, int64_t n, int64_t k,
                                       uint32_t **out) {
  const size_t bytes = static_cast<size_t>(k) * sizeof(int32_t);
  auto *host = static_cast<int32_t *>(hostScratch(call, bytes));
  if (!host)
    return PTRAIN_ERROR_OUT_OF_MEMORY;
  auto *dev = static_cast<uint32_t *>(deviceScratch(call, DeviceSlot::Keys, bytes));
  if (!dev)
    return PTRAIN_ERROR_DEVICE;
  PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_randk_indices(seed, counter, n, k, host));
  // From pageable memory: returns once the indices are staged, so the host
  // buffer is free again.
  PTRAIN_CUDA_RETURN_IF_ERROR(
      check(call, cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, currentStream()), "cudaMemcpyAsync"));
  *out = dev;
  return PTRAIN_OK;
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_topk_encode_f32(const float *g, float *residual, int64_t n, int64_t k,
                                                       float *out_values, int32_t *out_indices) {
  PTRAIN_CUDA_CHECK_PTR(g);
  PTRAIN_CUDA_CHECK_PTR(out_values);
  PTRAIN_CUDA_CHECK_PTR(out_indices);
  PTRAIN_CUDA_RETURN_IF_ERROR(checkSparsity(__func__, n, k));
  const cudaStream_t st = currentStream();
  const int items = static_cast<int>(n), kept = static_cast<int>(k);
  size_t sortBytes = 0, keepBytes = 0;
  PTRAIN_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(
      nullptr, sortBytes, static_cast<const uint32_t *>(nullptr), static_cast<uint32_t *>(nullptr),
      static_cast<const uint32_t *>(nullptr), static_cast<uint32_t *>(nullptr), items, 0, 31, st));
  PTRAIN_CUDA_TRY(cub::DeviceRadixSort::SortKeys(nullptr, keepBytes, static_cast<const uint32_t *>(nullptr),
                                                 static_cast<uint32_t *>(nullptr), kept, 0, 31, st));
  const size_t tempBytes = sortBytes > keepBytes ? sortBytes : keepBytes;
  const size_t bytes = static_cast<size_t>(n) * sizeof(uint32_t);
  auto *keys = static_cast<uint32_t *>(deviceScratch(__func__, DeviceSlot::Keys, bytes));
  auto *idx = static_cast<uint32_t *>(deviceScratch(__func__, DeviceSlot::Values, bytes));
  auto *sortedKeys = static_cast<uint32_t *>(deviceScratch(__func__, DeviceSlot::SortedKeys, bytes));
  auto *sortedIdx = static_cast<uint32_t *>(deviceScratch(__func__, DeviceSlot::SortedValues, bytes));
  void *temp = deviceScratch(__func__, DeviceSlot::Temp, tempBytes);
  if (!keys || !idx || !sortedKeys || !sortedIdx || !temp)
    return PTRAIN_ERROR_DEVICE;
  topkKeys<<<gridFor(n), kThreads, 0, st>>>(g, residual, n, keys, idx);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  size_t used = tempBytes;
  // Bits [0, 31): the keys have the sign bit cleared.
  PTRAIN_CUDA_TRY(
      cub::DeviceRadixSort::SortPairsDescending(temp, used, keys, sortedKeys, idx, sortedIdx, items, 0, 31, st));
  // The kept indices (the first k of the stable order) ascending, into `keys`.
  used = tempBytes;
  PTRAIN_CUDA_TRY(cub::DeviceRadixSort::SortKeys(temp, used, sortedIdx, keys, kept, 0, 31, st));
  gatherKept<<<gridFor(k), kThreads, 0, st>>>(residual ? residual : g, residual, keys, k, out_values, out_indices);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_topk_decode_f32(const float *values, const int32_t *indices, int64_t k,
                                                       int64_t n, float *out) {
  PTRAIN_CUDA_CHECK_PTR(values);
  PTRAIN_CUDA_CHECK_PTR(indices);
  PTRAIN_CUDA_CHECK_PTR(out);
  PTRAIN_CUDA_RETURN_IF_ERROR(checkSparsity(__func__, n, k));
  const cudaStream_t st = currentStream();
  auto *bad = static_cast<unsigned long long *>(deviceScratch(__func__, DeviceSlot::Flag, sizeof(unsigned long long)));
  if (!bad)
    return PTRAIN_ERROR_DEVICE;
  auto *badHost = static_cast<unsigned long long *>(hostScratch(__func__, sizeof(unsigned long long)));
  if (!badHost)
    return PTRAIN_ERROR_OUT_OF_MEMORY;
  PTRAIN_CUDA_TRY(cudaMemsetAsync(bad, 0xff, sizeof(unsigned long long), st));
  PTRAIN_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<size_t>(n) * sizeof(float), st));
  scatterChecked<<<gridFor(k), kThreads, 0, st>>>(values, indices, k, n, out, bad);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  PTRAIN_CUDA_TRY(cudaMemcpyAsync(badHost, bad, sizeof(unsigned long long), cudaMemcpyDeviceToHost, st));
  PTRAIN_CUDA_TRY(cudaStreamSynchronize(st));
  if (*badHost != ~0ull) {
    const unsigned long long j = *badHost;
    int32_t index = 0;
    PTRAIN_CUDA_TRY(cudaMemcpy(&index, indices + j, sizeof(int32_t), cudaMemcpyDeviceToHost));
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "indices[%lld] = %d is outside [0, n = %lld)",
                static_cast<long long>(j), index, static_cast<long long>(n));
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_randk_encode_f32(const float *g, float *residual, int64_t n, int64_t k,
                                                        uint64_t seed, int64_t *counter, float *out_values) {
  PTRAIN_CUDA_CHECK_PTR(g);
  PTRAIN_CUDA_CHECK_PTR(counter);
  PTRAIN_CUDA_CHECK_PTR(out_values);
  PTRAIN_CUDA_RETURN_IF_ERROR(checkSparsity(__func__, n, k));
  uint32_t *idx = nullptr;
  PTRAIN_CUDA_RETURN_IF_ERROR(randkPositionsOnDevice(__func__, seed, *counter, n, k, &idx));
  const cudaStream_t st = currentStream();
  if (residual) {
    addInto<<<gridFor(n), kThreads, 0, st>>>(g, residual, n);
    PTRAIN_CUDA_TRY(cudaGetLastError());
  }
  gatherKept<<<gridFor(k), kThreads, 0, st>>>(residual ? residual : g, residual, idx, k, out_values, nullptr);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  ++*counter;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_randk_decode_f32(const float *values, int64_t n, int64_t k, uint64_t seed,
                                                        int64_t *counter, float *out) {
  PTRAIN_CUDA_CHECK_PTR(values);
  PTRAIN_CUDA_CHECK_PTR(counter);
  PTRAIN_CUDA_CHECK_PTR(out);
  PTRAIN_CUDA_RETURN_IF_ERROR(checkSparsity(__func__, n, k));
  uint32_t *idx = nullptr;
  PTRAIN_CUDA_RETURN_IF_ERROR(randkPositionsOnDevice(__func__, seed, *counter, n, k, &idx));
  const cudaStream_t st = currentStream();
  PTRAIN_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<size_t>(n) * sizeof(float), st));
  scatterPositions<<<gridFor(k), kThreads, 0, st>>>(values, idx, k, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  ++*counter;
  return PTRAIN_OK;
}
