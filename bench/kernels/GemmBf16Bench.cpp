//===- GemmBf16Bench.cpp - The bf16 GEMM against the fp32 GEMM ------------===//
//
// ptrain_gemm_bf16 (bf16 operands, fp32 accumulation; cpu/GemmBf16.cpp) on
// its two paths against ptrain_gemm_f32 (OpenBLAS sgemm) at the models' GEMM
// shapes, as the counter x_f32 = t_f32 / t_bf16 (above 1: bf16 is faster).
// t_f32 is measured before the benchmarks, once per shape in the same
// process (the best of 5 calls), so the ratio comes from one run.
// Arguments: m, n, k, path (1: avx512bf16, VDPBF16PS; 0: the emulation on the
// avx512 clone; 2: on the avx2 clone; a path the CPU lacks is skipped). Layout: C[m, n] = A[m, k] B^T
// with B [n, k], the linear layer's forward (gemm(0, 1, ...)).
//
// Times are CPU times (the machine is shared). One thread on both sides:
//   OPENBLAS_NUM_THREADS=1 build/bench/kernels/ptrain-bench-kernels
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/ptrain_runtime.h"

#include "common/Random.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <tuple>
#include <vector>

namespace {

using ptrain::bench::randomFloats;

using Shape = std::tuple<int64_t, int64_t, int64_t>;

double cpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

std::vector<uint16_t> toBf16(const std::vector<float> &f) {
  std::vector<uint16_t> out(f.size());
  if (ptrain_cast_f32_bf16(f.data(), static_cast<int64_t>(f.size()), out.data()) != PTRAIN_OK)
    std::fprintf(stderr, "%s\n", ptrain_last_error());
  return out;
}

/// The fp32 GEMM's best time at each shape.
std::map<Shape, double> f32Seconds;

double measureF32(int64_t m, int64_t n, int64_t k) {
  const std::vector<float> a = randomFloats(m * k, 1), b = randomFloats(n * k, 2);
  std::vector<float> c(m * n);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = cpuSeconds();
    if (ptrain_gemm_f32(0, 1, 1, m, n, k, 1.0f, a.data(), 0, b.data(), 0, 0.0f, c.data(), 0) != PTRAIN_OK)
      std::fprintf(stderr, "%s\n", ptrain_last_error());
    benchmark::DoNotOptimize(c.data());
    const double t = cpuSeconds() - t0;
    best = t < best ? t : best;
  }
  return best;
}

void BM_GemmF32(benchmark::State &state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const std::vector<float> a = randomFloats(m * k, 1), b = randomFloats(n * k, 2);
  std::vector<float> c(m * n);
  for (auto _ : state) {
    if (ptrain_gemm_f32(0, 1, 1, m, n, k, 1.0f, a.data(), 0, b.data(), 0, 0.0f, c.data(), 0) != PTRAIN_OK)
      state.SkipWithError(ptrain_last_error());
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_GemmBf16(benchmark::State &state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const bool hardware = state.range(3) == 1;
  const char *const forced = hardware ? "avx512bf16" : state.range(3) == 2 ? "avx2" : "avx512";
  if (ptrain_cpu_set_isa(forced) != PTRAIN_OK) {
    state.SkipWithError(ptrain_last_error());
    return;
  }
  const char *path = nullptr;
  ptrain_cpu_isa(&path);
  state.SetLabel(hardware ? "avx512bf16 (VDPBF16PS)" : std::string("emulation on ") + path);
  const std::vector<uint16_t> a = toBf16(randomFloats(m * k, 1)), b = toBf16(randomFloats(n * k, 2));
  std::vector<float> c(m * n);
  for (auto _ : state) {
    if (ptrain_gemm_bf16(0, 1, 1, m, n, k, 1.0f, a.data(), 0, b.data(), 0, 0.0f, c.data(), 0) != PTRAIN_OK)
      state.SkipWithError(ptrain_last_error());
    benchmark::DoNotOptimize(c.data());
  }
  ptrain_cpu_set_isa(nullptr);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
  // t_f32 / t_bf16: a rate counter divides by the CPU time per iteration.
  const Shape shape{m, n, k};
  if (!f32Seconds.count(shape))
    f32Seconds[shape] = measureF32(m, n, k);
  state.counters["x_f32"] = benchmark::Counter(f32Seconds[shape], benchmark::Counter::kIsIterationInvariantRate);
}

/// The models' GEMM shapes (linear layers' forward, rows = batch x sequence).
const Shape kShapes[] = {
    // The bundled GPT (models/gpt: hidden 128, MLP 512, vocabulary 256), 8 x 64 rows: QKV, projection, MLP up,
    // MLP down, LM head.
    {512, 384, 128},
    {512, 128, 128},
    {512, 512, 128},
    {512, 128, 512},
    {512, 256, 128},
    // GPT-2-small width (bench/scale: hidden 768, MLP 3072), 4 x 256 rows: QKV, MLP up, MLP down.
    {1024, 2304, 768},
    {1024, 3072, 768},
    {1024, 768, 3072},
};

void shapeArgs(benchmark::internal::Benchmark *b) {
  for (const auto &[m, n, k] : kShapes)
    b->Args({m, n, k});
}

void pathArgs(benchmark::internal::Benchmark *b) {
  for (const auto &[m, n, k] : kShapes)
    for (int64_t path : {1, 0, 2})
      b->Args({m, n, k, path});
}

BENCHMARK(BM_GemmF32)->Apply(shapeArgs)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GemmBf16)->Apply(pathArgs)->Unit(benchmark::kMillisecond);

} // namespace

int main(int argc, char **argv) {
  for (const auto &[m, n, k] : kShapes)
    f32Seconds[Shape{m, n, k}] = measureF32(m, n, k);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
