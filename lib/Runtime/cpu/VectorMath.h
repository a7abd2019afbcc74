//===- VectorMath.h - exp and erfc as loops the compiler vectorizes -*- C++ -*-===//
//
// libm's erf and exp are calls, one per element, which keep the GELU loops
// scalar (they were a fifth of the bundled GPT's training step). These are
// branch-free fp64 formulas of plain arithmetic and bit operations, inlined
// into the kernels' loops so that GCC and Clang vectorize them at the
// baseline ISA (SSE2: two lanes; no -march flag needed) and in the AVX2 and
// AVX-512 paths of cpu/CpuIsa.h:
//   exp(x), x <= 0: x = k ln2 + r with |r| <= ln2 / 2 (k rounded
//     with the 1.5 * 2^52 trick, whose bits then hold k), e^r by its Taylor
//     series to r^11 (remainder < 3e-14 relative), times 2^k built in the
//     exponent bits;
//   erfc(z), z >= 0: erfc(z) = t P(t) exp(-z^2) with t = 1 / (1 + p z),
//     p = 0.3275911 (the substitution of Abramowitz and Stegun 7.1.26) and P
//     of degree 9 least-squares fitted to erfc(z) exp(z^2) / t on [0, 10] in
//     relative error: max relative error 1.5e-8 on [0, 10]; 0 from z = 10 on
//     (erfc(10) = 2e-45 is an fp32 subnormal's last bit) and for NaN.
// Results are rounded to fp32 by the callers: within a few fp32 ulps of the
// correctly rounded values (unittests/Runtime/GeluTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_VECTORMATH_H
#define PTRAIN_RUNTIME_CPU_VECTORMATH_H

#include <cstdint>
#include <cstring>

// The kernels that use these are compiled once per ISA path (cpu/CpuIsa.h);
// the functions are always inlined, so each path's loop is vectorized for its
// ISA (two, four or eight fp64 lanes).

namespace ptrain::runtime {

/// e^x for x <= 0 (larger x are not checked); below -708 (and -inf) the
/// result is e^-708, 3e-308, which is 0 once rounded to fp32. NaN stays NaN.
__attribute__((always_inline)) inline double expNonPositive(double x) {
  x = x < -708.0 ? -708.0 : x;
  constexpr double kLog2e = 1.4426950408889634074;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShift = 6755399441055744.0; // 1.5 * 2^52
  const double kd = x * kLog2e + kShift;        // k in the low mantissa bits
  const double k = kd - kShift;
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  double p = 1.0 / 39916800.0; // 1/11!
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  int64_t bits;
  std::memcpy(&bits, &kd, sizeof(bits));
  bits = (bits - 0x4338000000000000LL + 1023) << 52; // 2^k
  double scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

/// erfc(z) for z >= 0 (see the file comment), and exp(-z^2) in `gauss`.
__attribute__((always_inline)) inline double erfcNonNegative(double z, double &gauss) {
  const double zc = z < 10.0 ? z : 10.0;
  const double t = 1.0 / (1.0 + 0.3275911 * zc);
  double p = 5.59791176653451628e-02;
  p = p * t - 3.13597849479996638e-01;
  p = p * t + 6.19651051065603919e-01;
  p = p * t - 5.50575537992405328e-01;
  p = p * t + 4.94147276857562268e-01;
  p = p * t - 4.68543083546088118e-02;
  p = p * t + 2.04852184768241519e-01;
  p = p * t + 1.65845837498682758e-01;
  p = p * t + 1.85772194826545611e-01;
  p = p * t + 1.84780018442105093e-01;
  gauss = expNonPositive(-zc * zc);
  return z < 10.0 ? t * p * gauss : 0.0;
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_VECTORMATH_H
