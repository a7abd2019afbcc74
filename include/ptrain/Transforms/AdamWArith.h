//===- AdamWArith.h - The runtime's AdamW update as scf + vector --*- C++ -*-===//
//
// The AdamW kernel of one parameter tensor or ZeRO-1 bucket (issue 26,
// docs/GeneratedKernels.md, "AdamW over a bucket"): the element loop of
// ptrain_adamw_step_f32 (lib/Runtime/cpu/Optimizer.cpp) written op for op with
// the size, the betas and epsilon constants, in place on p, m and v:
//   g = grad[i]                      (times scale[0] where the clipping's
//                                     ptrain.binary mul is folded in)
//   m = b1 m + (1 - b1) g
//   v = b2 v + ((1 - b2) g) g
//   p = p decay - (step_size m) / (sqrt(v) inv_sqrt_bc2 + eps)
// in fp32, in vectors of kAdamWKernelLanes lanes, the last numel % lanes
// elements one at a time. decay, step_size and inv_sqrt_bc2 depend on the step
// and the learning rate: the caller passes what ptrain_adamw_coefficients_f32
// computes (the runtime's own definition, with its fp64 pow), so the kernel
// holds no second copy of the bias correction.
// AdamW: Loshchilov, Hutter, "Decoupled Weight Decay Regularization", ICLR
// 2019, Algorithm 2, in torch.optim.AdamW's parameterization; the clip scale:
// global-norm clipping (Pascanu et al., ICML 2013, sec. 3.2; Megatron-LM's
// clip_grad_norm_fp32). Every step is a correctly rounded IEEE 754 operation
// (sqrt included) with no `contract` or `fast` flag: the same bits as the
// runtime's loop (built with -ffp-contract=off) on every target CPU.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_ADAMWARITH_H
#define PTRAIN_TRANSFORMS_ADAMWARITH_H

#include "ptrain/Analysis/FoldedClipScale.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::ptrain {

class AdamWOp;

/// The lanes of the generated AdamW kernel's vectors (512 bits of f32; LLVM splits them on narrower targets).
inline constexpr int64_t kAdamWKernelLanes = 16;

/// What a generated AdamW kernel is specialized for.
struct AdamWKernelShape {
  int64_t numel = 0;                         ///< f32 elements of the parameter (or bucket shard)
  double beta1 = 0, beta2 = 0, epsilon = 0;  ///< the op's attributes (rounded to f32 as the runtime's arguments)
  bool clipScale = false;                    ///< the gradient is grad * scale[0], the clipping's mul folded in

  /// Equal for updates that share a kernel.
  std::string signature() const;
};

/// The kernel shape of `op`, or nullopt when the op is none: f32 operands of static shape with at least one
/// element (the op's verifier ensures the types match).
std::optional<AdamWKernelShape> adamwKernelShapeOf(AdamWOp op);

/// Builds `func.func @name(p, grad, m, v: memref<numel x f32>[, scale: memref<1xf32>], decay: f32,
/// step_size: f32, inv_sqrt_bc2: f32)` at `b`'s insertion point: the update of the file comment, in place on
/// p, m and v.
func::FuncOp buildAdamWKernel(OpBuilder &b, Location loc, StringRef name, const AdamWKernelShape &shape);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_ADAMWARITH_H
