//===- Bf16Dot.h - VDPBF16PS's arithmetic, exactly, in portable C++ -*- C++ -*-===//
//
// The bf16 GEMM (cpu/GemmBf16.cpp) has two paths that must give the same
// bits: the AVX512-BF16 instruction VDPBF16PS, and this emulation of it on
// every other CPU. Intel's pseudo-code for one fp32 lane (SDM vol. 2,
// VDPBF16PS; https://www.felixcloutier.com/x86/vdpbf16ps):
//
//   // FP32 FMA with daz in, ftz out and RNE rounding. MXCSR neither consulted nor updated.
//   srcdest.fp32[i] += make_fp32(src1.bfloat16[2*i+1]) * make_fp32(t.bfloat[1])
//   srcdest.fp32[i] += make_fp32(src1.bfloat16[2*i+0]) * make_fp32(t.bfloat[0])
//
// so a pair of bf16 products is two fused multiply-adds, the odd element
// first, each rounded once to nearest even; bf16 denormal inputs read as
// zero (DAZ) and a result below 2^-126 becomes a zero of its sign (FTZ).
// Tininess is detected after rounding, as x86 does for SSE/AVX: a sum just
// below 2^-126 that rounds (to 24 bits, unbounded exponent) to 2^-126 stays
// 2^-126, one that rounds below it is flushed. Measured on an AMD EPYC
// (Zen 4): acc = 2^-126, product -0.75 * 2^-150 gives +0; product -2^-151 or
// -2^-200 gives 2^-126; unittests/Runtime/GemmBf16Test.cpp checks these and
// random pairs against the instruction wherever the CPU has it.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_BF16DOT_H
#define PTRAIN_RUNTIME_CPU_BF16DOT_H

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ptrain::runtime {

/// A bf16 value as the instruction reads it: denormals as zeros of their
/// sign (DAZ), everything else unchanged (NaN and inf included).
inline uint16_t bf16Daz(uint16_t b) { return (b & 0x7f80u) == 0 ? static_cast<uint16_t>(b & 0x8000u) : b; }

/// One step of VDPBF16PS on one lane: acc + a * b as one fused multiply-add
/// (round to nearest even), flushed to a signed zero when tiny after
/// rounding. `a` and `b` are bf16 values widened to fp32 (exactly) after
/// bf16Daz; `acc` is a previous step's result or 0 (never a denormal).
inline float bf16DotStep(float acc, float a, float b) {
  const float r = std::fmaf(a, b, acc);
  const float mag = std::fabs(r);
  if (!(mag <= FLT_MIN)) // normal, inf or NaN
    return r;
  if (mag == FLT_MIN) {
    // r = 2^-126 after rounding to the denormal grid; whether the exact sum rounds to 2^-126 with 24 bits and an
    // unbounded exponent is decided 2^32 higher, where that grid is the normal one. A sum this small needs
    // |acc| <= 2^-100 and min(|a|, |b|) <= 2^-50 (otherwise its lowest set bit lies above 2^-126), so the
    // scaling is exact and cannot overflow.
    constexpr float kScale = 0x1p32f;
    const float scaled = std::fabs(a) <= std::fabs(b) ? std::fmaf(a * kScale, b, acc * kScale)
                                                      : std::fmaf(a, b * kScale, acc * kScale);
    if (std::fabs(scaled) >= FLT_MIN * kScale)
      return r;
  }
  return std::copysign(0.0f, r);
}

/// The quiet NaN every NaN result of the bf16 GEMM is written as: the two
/// paths' NaN payloads and signs (x86's default NaN, libm's) may differ.
constexpr uint32_t kCanonicalNanBits = 0x7fc00000u;

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_BF16DOT_H
