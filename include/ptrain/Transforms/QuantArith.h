//===- QuantArith.h - The runtime's block quantizer as scf + vector -*- C++ -*-===//
//
// The encoder + error-feedback kernel of one quantization site (issue 26,
// docs/GeneratedKernels.md, "Codec encode + error feedback per site"):
// ptrain_quant_encode_f32 at block granularity (lib/Runtime/cpu/codecs/Quant.h,
// quantEncodeBlocks) written op for op with every size known: per block of B
// elements, in vectors of kQuantKernelLanes lanes,
//   1. x = e + g (stored into e with error feedback), the lanes' min and max by
//      `x < lo ? x : lo`, `hi < x ? x : hi`, and the probe sum of x * 0 (NaN
//      exactly when some x is inf or NaN);
//   2. a non-finite block (issue 24; common/QuantScale.h): scale and zero
//      point NaN (0x7fc00000), its codes 0 and its residual NaN, the runtime's
//      quantNonFiniteBlock; the first element with !(|x| <= FLT_MAX) of the
//      call is returned (not an error: fp16's loss scaler sees the NaN decode
//      and skips the step), and the blocks after it are coded as usual;
//   3. the block's min and max from the lanes (the value is the sequential
//      loop's), a zero taking the sign of the block's first zero (the runtime's
//      quantFirstZeroSign: the loop keeps the first element equal to the min);
//   4. QuantGroup::make: symmetric s = max(|min|, |max|) / (2^(bits-1) - 1),
//      asymmetric s = min(max - min, FLT_MAX) / (2^bits - 1), z = min (the
//      range clamped where it overflows, common/QuantScale.h); then
//      common/QuantScale.h: s and 1 / s are 0 when 1 / s is not finite;
//   5. per element t = (x - z) * (1 / s) clamped to the code range, r = (t +
//      1.5 * 2^23) - 1.5 * 2^23 (round to nearest even), u = r + 2^(bits-1)
//      (symmetric) or r, e = x - (r s + z); the codes packed LSB first, 8 / bits
//      per byte, by lane shuffles.
// Round-to-nearest uniform quantization: the #ptrain.quant codec (Bian et al.,
// MLSys 2024, "The compressors"); error feedback: Seide et al., Interspeech
// 2014 ("1-bit SGD": the quantization error is added to the next input).
// Every step is an IEEE 754 operation, a comparison with a select, or an
// integer operation, with no `contract` flag; the only fast-math flags are
// `nnan nsz` on the min/max folds (finite values there; the zero's sign is
// set after) and `reassoc` on the probe's sum (NaN or not in any order), where
// they cannot change a bit. So the kernel computes the runtime's codes,
// scales, zero points and residuals bit for bit on every target CPU.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_QUANTARITH_H
#define PTRAIN_TRANSFORMS_QUANTARITH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::ptrain {

class CompressOp;

/// The attribute --ptrain-outline-codecs sets on a `ptrain.compress` whose encoder it generated: the kernel,
/// `@ptrain_kernels::@ptrain_codec_kernel_N`. The CPU code generator calls it instead of the runtime's encoder.
inline constexpr llvm::StringLiteral kCodecKernelAttr = "ptrain.codec_kernel";

/// The lanes of the generated quantization kernel's vectors (512 bits of f32; LLVM splits them into two 256-bit
/// or four 128-bit registers on targets without AVX-512).
inline constexpr int64_t kQuantKernelLanes = 16;

/// What a generated quantization kernel is specialized for: numel f32 elements in blocks of `block`.
struct QuantKernelShape {
  int64_t numel = 0;
  int64_t block = 0;
  int32_t bits = 8;
  bool symmetric = true;
  bool feedback = false;

  /// Whether the kernel covers this site: bits 2, 4 or 8, block a multiple of kQuantKernelLanes, numel a
  /// multiple of block (no partial block). Other sites keep the runtime's ptrain_quant_encode_f32.
  bool isSupported() const {
    return (bits == 2 || bits == 4 || bits == 8) && block > 0 && block % kQuantKernelLanes == 0 && numel > 0 &&
           numel % block == 0;
  }
  int64_t numBlocks() const { return numel / block; }
  int64_t packedBytes() const { return numel * bits / 8; }
  /// Equal for sites that share a kernel.
  std::string signature() const {
    return "quant:" + std::to_string(numel) + ":" + std::to_string(block) + ":" + std::to_string(bits) + ":" +
           (symmetric ? "s" : "a") + (feedback ? "e" : "");
  }
};

/// Builds `func.func @name(g: memref<numel x f32>, [e: memref<numel x f32>,] packed: memref<bytes x i8>,
/// scales: memref<blocks x f32>[, zeros: memref<blocks x f32>]) -> i64` (e with error feedback, zeros when
/// asymmetric) at `b`'s insertion point: the five steps of the file comment. It returns -1, or the index of the
/// first non-finite element of g (+ e), whose block it codes as a non-finite block (step 2): not an error.
/// `shape.isSupported()` must hold.
func::FuncOp buildQuantBlockEncoder(OpBuilder &b, Location loc, StringRef name, const QuantKernelShape &shape);

/// The kernel shape of a codec site, or nullopt when `op` is none: an f32 input of static shape, `#ptrain.quant`
/// at block granularity (or per tensor: one block of every element), no parameter operand, the residual as its
/// only state with error feedback, and QuantKernelShape::isSupported.
std::optional<QuantKernelShape> quantKernelShapeOf(CompressOp op);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_QUANTARITH_H
