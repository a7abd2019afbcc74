//===- CodecMetrics.cu - Codec telemetry on the device ---------------------===//
//
// ptrain_cuda_codec_metrics_f32: cpu/codecs/Metrics.cpp's
// ptrain_codec_metrics_f32 on device buffers (docs/Runtime.md, "Codec
// telemetry"; docs/CodegenCuda.md, "Codec telemetry"). One pass over memory:
// every thread accumulates the six fp64 sums of the CPU loop
//
//   vv = sum v^2, v = g + e_old   dd = sum (v - decode(encode(v)))^2
//   rr = sum e_new^2              ee = sum e_old^2
//   cc = sum (g_prev - g)^2       ec = sum e_old (g_prev - g)
//
// over a grid stride (and copies g into out_g_copy), a block sums them
// (BlockSum.h) into per-block partials, one block sums the partials, and the
// six doubles come to the host (the stream is synchronized), where the metrics
// are formed as on the CPU (common/CodecMetricSums.h). The sums are the CPU's in another order:
// equal within fp64 rounding, not bit for bit.
//
//===----------------------------------------------------------------------===//

#include "common/CodecMetricSums.h"
#include "cuda/BlockSum.h"
#include "cuda/Device.h"
#include "cuda/GridStride.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

namespace {

constexpr int kSums = 6; ///< vv, dd, rr, ee, cc, ec
constexpr unsigned kMetricBlocks = 256;

__global__ void __launch_bounds__(kThreads)
    metricPartials(const float *g, const float *residual, const float *newResidual, const float *decoded,
                   const float *previousG, int64_t n, float *outGCopy, double *partials) {
  __shared__ double shared[kThreads];
  double sums[kSums] = {0, 0, 0, 0, 0, 0};
  const bool lep = residual && previousG;
  PTRAIN_GRID_STRIDE(i, n) {
    const double gi = g[i];
    const double eOld = residual ? residual[i] : 0.0;
    const double v = gi + eOld;
    sums[0] += v * v;
    const double diff = newResidual ? static_cast<double>(newResidual[i]) : v - static_cast<double>(decoded[i]);
    sums[1] += diff * diff;
    if (newResidual)
      sums[2] += diff * diff;
    if (lep) {
      const double change = static_cast<double>(previousG[i]) - gi; // x_k - x_{k+1}
      sums[3] += eOld * eOld;
      sums[4] += change * change;
      sums[5] += eOld * change;
    }
    if (outGCopy)
      outGCopy[i] = g[i]; // previous_g[i] (which it may be) was read above
  }
  for (int k = 0; k < kSums; ++k) {
    const double s = blockSum(sums[k], shared);
    if (threadIdx.x == 0)
      partials[blockIdx.x * kSums + k] = s;
  }
}

__global__ void __launch_bounds__(kThreads) sumMetricPartials(const double *partials, int blocks, double *out) {
  __shared__ double shared[kThreads];
  for (int k = 0; k < kSums; ++k) {
    double s = 0.0;
    for (int b = threadIdx.x; b < blocks; b += blockDim.x)
      s += partials[b * kSums + k];
    s = blockSum(s, shared);
    if (threadIdx.x == 0)
      out[k] = s;
  }
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_codec_metrics_f32(const float *g, const float *residual,
                                                         const float *new_residual, const float *decoded,
                                                         const float *previous_g, int64_t n, float *out_g_copy,
                                                         ptrain_codec_metrics_t *out_metrics) {
  // The CPU call's checks, in its order and words.
  PTRAIN_CUDA_CHECK_PTR(g);
  PTRAIN_CUDA_CHECK_PTR(out_metrics);
  PTRAIN_CUDA_CHECK_SIZE(n);
  PTRAIN_CUDA_CHECK_ARG((new_residual != nullptr) != (decoded != nullptr),
                        "exactly one of 'new_residual' (error feedback) and 'decoded' (none) must be given");
  PTRAIN_CUDA_CHECK_ARG(!new_residual || residual,
                        "'new_residual' (error feedback) needs 'residual', the residual before the encode");
  PTRAIN_CUDA_CHECK_ARG(
      !out_g_copy || (out_g_copy != g && out_g_copy != residual && out_g_copy != new_residual && out_g_copy != decoded),
      "'out_g_copy' must not alias g, the residuals or 'decoded'");
  double sums[kSums] = {0, 0, 0, 0, 0, 0};
  if (n > 0) {
    const unsigned blocks = gridFor(n) < kMetricBlocks ? gridFor(n) : kMetricBlocks;
    auto *partials =
        static_cast<double *>(deviceScratch(__func__, DeviceSlot::Temp, sizeof(double) * kSums * (kMetricBlocks + 1)));
    if (!partials)
      return PTRAIN_ERROR_DEVICE;
    double *total = partials + kSums * kMetricBlocks;
    metricPartials<<<blocks, kThreads, 0, currentStream()>>>(g, residual, new_residual, decoded, previous_g, n,
                                                             out_g_copy, partials);
    sumMetricPartials<<<1, kThreads, 0, currentStream()>>>(partials, static_cast<int>(blocks), total);
    PTRAIN_CUDA_TRY(cudaGetLastError());
    PTRAIN_CUDA_TRY(cudaMemcpyAsync(sums, total, sizeof(sums), cudaMemcpyDeviceToHost, currentStream()));
    PTRAIN_CUDA_TRY(cudaStreamSynchronize(currentStream()));
  }
  *out_metrics =
      ptrain::codecMetricsFromSums({sums[0], sums[1], sums[2], sums[3], sums[4], sums[5]}, residual && previous_g);
  return PTRAIN_OK;
}
