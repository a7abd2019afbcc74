//===- EmitCudaTransformerOps.h - Masks and LLaMA-style ops in --emit-cuda -*- C++ -*-===//
//
// The per-op mapping of --emit-cuda for the i1 masks of Hugging Face GPT-2 exports (ptrain.compare,
// ptrain.select) and the LLaMA-style ops (ptrain.rms_norm, ptrain.rotary_embedding) with ptrain.dropout
// (docs/CodegenCuda.md): --emit-cpp's mapping (lib/Target/Cpp/EmitBroadcast.cpp, EmitTransformer.cpp) onto the
// kernels of lib/Runtime/cuda/ModelMask.cu and ModelTransformer.cu, through the CudaCallWriter that
// EmitCuda.cpp's function emitter implements.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_EMITCUDATRANSFORMEROPS_H
#define PTRAIN_TARGET_CUDA_EMITCUDATRANSFORMEROPS_H

#include "EmitCudaModelOps.h"

namespace mlir::ptrain::cuda {

/// Whether `op` is one of the ops emitCudaTransformerOp handles.
bool isCudaTransformerOp(Operation *op);

/// The runtime calls of `op` (isCudaTransformerOp), or an error naming the op and what is not supported.
LogicalResult emitCudaTransformerOp(Operation *op, CudaCallWriter &w);

} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_CUDA_EMITCUDATRANSFORMEROPS_H
