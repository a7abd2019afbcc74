//===- GemmHeadsBench.cpp - The attention's GEMMs with and without permutes -===//
//
// One layer's attention GEMMs of the bundled GPT's micro-batch step (B = 4,
// T = 64, H = 4, D = 32), forward and backward, as --emit-cpp writes them:
//   permuted: with --emit-cpp-fold-head-permutes=false, 8 ptrain_permute_f32
//     (Q, K, V split; the context merged; the context's gradient split; dQ,
//     dK^T, dV merged) and 6 ptrain_gemm_f32 over the [B * H] batch;
//   in_place: the default (GemmFusion.h, head permutes), 6
//     ptrain_gemm_strided_f32 reading and writing [B, T, H, D] through leading
//     dimensions and the one permute kept (dK^T merged back).
// The softmax and its gradient between the GEMMs are left out (the same in
// both). Counter x_permuted = t_permuted / t_in_place (above 1: in place is
// faster), from the best of 5 passes of the permuted sequence measured at the
// start of BM_HeadsInPlace (one run).
//
// Times are CPU times (the machine is shared). One thread:
//   OPENBLAS_NUM_THREADS=1 build/bench/kernels/ptrain-bench-kernels --benchmark_filter=Heads
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/ptrain_runtime.h"

#include "common/Random.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <vector>

namespace {

using ptrain::bench::randomFloats;

constexpr int64_t B = 4, T = 64, H = 4, D = 32, BH = B * H, TD = T * D, TT = T * T, N = B * T * H * D;

double cpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void check(ptrain_status_t s) {
  if (s != PTRAIN_OK)
    std::fprintf(stderr, "%s\n", ptrain_last_error());
}

/// The layer's tensors: inputs in [B, T, H, D] (q, k, v, the context's gradient), probabilities and their
/// gradient [B, H, T, T], and every intermediate either sequence writes.
struct Layer {
  std::vector<float> q = randomFloats(N, 1), k = randomFloats(N, 2), v = randomFloats(N, 3), dctx = randomFloats(N, 4),
                     p = randomFloats(BH * TT, 5), ds = randomFloats(BH * TT, 6);
  std::vector<float> qh = std::vector<float>(N), kt = qh, vh = qh, dch = qh, ctx = qh, ctxm = qh, dq = qh,
                     dqm = qh, dkt = qh, dkm = qh, dv = qh, dvm = qh, scores = std::vector<float>(BH * TT),
                     dp = scores;
};

const int64_t kSplit[4] = {B, T, H, D}, kHeads[4] = {B, H, T, D}, kHeadsT[4] = {B, H, D, T};
const int32_t k0213[4] = {0, 2, 1, 3}, k0231[4] = {0, 2, 3, 1}, k0312[4] = {0, 3, 1, 2};

/// --emit-cpp-fold-head-permutes=false: the permutes materialized, the GEMMs over [B * H] dense stacks.
void permuted(Layer &l) {
  check(ptrain_permute_f32(l.q.data(), 4, kSplit, k0213, l.qh.data()));
  check(ptrain_permute_f32(l.v.data(), 4, kSplit, k0213, l.vh.data()));
  check(ptrain_permute_f32(l.k.data(), 4, kSplit, k0231, l.kt.data()));
  check(ptrain_gemm_f32(0, 0, BH, T, T, D, 1.0f, l.qh.data(), TD, l.kt.data(), TD, 0.0f, l.scores.data(), TT));
  check(ptrain_gemm_f32(0, 0, BH, T, D, T, 1.0f, l.p.data(), TT, l.vh.data(), TD, 0.0f, l.ctx.data(), TD));
  check(ptrain_permute_f32(l.ctx.data(), 4, kHeads, k0213, l.ctxm.data()));
  check(ptrain_permute_f32(l.dctx.data(), 4, kSplit, k0213, l.dch.data()));
  check(ptrain_gemm_f32(0, 1, BH, T, T, D, 1.0f, l.dch.data(), TD, l.vh.data(), TD, 0.0f, l.dp.data(), TT));
  check(ptrain_gemm_f32(1, 0, BH, T, D, T, 1.0f, l.p.data(), TT, l.dch.data(), TD, 0.0f, l.dv.data(), TD));
  check(ptrain_gemm_f32(0, 1, BH, T, D, T, 1.0f, l.ds.data(), TT, l.kt.data(), TD, 0.0f, l.dq.data(), TD));
  check(ptrain_gemm_f32(1, 0, BH, D, T, T, 1.0f, l.qh.data(), TD, l.ds.data(), TT, 0.0f, l.dkt.data(), TD));
  check(ptrain_permute_f32(l.dkt.data(), 4, kHeadsT, k0312, l.dkm.data()));
  check(ptrain_permute_f32(l.dv.data(), 4, kHeads, k0213, l.dvm.data()));
  check(ptrain_permute_f32(l.dq.data(), 4, kHeads, k0213, l.dqm.data()));
}

/// The default: [B, T, H, D] read and written in place ({H*D, T*H*D, D}); the dense [B, H, T, T] stacks
/// {T, H*T*T, T*T}; dK^T [B, H, D, T] {T, H*D*T, D*T} merged by the one permute kept.
void inPlace(Layer &l) {
  const int64_t heads[3] = {H * D, T * H * D, D}, square[3] = {T, H * TT, TT}, dkt[3] = {T, H * TD, TD};
  check(ptrain_gemm_strided_f32(0, 1, B, H, T, T, D, 1.0f, l.q.data(), heads, l.k.data(), heads, 0.0f,
                                l.scores.data(), square));
  check(ptrain_gemm_strided_f32(0, 0, B, H, T, D, T, 1.0f, l.p.data(), square, l.v.data(), heads, 0.0f,
                                l.ctxm.data(), heads));
  check(ptrain_gemm_strided_f32(0, 1, B, H, T, T, D, 1.0f, l.dctx.data(), heads, l.v.data(), heads, 0.0f,
                                l.dp.data(), square));
  check(ptrain_gemm_strided_f32(1, 0, B, H, T, D, T, 1.0f, l.p.data(), square, l.dctx.data(), heads, 0.0f,
                                l.dvm.data(), heads));
  check(ptrain_gemm_strided_f32(0, 0, B, H, T, D, T, 1.0f, l.ds.data(), square, l.k.data(), heads, 0.0f,
                                l.dqm.data(), heads));
  check(ptrain_gemm_strided_f32(1, 0, B, H, D, T, T, 1.0f, l.q.data(), heads, l.ds.data(), square, 0.0f,
                                l.dkt.data(), dkt));
  check(ptrain_permute_f32(l.dkt.data(), 4, kHeadsT, k0312, l.dkm.data()));
}

/// The permuted sequence's best CPU time over 5 passes (after one to warm the caches).
double permutedSeconds() {
  Layer l;
  permuted(l);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = cpuSeconds();
    permuted(l);
    best = std::min(best, cpuSeconds() - t0);
  }
  return best;
}

void BM_HeadsPermuted(benchmark::State &state) {
  Layer l;
  for (auto _ : state) {
    permuted(l);
    benchmark::DoNotOptimize(l.dqm.data());
  }
}

void BM_HeadsInPlace(benchmark::State &state) {
  const double reference = permutedSeconds();
  Layer l;
  for (auto _ : state) {
    inPlace(l);
    benchmark::DoNotOptimize(l.dqm.data());
  }
  state.counters["x_permuted"] = benchmark::Counter(reference, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_HeadsPermuted)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HeadsInPlace)->Unit(benchmark::kMicrosecond);

} // namespace

