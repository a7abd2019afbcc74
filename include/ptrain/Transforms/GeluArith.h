//===- GeluArith.h - The runtime's exact GELU as arith ops ---------*- C++ -*-===//
//
// The body of a generated kernel's GELU and GELU gradient (issue 26,
// docs/GeneratedKernels.md, "Bit for bit"): the runtime's scalar definition
// (lib/Runtime/cpu/Gelu.cpp with the exp and erfc of
// lib/Runtime/cpu/VectorMath.h) written op for op in `arith`, so that a fused
// kernel rounds exactly like ptrain_gelu_fwd_f32 / ptrain_gelu_bwd_f32:
//   GELU(x) = x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2 (Hendrycks, Gimpel 2016,
//   arXiv:1606.08415, sec. 2), in fp64: erfc(z) = t P(t) exp(-z^2) with
//   t = 1 / (1 + 0.3275911 z) (Abramowitz and Stegun 7.1.26's substitution)
//   and P of degree 9 fitted in relative error on [0, 10]; exp by
//   x = k ln2 + r, Taylor to r^11, 2^k built in the exponent bits;
//   dGELU/dx = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi).
// Same constants, same operations in the same order, each a correctly
// rounded IEEE 754 operation (no `contract` or `fast` flags: LLVM may not fuse
// a multiply and an add into an FMA or reassociate), the same fp32 -> fp64
// and fp64 -> fp32 conversions: the same bits on every ISA path.
// unittests/Target/GeneratedKernelsTest.cpp checks it against the runtime on
// random and special values (NaN, infinities, signed zeros, subnormals,
// |x| beyond the erfc cut-off); a change to one side without the other fails
// there.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_GELUARITH_H
#define PTRAIN_TRANSFORMS_GELUARITH_H

#include "mlir/IR/Builders.h"

namespace mlir::ptrain {

/// GELU(x) (exact, erf form) of the f32 scalar `x`: an f32 value, the bits of ptrain_gelu_fwd_f32.
Value buildGeluF32(OpBuilder &b, Location loc, Value x);

/// dy * GELU'(x) of the f32 scalars `dy` (the incoming gradient) and `x` (GELU's input): an f32 value, the
/// bits of ptrain_gelu_bwd_f32.
Value buildGeluGradF32(OpBuilder &b, Location loc, Value dy, Value x);

/// exp(x) of the f64 scalar `x` <= 0 (larger x are outside its range): an f64 value, the bits of the
/// runtime's expNonPositive (cpu/VectorMath.h), shared by GELU's erfc and the softmax rows (SoftmaxArith.h).
Value buildExpNonPositiveF64(OpBuilder &b, Location loc, Value x);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_GELUARITH_H
