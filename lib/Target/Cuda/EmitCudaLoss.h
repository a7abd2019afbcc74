//===- EmitCudaLoss.h - The cross-entropy of --emit-cuda --------*- C++ -*-===//
//
// `ptrain.cross_entropy` / `cross_entropy_grad` onto the CUDA kernels of
// lib/Runtime/cuda/ModelCrossEntropy.cu (docs/CodegenCuda.md): the labels
// cast to int32 into scratch, then ptrain_cuda_cross_entropy_fwd_f32 (the
// plain mean) or, with class weights, an ignore_index or reduction "sum"
// (PTrainCrossEntropy.h), ptrain_cuda_cross_entropy_weighted_fwd_f32 with the
// weights' device pointer (or nullptr), the ignore index and the reduction, as
// the CPU target calls ptrain_cross_entropy_weighted_fwd_f32. The gradient
// recomputes the log-sum-exp (the forward into scratch), then calls the
// matching _bwd_f32 with the upstream gradient's device pointer.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_EMITCUDALOSS_H
#define PTRAIN_TARGET_CUDA_EMITCUDALOSS_H

#include "EmitCudaModelOps.h"

namespace mlir::ptrain::cuda {

/// The runtime calls of a CrossEntropyOp or CrossEntropyGradOp, or an error at it (an ignore_index outside
/// int32: the kernels' labels are int32).
LogicalResult emitCudaCrossEntropy(Operation *op, CudaCallWriter &w);

} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_CUDA_EMITCUDALOSS_H
