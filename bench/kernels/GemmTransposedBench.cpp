//===- GemmTransposedBench.cpp - A weight gradient written transposed -----===//
//
// The bundled GPT's four linear-layer weight gradients of one layer and step
// (d = 128; dW^T = x^T dy over K = batch x seq = 256; qkv 128 -> 384,
// projection 128 -> 128, MLP 128 -> 512 and 512 -> 128), accumulated into
// their gradient states (beta = 1), as --emit-cpp writes them:
//   swapped: kern10's fold, the GEMM with its operands swapped,
//     (A^T B)^T = B^T A, straight into the state (ptrain_gemm_f32);
//   scratch: kern11's, ptrain_gemm_transposed_f32: the unfolded GEMM into a
//     per-thread scratch, then a transposing add into the state (the unfolded
//     bits on every OpenBLAS kernel family; the swapped GEMM's differ on the
//     Haswell kernels: GemmTest).
// With OpenBLAS's SkylakeX kernels ptrain_gemm_transposed_f32 takes the swapped
// GEMM itself (the same bits there at K <= 256): the two rows then time the
// same calls; the scratch route is what OPENBLAS_CORETYPE=Haswell measures.
// Counter x_swapped = t_swapped / t_scratch (below 1: the scratch costs), from
// the best of 5 passes of the swapped sequence measured at the start of
// BM_WeightGradsScratch (one run).
//
// Times are CPU times (the machine is shared). One thread:
//   OPENBLAS_NUM_THREADS=1 build/bench/kernels/ptrain-bench-kernels --benchmark_filter=WeightGrads
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/ptrain_runtime.h"

#include "common/CpuTime.h"
#include "common/Random.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace {

using ptrain::bench::randomFloats;

constexpr int64_t K = 256;

struct Grad {
  int64_t in, out;
  std::vector<float> x, dy, state;
};

std::vector<Grad> layer() {
  std::vector<Grad> grads;
  unsigned seed = 1;
  for (auto [in, out] : {std::pair<int64_t, int64_t>{128, 384}, {128, 128}, {128, 512}, {512, 128}})
    grads.push_back({in, out, randomFloats(K * in, seed++), randomFloats(K * out, seed++),
                     randomFloats(in * out, seed++)});
  return grads;
}

/// dW [out, in] += (x^T dy)^T: the swapped GEMM into the state.
void swapped(std::vector<Grad> &grads) {
  for (Grad &g : grads)
    ptrain_gemm_f32(1, 0, 1, g.out, g.in, K, 1.0f, g.dy.data(), 0, g.x.data(), 0, 1.0f, g.state.data(), 0);
}

/// The same through ptrain_gemm_transposed_f32.
void scratch(std::vector<Grad> &grads) {
  for (Grad &g : grads)
    ptrain_gemm_transposed_f32(1, 0, g.in, g.out, K, 1.0f, g.x.data(), g.dy.data(), 1.0f, g.state.data());
}

/// The swapped sequence's best thread CPU time over 5 passes (after one to warm the caches), in seconds.
double swappedSeconds() {
  std::vector<Grad> grads = layer();
  swapped(grads);
  return 1e-3 * ptrain::bench::bestMs(5, [&] { swapped(grads); });
}

void BM_WeightGradsSwapped(benchmark::State &state) {
  std::vector<Grad> grads = layer();
  for (auto _ : state) {
    swapped(grads);
    benchmark::DoNotOptimize(grads[0].state.data());
  }
}

void BM_WeightGradsScratch(benchmark::State &state) {
  const double reference = swappedSeconds();
  std::vector<Grad> grads = layer();
  for (auto _ : state) {
    scratch(grads);
    benchmark::DoNotOptimize(grads[0].state.data());
  }
  state.counters["x_swapped"] = benchmark::Counter(reference, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_WeightGradsSwapped)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WeightGradsScratch)->Unit(benchmark::kMicrosecond);

} // namespace
