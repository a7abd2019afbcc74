//===- KernelTarget.h - What a code generator's target provides -*- C++ -*-===//
//
// The op emitters both code generators share (SharedOps.cpp, GemmOps.h) write
// through this interface, in the manner of Triton's TargetInfoBase: the CPU
// target (lib/Target/Cpp: host memory, the runtime's kernels, MPI) and the
// CUDA target (lib/Target/Cuda: device memory, kernels on the step's stream,
// NCCL) each implement it through their function emitter (StepFunction.h,
// the function walk both share), and what only one target has (the AdamW
// table and generated kernels on the CPU, streams and events on CUDA) stays in
// its own op switch as a hook that runs before the shared emitters.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_KERNELTARGET_H
#define PTRAIN_TARGET_COMMON_KERNELTARGET_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <utility>
#include <string>

namespace mlir::ptrain {
class TPSplitOp;
} // namespace mlir::ptrain

namespace mlir::ptrain::target {

/// A kernel both runtimes have (SharedKernels.def): ptrain_<name> on the CPU, ptrain_cuda_<name> on CUDA.
enum class Kernel {
#define PTRAIN_SHARED_KERNEL(name) name,
#include "Common/SharedKernels.def"
};

/// The emission context of one op on one target.
class KernelTarget {
public:
  virtual ~KernelTarget() = default;
  /// The option that runs the code generator ("--emit-cpp", "--emit-cuda"): the prefix of its errors.
  virtual StringRef flag() const = 0;
  /// The pointer variable of `v`'s buffer (host memory on the CPU, device memory on CUDA).
  virtual std::string valuePtr(Value v) const = 0;
  /// One checked call of the target's `kernel` in the current op's block.
  virtual LogicalResult callKernel(Kernel kernel, ArrayRef<std::string> args) = 0;
  /// One checked call of the CPU runtime's ptrain_gemm_strided_f32 (a GEMM over a [B, H] batch reading or writing
  /// the attention's head permutes in place, GemmFusion.h). Only targets whose StorageRules fold head permutes
  /// get such GEMMs; the others keep this default, which fails.
  virtual LogicalResult callStridedGemm(ArrayRef<std::string> args) { return failure(); }
  /// Whether the target writes a batch sum's transposed product (GemmFusion::writesTransposed) through
  /// callTransposedGemm (the CPU runtime's ptrain_gemm_transposed_f32: the unfolded GEMM's bits), rather than by
  /// the GEMM with its operands swapped, (A^T B)^T = B^T A (the default: cuBLAS).
  virtual bool hasTransposedGemm() const { return false; }
  /// One checked call of ptrain_gemm_transposed_f32 (only where hasTransposedGemm).
  virtual LogicalResult callTransposedGemm(ArrayRef<std::string> args) { return failure(); }
  /// The mean and rstd the forward of the layer-norm gradient `op` saved (`float *` expressions), or nullopt when
  /// the gradient recomputes them (BufferLiveness::savedStatsOf; the default).
  virtual std::optional<std::pair<std::string, std::string>> savedLayerNormStats(Operation *op) { return std::nullopt; }
  /// `bytes` of the current op's arena scratch, as a `type *` expression.
  virtual std::string scratchPtr(int64_t bytes, StringRef type) = 0;
  /// A `static const type name[] = {values}` host array in the current op's block; its name, or "nullptr" when
  /// `values` is empty.
  virtual std::string hostArray(ArrayRef<int64_t> values, StringRef name, StringRef type = "int64_t") = 0;
  /// The offsets of `op`'s slice at this rank, declared as an `int64_t name[rank]` host array in the current op's
  /// block (the rank's coordinate on the op's axis times the part's size along its dimension: tpSplitOffsets over
  /// the target's communicators, which it registers); its name. Fails with an error at `op` when the grid has no
  /// such axis.
  virtual FailureOr<std::string> rankOffsetsArray(TPSplitOp op, StringRef name) = 0;
  /// A `// text` comment line in the current op's block.
  virtual void note(StringRef text) = 0;
};

/// Whether `op` is one of the ops emitSharedOp writes: elementwise binary and unary ops, softmax and GELU and
/// their gradients, layer norm and its gradient, embedding and its gradient, transpose, slice, split, concat,
/// pad, sum_to, tp_split (the rank's block of a tensor-parallel split) and fp16's loss scaler (loss_scale,
/// grad_unscale, grad_scaler_update).
bool isSharedOp(Operation *op);

/// The kernel calls of `op` (isSharedOp) on `target`: the same calls with the same arguments on every target,
/// up to the kernels' names; an error at the op for what no target supports (softmax over another axis, i64
/// binary ops other than add of equal shapes, f32 ids, transposes of non-f32 tensors).
LogicalResult emitSharedOp(Operation *op, KernelTarget &target);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_KERNELTARGET_H
