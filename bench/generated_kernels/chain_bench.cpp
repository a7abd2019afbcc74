//===- chain_bench.cpp - Generated kernels vs the runtime's, per chain ----===//
//
// Built and run by chain_bench.py with the object ptrain-translate --emit-cpp-kernels writes for chains.mlir:
// each chain as the runtime's calls (ptrain_binary_f32, ptrain_gelu_fwd_f32: one pass per op, the
// intermediate written and read back) and as its generated kernel (one pass), the best of --reps runs of each
// in thread CPU time (the machine is shared: wall time measures the wait for the core), alternating. Prints
// one line per chain: milliseconds, the bytes each variant moves at least (reads + writes of its operands,
// broadcast inputs once) over its time, the ratio, and whether the outputs are identical (exit status 1 if
// not).
//
//===----------------------------------------------------------------------===//

#include "common/CpuTime.h"
#include "common/Random.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

// The kernels take their chain's inputs in order of first use (ElementwiseChains.h), then the output.
extern "C" void ptrain_kernel_0(const float *, const float *, const float *, float *);
extern "C" void ptrain_kernel_1(const float *, const float *, const float *, float *);
extern "C" void ptrain_kernel_2(const float *, const float *, float *);
extern "C" void ptrain_kernel_3(const float *, const float *, const float *, float *);
extern "C" void ptrain_kernel_4(const float *, const float *, const float *, float *);
extern "C" void ptrain_kernel_5(const float *, const float *, float *);
extern "C" void ptrain_kernel_6(const float *, const float *, float *);
extern "C" void ptrain_kernel_7(const float *, const float *, const float *, float *);
extern "C" void ptrain_kernel_8(const float *, const float *, const float *, float *);

