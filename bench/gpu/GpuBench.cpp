//===- GpuBench.cpp - CUDA codec kernels against the device copy bandwidth ===//
//
// Each ptrain_cuda_* codec kernel's throughput over the bytes it must read and
// write, divided by the device-to-device copy bandwidth measured in the same
// run at the same size (issue 9's target: >= 0.8 for the elementwise codecs),
// and PowerSGD encode + decode against the ring all-reduce it replaces,
// modelled as in bench/codecs: 2 (N - 1) / N of the bytes over one 25 GB/s
// (200 Gb/s InfiniBand) link, N = 8, latency ignored. Times are CUDA event
// times, the median of 20 runs after 3 warm-ups. Prints Markdown tables for
// bench/README.md; exits 77 without a device. Run by bench/gpu/run.sh.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/ptrain_runtime_cuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

namespace {

#define CHECK_CUDA(expr)                                                                                               \
  do {                                                                                                                 \
    const cudaError_t err_ = (expr);                                                                                   \
    if (err_ != cudaSuccess) {                                                                                         \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(err_));                                               \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

#define CHECK_PTRAIN(expr)                                                                                             \
  do {                                                                                                                 \
    if ((expr) != PTRAIN_OK) {                                                                                         \
      std::fprintf(stderr, "%s: %s\n", #expr, ptrain_last_error());                                                    \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

/// Median seconds of `body` over 20 timed runs (3 warm-ups), by CUDA events.
double timeIt(const std::function<void()> &body) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i)
    body();
  std::vector<double> times;
  for (int i = 0; i < 20; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    body();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

template <typename T> T *deviceAlloc(size_t n) {
  void *p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, n * sizeof(T)));
  return static_cast<T *>(p);
}

float *deviceRandom(size_t n, uint32_t seed, float scale) {
  std::vector<float> host(n);
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (float &x : host)
    x = dist(gen);
  float *d = deviceAlloc<float>(n);
  CHECK_CUDA(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

} // namespace

int main() {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices < 1) {
    std::printf("SKIPPED: no usable CUDA device (%s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "zero devices");
    return 77;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int64_t n = int64_t{1} << 26; // 64 Mi fp32 = 256 MiB per array
  float *g = deviceRandom(n, 1, 1.0f), *e = deviceRandom(n, 2, 0.01f), *out = deviceAlloc<float>(n);
  uint16_t *code16 = deviceAlloc<uint16_t>(n);
  uint8_t *packed = deviceAlloc<uint8_t>(n);
  float *scales = deviceAlloc<float>(n / 64 + 1), *zeros = deviceAlloc<float>(n / 64 + 1);
  const int64_t k = n / 100;
  float *values = deviceAlloc<float>(k);
  int32_t *indices = deviceAlloc<int32_t>(k);

  const double tCopy = timeIt([&] { CHECK_CUDA(cudaMemcpyAsync(out, g, n * 4, cudaMemcpyDeviceToDevice)); });
  const double copyBw = 8.0 * n / tCopy;
  std::printf("device: %s, %d SMs; n = 2^26 fp32 (256 MiB per array)\n\n", prop.name, prop.multiProcessorCount);
  std::printf("| kernel | GB/s | x_copy |\n|---|---|---|\n");
  std::printf("| device copy (baseline, 8 B/element) | %.0f | 1 |\n", copyBw / 1e9);
  auto row = [&](const char *name, double bytesPerElement, const std::function<void()> &body) {
    const double t = timeIt(body);
    const double bw = bytesPerElement * n / t;
    std::printf("| %s | %.0f | %.2f |\n", name, bw / 1e9, bw / copyBw);
  };
  // Bytes each kernel must read and write (as bench/codecs): encode + EF reads g, e and writes e and the code.
  row("cast encode + EF, fp16", 14,
      [&] { CHECK_PTRAIN(ptrain_cuda_cast_encode_f32(g, e, n, PTRAIN_DTYPE_F16, code16)); });
  row("cast encode + EF, bf16", 14,
      [&] { CHECK_PTRAIN(ptrain_cuda_cast_encode_f32(g, e, n, PTRAIN_DTYPE_BF16, code16)); });
  row("cast decode, fp16", 6, [&] { CHECK_PTRAIN(ptrain_cuda_cast_decode_f32(code16, n, PTRAIN_DTYPE_F16, out)); });
  for (int bits : {8, 4, 2}) {
    char name[96];
    std::snprintf(name, sizeof(name), "quant encode + EF, %d-bit, block 64 (sym)", bits);
    row(name, 12 + bits / 8.0 + 4.0 / 64, [&] {
      CHECK_PTRAIN(ptrain_cuda_quant_encode_f32(g, e, 1, n, bits, PTRAIN_QUANT_BLOCK, 64, 1, packed, scales, nullptr));
    });
    std::snprintf(name, sizeof(name), "quant decode, %d-bit, block 64", bits);
    row(name, 4 + bits / 8.0 + 4.0 / 64, [&] {
      CHECK_PTRAIN(ptrain_cuda_quant_decode_f32(packed, scales, nullptr, 1, n, bits, PTRAIN_QUANT_BLOCK, 64, 1, out));
    });
  }
  row("quant encode + EF, 4-bit, per channel (1024 columns, asym)", 12.5, [&] {
    CHECK_PTRAIN(
        ptrain_cuda_quant_encode_f32(g, e, n / 1024, 1024, 4, PTRAIN_QUANT_CHANNEL, 0, 0, packed, scales, zeros));
  });
  int64_t counter = 0;
  row("rand-k encode + EF, k = n/100 (host positions)", 12 + 0.04,
      [&] { CHECK_PTRAIN(ptrain_cuda_randk_encode_f32(g, e, n, k, 7, &counter, values)); });
  row("top-k encode + EF, k = n/100 (radix sort)", 12 + 0.08,
      [&] { CHECK_PTRAIN(ptrain_cuda_topk_encode_f32(g, e, n, k, values, indices)); });

  // PowerSGD against the all-reduce it replaces (the shapes of bench/codecs).
  std::printf("\n| shape, rank | size ratio | t_codec (encode + decode) | all-reduce fp32 | all-reduce P, Q | "
              "net_gain |\n|---|---|---|---|---|---|\n");
  const double link = 25e9, ranks = 8, ring = 2.0 * (ranks - 1) / ranks;
  struct Case {
    int64_t rows, cols, rank;
  };
  for (const Case c : {Case{7680, 1920, 128}, Case{1920, 1920, 128}, Case{1024, 1920, 16}}) {
    float *m = deviceRandom(c.rows * c.cols, 3, 1.0f), *res = deviceRandom(c.rows * c.cols, 4, 0.01f);
    float *p = deviceAlloc<float>(c.rows * c.rank), *q = deviceAlloc<float>(c.cols * c.rank);
    float *qs = deviceRandom(c.cols * c.rank, 5, 1.0f), *dec = deviceAlloc<float>(c.rows * c.cols);
    const double t = timeIt([&] {
      CHECK_PTRAIN(ptrain_cuda_powersgd_encode_f32(m, res, qs, 1, c.rows, c.cols, c.rank, 9, p, q));
      CHECK_PTRAIN(ptrain_cuda_powersgd_decode_f32(p, q, 1, c.rows, c.cols, c.rank, dec));
    });
    const double full = 4.0 * c.rows * c.cols, factors = 4.0 * (c.rows + c.cols) * c.rank;
    const double tFull = ring * full / link, tFactors = ring * factors / link;
    std::printf("| %lld x %lld, r = %lld | %.1f | %.3f ms | %.2f ms | %.3f ms | %.2f |\n",
                static_cast<long long>(c.rows), static_cast<long long>(c.cols), static_cast<long long>(c.rank),
                full / factors, t * 1e3, tFull * 1e3, tFactors * 1e3, tFull / (t + tFactors));
    for (float *ptr : {m, res, p, q, qs, dec})
      cudaFree(ptr);
  }
  return 0;
}
