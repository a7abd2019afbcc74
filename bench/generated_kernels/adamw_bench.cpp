//===- adamw_bench.cpp - Generated AdamW kernels vs the runtime's ----------===//
//
// Built and run by adamw_bench.py with the object ptrain-translate --emit-cpp-kernels writes for adamw.mlir: one
// bucket of 2^22 elements updated by the runtime (ptrain_adamw_step_f32, after ptrain_binary_f32's mul by the
// clip scale when clipped) and by its generated kernel (ptrain_adamw_coefficients_f32, then the kernel), and a
// memcpy of 16 MiB, alternating, the best of `reps` runs each in thread CPU time (the machine is shared).
// Prints one row per update: milliseconds, GB/s over the bytes the update must move (p, g, m, v read and p, m, v
// written: 28 bytes per element) against memcpy's (8 bytes per element), and whether p, m and v equal the
// runtime's after three updates (exit status 1 if not).
//
//===----------------------------------------------------------------------===//

#include "common/CpuTime.h"
#include "common/Random.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" void ptrain_adamw_kernel_0(float *, float *, float *, float *, float, float, float);
extern "C" void ptrain_adamw_kernel_1(float *, float *, float *, float *, float *, float, float, float);

namespace {

using ptrain::bench::bestMs;
using ptrain::bench::randomFloats;

constexpr int64_t kNumel = int64_t(1) << 22;
constexpr float kBeta1 = 0.9f, kBeta2 = 0.95f, kEps = 1e-8f, kDecay = 0.1f, kLr = 1e-3f;

bool update(bool clipped, int reps) {
  std::vector<float> g = randomFloats(kNumel, 21), p1 = randomFloats(kNumel, 22), m1 = randomFloats(kNumel, 23),
                     v1 = randomFloats(kNumel, 24), scaled(kNumel), src(kNumel, 1.0f), dst(kNumel);
  for (int64_t i = 0; i < kNumel; ++i)
    g[i] *= 1e-2f, p1[i] *= 0.02f, m1[i] *= 1e-3f, v1[i] = 1e-6f * std::fabs(v1[i]);
  std::vector<float> p2 = p1, m2 = m1, v2 = v1;
  float scale = 0.37f;
  const int64_t dims[1] = {kNumel};
  int64_t t = 10;
  bool ok = true;
  auto runtime = [&] {
    const float *grad = g.data();
    if (clipped) {
      ok &= ptrain_binary_f32(PTRAIN_BINARY_MUL, g.data(), 1, dims, &scale, 0, nullptr, 1, dims, scaled.data()) ==
            PTRAIN_OK;
      grad = scaled.data();
    }
    ok &= ptrain_adamw_step_f32(p1.data(), grad, m1.data(), v1.data(), kNumel, t, kLr, kBeta1, kBeta2, kEps,
                                kDecay) == PTRAIN_OK;
  };
  auto generated = [&] {
    float c[3];
    ok &= ptrain_adamw_coefficients_f32(t, kLr, kBeta1, kBeta2, kDecay, c) == PTRAIN_OK;
    if (clipped)
      ptrain_adamw_kernel_1(p2.data(), g.data(), m2.data(), v2.data(), &scale, c[0], c[1], c[2]);
    else
      ptrain_adamw_kernel_0(p2.data(), g.data(), m2.data(), v2.data(), c[0], c[1], c[2]);
  };
  auto copy = [&] { std::memcpy(dst.data(), src.data(), kNumel * sizeof(float)); };
  for (int c = 0; c < 3; ++c, ++t) {
    runtime();
    generated();
  }
  const bool same = ok && std::memcmp(p1.data(), p2.data(), kNumel * 4) == 0 &&
                    std::memcmp(m1.data(), m2.data(), kNumel * 4) == 0 &&
                    std::memcmp(v1.data(), v2.data(), kNumel * 4) == 0;
  double r = 1e30, k = 1e30, m = 1e30;
  for (int round = 0; round < 3; ++round) { // interleaved
    m = std::min(m, bestMs(reps, copy));
    r = std::min(r, bestMs(reps, runtime));
    k = std::min(k, bestMs(reps, generated));
  }
  const double moved = kNumel * 28.0, copied = kNumel * 8.0;
  const double memcpyGBs = copied / m / 1e6, runtimeGBs = moved / r / 1e6, kernelGBs = moved / k / 1e6;
  std::printf("| %s | %.2f | %.3f | %.2f (%.2fx) | %.3f | %.2f (%.2fx) | %.2f | %s |\n",
              clipped ? "clip scale + AdamW" : "AdamW", memcpyGBs, r, runtimeGBs, runtimeGBs / memcpyGBs, k,
              kernelGBs, kernelGBs / memcpyGBs, r / k, same ? "yes" : "NO");
  return same;
}

} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  std::printf("2^22 elements, 28 bytes each (p, g, m, v read; p, m, v written)\n\n");
  std::printf("| update | memcpy GB/s | runtime ms | GB/s (x memcpy) | generated ms | GB/s (x memcpy) | runtime / "
              "generated | same bits |\n|---|---|---|---|---|---|---|---|\n");
  bool same = update(false, reps);
  same &= update(true, reps);
  return same ? 0 : 1;
}