namespace {

using ptrain::bench::bestMs;
using ptrain::bench::randomFloats;

/// Prints the chain's row; returns `same`.
bool report(const char *name, double unfusedMs, double fusedMs, double unfusedBytes, double fusedBytes, bool same) {
  std::printf("| %s | %.3f | %.1f | %.3f | %.1f | %.2f | %s |\n", name, unfusedMs, unfusedBytes / unfusedMs / 1e6,
              fusedMs, fusedBytes / fusedMs / 1e6, unfusedMs / fusedMs, same ? "yes" : "NO");
  return same;
}

/// Runs both variants once (the outputs to compare), then times them alternating twice and prints the row.
template <typename U, typename F>
bool compare(const char *name, int reps, U &&unfused, F &&fused, double unfusedBytes, double fusedBytes,
             const std::vector<float> &ref, const std::vector<float> &out, const bool &ok) {
  unfused();
  fused();
  double u = 0, f = 0;
  for (int r = 0; r < 2; ++r) { // alternate, twice
    u = r ? std::min(u, bestMs(reps, unfused)) : bestMs(reps, unfused);
    f = r ? std::min(f, bestMs(reps, fused)) : bestMs(reps, fused);
  }
  return report(name, u, f, unfusedBytes, fusedBytes,
                ok && std::memcmp(ref.data(), out.data(), ref.size() * sizeof(float)) == 0);
}

} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  bool allSame = true;
  std::printf("| chain | runtime per op (ms) | GB/s | generated kernel (ms) | GB/s | speedup | same bits |\n"
              "|---|---|---|---|---|---|---|\n");
  {
    const int64_t dims[4] = {8, 12, 256, 256}, maskDims[2] = {256, 256};
    const size_t n = 8 * 12 * 256 * 256;
    std::vector<float> x = randomFloats(n, 1), mask = randomFloats(256 * 256, 2), tmp(n), ref(n), out(n);
    const float scale = 0.125f;
    bool ok = true;
    auto unfused = [&] {
      ok &= ptrain_binary_f32(PTRAIN_BINARY_MUL, x.data(), 4, dims, &scale, 0, nullptr, 4, dims, tmp.data()) == 0;
      ok &=
          ptrain_binary_f32(PTRAIN_BINARY_ADD, tmp.data(), 4, dims, mask.data(), 2, maskDims, 4, dims, ref.data()) == 0;
    };
    auto fused = [&] { ptrain_kernel_0(x.data(), &scale, mask.data(), out.data()); };
    // Unfused: x read, tmp written, tmp read, out written; fused: x read, out written (the mask stays cached).
    allSame &= compare("scale + mask, 8x12x256x256", reps, unfused, fused, 4.0 * n * 4, 2.0 * n * 4, ref, out, ok);
  }
  {
    const int64_t dims[3] = {16, 512, 768}, biasDims[1] = {768};
    const size_t n = 16 * 512 * 768;
    std::vector<float> y = randomFloats(n, 3), b = randomFloats(768, 4), res = randomFloats(n, 5), tmp(n), ref(n),
                       out(n);
    bool ok = true;
    auto unfused = [&] {
      ok &= ptrain_binary_f32(PTRAIN_BINARY_ADD, b.data(), 1, biasDims, y.data(), 3, dims, 3, dims, tmp.data()) == 0;
      ok &= ptrain_binary_f32(PTRAIN_BINARY_ADD, res.data(), 3, dims, tmp.data(), 3, dims, 3, dims, ref.data()) == 0;
    };
    auto fused = [&] { ptrain_kernel_1(b.data(), y.data(), res.data(), out.data()); }; // inputs in first-use order
    // Unfused: y read, tmp written; res and tmp read, out written. Fused: y and res read, out written.
    allSame &= compare("bias + residual, 16x512x768", reps, unfused, fused, 5.0 * n * 4, 3.0 * n * 4, ref, out, ok);
  }
  {
    const int64_t dims[3] = {8, 512, 3072}, biasDims[1] = {3072};
    const size_t n = 8 * 512 * 3072;
    std::vector<float> y = randomFloats(n, 6), b = randomFloats(3072, 7), tmp(n), ref(n), out(n);
    bool ok = true;
    auto unfused = [&] {
      ok &= ptrain_binary_f32(PTRAIN_BINARY_ADD, y.data(), 3, dims, b.data(), 1, biasDims, 3, dims, tmp.data()) == 0;
      ok &= ptrain_gelu_fwd_f32(tmp.data(), n, ref.data()) == 0;
    };
    auto fused = [&] { ptrain_kernel_2(y.data(), b.data(), out.data()); };
    // Unfused: y read, tmp written; tmp read, out written. Fused: y read, out written (the bias stays cached).
    allSame &= compare("bias + GELU, 8x512x3072", reps, unfused, fused, 4.0 * n * 4, 2.0 * n * 4, ref, out, ok);
  }
  // The scores' scale, causal mask (0 or -inf) and softmax: the GPT-2-small size (far beyond the caches) and the
  // bundled GPT's (in L2), the runtime's three calls against one generated kernel.
  auto softmaxChain = [&](const char *name, int64_t batch, int64_t heads, int64_t seq, float scale,
                          void (*kernel)(const float *, const float *, const float *, float *)) {
    const int64_t dims[4] = {batch, heads, seq, seq}, maskDims[2] = {seq, seq};
    const size_t n = batch * heads * seq * seq;
    std::vector<float> x = randomFloats(n, 8), mask(seq * seq), tmp(n), tmp2(n), ref(n), out(n);
    for (int64_t q = 0; q < seq; ++q)
      for (int64_t k = 0; k < seq; ++k)
        mask[q * seq + k] = k > q ? -__builtin_inff() : 0.0f;
    bool ok = true;
    auto unfused = [&] {
      ok &= ptrain_binary_f32(PTRAIN_BINARY_MUL, x.data(), 4, dims, &scale, 0, nullptr, 4, dims, tmp.data()) == 0;
      ok &= ptrain_binary_f32(PTRAIN_BINARY_ADD, tmp.data(), 4, dims, mask.data(), 2, maskDims, 4, dims, tmp2.data()) ==
            0;
      ok &= ptrain_softmax_fwd_f32(tmp2.data(), n / seq, seq, 0, ref.data()) == 0;
    };
    auto fused = [&] { kernel(x.data(), &scale, mask.data(), out.data()); };
    // Unfused: x read, tmp written, tmp read, tmp2 written, tmp2 read, out written; fused: x read, out written.
    return compare(name, reps, unfused, fused, 6.0 * n * 4, 2.0 * n * 4, ref, out, ok);
  };
  allSame &= softmaxChain("scale + mask + softmax, 8x12x256x256", 8, 12, 256, 0.125f, ptrain_kernel_3);
  allSame &= softmaxChain("scale + mask + softmax, 4x4x64x64", 4, 4, 64, 0.17677669f, ptrain_kernel_4);
  // The softmax gradient and the scale's gradient: the runtime's two calls against one generated kernel.
  auto softmaxGradChain = [&](const char *name, int64_t batch, int64_t heads, int64_t seq, float scale,
                              void (*kernel)(const float *, const float *, const float *, float *)) {
    const int64_t dims[4] = {batch, heads, seq, seq};
    const size_t n = batch * heads * seq * seq;
    std::vector<float> dy = randomFloats(n, 12), y = randomFloats(n, 13), tmp(n), ref(n), out(n);
    bool ok = true;
    auto unfused = [&] {
      ok &= ptrain_softmax_bwd_f32(dy.data(), y.data(), n / seq, seq, tmp.data()) == 0;
      ok &= ptrain_binary_f32(PTRAIN_BINARY_MUL, tmp.data(), 4, dims, &scale, 0, nullptr, 4, dims, ref.data()) == 0;
    };
    auto fused = [&] { kernel(dy.data(), y.data(), &scale, out.data()); };
    // Unfused: dy, y read twice (dot, dx) and tmp written, tmp read, out written; fused: dy, y read twice, out
    // written (a 64-column row stays in L1 between the two reads, so count them once).
    return compare(name, reps, unfused, fused, 5.0 * n * 4, 3.0 * n * 4, ref, out, ok);
  };
  allSame &= softmaxGradChain("softmax grad + scale, 8x12x256x256", 8, 12, 256, 0.125f, ptrain_kernel_7);
  allSame &= softmaxGradChain("softmax grad + scale, 4x4x64x64", 4, 4, 64, 0.17677669f, ptrain_kernel_8);
  // Bias + GELU after the MLP's up projection, the two ways the step can compute it: GemmFusion's bias rows
  // (C = the bias broadcast, C = x W^T + C, then the runtime's GELU) against the GEMM alone (beta 0) and the
  // generated bias + GELU kernel. The bits may differ, and that is a result, not an error of the kernel (the
  // kernel's own bits are checked against the runtime's add + GELU above and in the unit test): OpenBLAS blocks
  // a long K and adds each block's product to C, so with the bias in C it is added before the last blocks.
  auto biasGelu = [&](const char *name, int64_t rows, int64_t in, int64_t out,
                      void (*kernel)(const float *, const float *, float *)) {
    const size_t n = rows * out;
    std::vector<float> x = randomFloats(rows * in, 9), w = randomFloats(out * in, 10), b = randomFloats(out, 11), c(n),
                       ref(n), res(n);
    const int64_t biasDims[1] = {out}, outDims[2] = {rows, out};
    bool ok = true;
    auto folded = [&] {
      ok &= ptrain_broadcast_to(b.data(), 4, 1, biasDims, 2, outDims, c.data()) == 0;
      ok &= ptrain_gemm_f32(0, 1, 1, rows, out, in, 1.0f, x.data(), 0, w.data(), 0, 1.0f, c.data(), 0) == 0;
      ok &= ptrain_gelu_fwd_f32(c.data(), n, ref.data()) == 0;
    };
    auto chained = [&] {
      ok &= ptrain_gemm_f32(0, 1, 1, rows, out, in, 1.0f, x.data(), 0, w.data(), 0, 0.0f, c.data(), 0) == 0;
      kernel(c.data(), b.data(), res.data());
    };
    // Folded: C written (bias rows), read and written by the GEMM, read by GELU, out written; chained: C
    // written by the GEMM, read by the kernel, out written (the GEMM's operands alike in both: not counted).
    return compare(name, reps, folded, chained, 5.0 * n * 4, 3.0 * n * 4, ref, res, ok);
  };
  biasGelu("GEMM + bias rows + GELU vs GEMM + bias + GELU kernel, 256x128 -> 512", 256, 128, 512, ptrain_kernel_5);
  biasGelu("GEMM + bias rows + GELU vs GEMM + bias + GELU kernel, 1024x768 -> 3072", 1024, 768, 3072, ptrain_kernel_6);
  return allSame ? 0 : 1; // a kernel that computes other bits is an error, not a result
}
