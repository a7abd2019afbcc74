//===- MixedPrecisionKernels.h - 16-bit kernels of the interpreter -*- C++ -*-===//
//
// The reference kernels of mixed precision (docs/MixedPrecision.md), defined
// bit for bit as the runtime's: a compiled step and the interpreter give the
// same bits. Reached from `ptrain.matmul {accumulate = f32}` (--precision bf16 or fp16).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_MIXEDPRECISIONKERNELS_H
#define PTRAIN_INTERPRETER_MIXEDPRECISIONKERNELS_H

#include "ptrain/Interpreter/Tensor.h"

namespace mlir::ptrain::interp {

/// bf16 [..., n, k] x bf16 [..., k, m] -> f32 [broadcast batch..., n, m]: each element one fp32 accumulator
/// that takes the products in pairs as AVX512-BF16's VDPBF16PS does (docs/Runtime.md, "bf16 GEMM"), computed
/// by the runtime's ptrain_gemm_bf16 (lib/Runtime/cpu/GemmBf16.cpp, linked from ptrain_codecs); or f16 x f16 ->
/// f32: each element one fp32 accumulator taking the exact products in order of k (docs/MixedPrecision.md,
/// "fp16"), the runtime's ptrain_gemm_f16 (lib/Runtime/cpu/GemmF16.cpp). Errors: operands that are not both bf16
/// or both f16, ranks below 2, contracted dimensions that differ, batch dimensions that do not broadcast.
llvm::Expected<Tensor> evalMatmulHalf(const Tensor &lhs, const Tensor &rhs);

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_MIXEDPRECISIONKERNELS_H
