//===- codec_bench.cpp - Generated quantization encoders vs the runtime's ---===//
//
// Built and run by codec_bench.py with the object ptrain-translate --emit-cpp-kernels writes for codecs.mlir:
// each quantization site (2^22 elements, blocks of 64, error feedback) encoded by the runtime's
// ptrain_quant_encode_f32 on the ISA path given (PTRAIN_CPU_ISA's names) and by its generated kernel, and a
// memcpy of the same 16 MiB, alternating, the best of `reps` runs each in thread CPU time (the machine is
// shared). Prints one row per site: milliseconds, GB/s over the bytes the encoder must move (g and e read, e
// and the codes and scales written: (12 + bits / 8) bytes per element) and over memcpy's (8 bytes per
// element), each against memcpy, and whether the kernel's codes, scales, zero points and residual equal the
// runtime's (exit status 1 if not).
//
//===----------------------------------------------------------------------===//

#include "common/CpuTime.h"
#include "common/Random.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

extern "C" int64_t ptrain_codec_kernel_0(const float *, float *, uint8_t *, float *);
extern "C" int64_t ptrain_codec_kernel_1(const float *, float *, uint8_t *, float *, float *);
extern "C" int64_t ptrain_codec_kernel_2(const float *, float *, uint8_t *, float *, float *);

namespace {

using ptrain::bench::bestMs;
using ptrain::bench::randomFloats;

constexpr int64_t kNumel = int64_t(1) << 22, kBlock = 64, kBlocks = kNumel / kBlock;

/// One site: bits, symmetry, the generated kernel (zeros is null when symmetric).
bool site(int bits, bool symmetric, int reps, int64_t (*kernel)(const float *, float *, uint8_t *, float *, float *)) {
  const std::vector<float> g = randomFloats(kNumel, 11 + bits), e0 = randomFloats(kNumel, 12);
  std::vector<float> e1(kNumel), e2(kNumel), s1(kBlocks), s2(kBlocks), z1(kBlocks), z2(kBlocks), src(kNumel, 1.0f),
      dst(kNumel);
  for (int64_t i = 0; i < kNumel; ++i)
    e1[i] = e2[i] = 0.01f * e0[i];
  const int64_t bytes = kNumel * bits / 8;
  std::vector<uint8_t> p1(bytes), p2(bytes);
  bool ok = true;
  auto runtime = [&] {
    ok &= ptrain_quant_encode_f32(g.data(), e1.data(), 1, kNumel, bits, PTRAIN_QUANT_BLOCK, kBlock, symmetric,
                                  p1.data(), s1.data(), z1.data()) == PTRAIN_OK;
  };
  auto generated = [&] {
    ok &= kernel(g.data(), e2.data(), p2.data(), s2.data(), symmetric ? nullptr : z2.data()) < 0;
  };
  auto copy = [&] { std::memcpy(dst.data(), src.data(), kNumel * sizeof(float)); };
  // Three calls each from the same residual: the same bits after every one (error feedback carried).
  for (int c = 0; c < 3; ++c) {
    runtime();
    generated();
  }
  const bool same = ok && p1 == p2 && std::memcmp(s1.data(), s2.data(), kBlocks * 4) == 0 &&
                    (symmetric || std::memcmp(z1.data(), z2.data(), kBlocks * 4) == 0) &&
                    std::memcmp(e1.data(), e2.data(), kNumel * 4) == 0;
  double r = 1e30, k = 1e30, m = 1e30;
  for (int round = 0; round < 3; ++round) { // interleaved
    m = std::min(m, bestMs(reps, copy));
    r = std::min(r, bestMs(reps, runtime));
    k = std::min(k, bestMs(reps, generated));
  }
  const double moved = kNumel * (12.0 + bits / 8.0) + kBlocks * 4.0 * (symmetric ? 1 : 2), copied = kNumel * 8.0;
  const double memcpyGBs = copied / m / 1e6, runtimeGBs = moved / r / 1e6, kernelGBs = moved / k / 1e6;
  std::printf("| %d-bit %s + EF | %.2f | %.3f | %.2f (%.2fx) | %.3f | %.2f (%.2fx) | %.2f | %s |\n", bits,
              symmetric ? "sym" : "asym", memcpyGBs, r, runtimeGBs, runtimeGBs / memcpyGBs, k, kernelGBs,
              kernelGBs / memcpyGBs, r / k, same ? "yes" : "NO");
  return same;
}

int64_t kernel0(const float *g, float *e, uint8_t *p, float *s, float *) { return ptrain_codec_kernel_0(g, e, p, s); }

} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  if (argc > 2 && ptrain_cpu_set_isa(argv[2]) != PTRAIN_OK) {
    std::fprintf(stderr, "%s\n", ptrain_last_error());
    return 2;
  }
  const char *isa = "";
  ptrain_cpu_isa(&isa);
  std::printf("runtime path %s, 2^22 elements, blocks of 64\n\n", isa);
  std::printf("| site | memcpy GB/s | runtime ms | GB/s (x memcpy) | generated ms | GB/s (x memcpy) | runtime / "
              "generated | same bits |\n|---|---|---|---|---|---|---|---|\n");
  bool same = site(8, true, reps, kernel0);
  same &= site(4, false, reps, ptrain_codec_kernel_1);
  same &= site(2, false, reps, ptrain_codec_kernel_2);
  return same ? 0 : 1;
}
