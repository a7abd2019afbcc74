//===- EmitCuda.h - The CUDA code generator (--emit-cuda) -------*- C++ -*-===//
//
// Translates a single-rank training step (keyed state symbols and functions of
// ptrain model, gradient, optimizer and state ops, as --emit-cpp takes them)
// into ONE CUDA translation unit (.cu, built with nvcc) that keeps every
// state, constant and intermediate tensor in device memory (cudaMalloc once),
// runs every op on one CUDA stream through libptrain_runtime_cuda's model
// kernels (cuBLAS for matmuls) and keeps the C ABI of --emit-cpp: host
// tokens in, host loss out, ptrain_step_init/save/load (docs/CodegenCuda.md).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_EMITCUDA_H
#define PTRAIN_TARGET_CUDA_EMITCUDA_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::ptrain {

/// Writes the CUDA translation unit of `module` to `os`. Fails, with an error
/// naming the op and its location and writing nothing, on an op the CUDA
/// target does not support (communication, codecs, pipelines), a dynamic
/// shape or an element type other than f32 and i64.
struct EmitCudaOptions {
  /// Repeated runs of ops (identical transformer layers) are written once as host functions on device pointers
  /// and called with their own pointers and a row of integers (include/ptrain/Target/Common/BlockOutliner.h);
  /// false writes every op inline (ptrain-translate --emit-cuda-outline=false), computing the same.
  bool outlineBlocks = true;
};

/// Writes the CUDA translation unit of `module` to `os`. Fails, with an error naming the op and its location
/// and writing nothing, on an op the CUDA target does not map.
LogicalResult emitCuda(ModuleOp module, raw_ostream &os, const EmitCudaOptions &options = {});

/// Registers `--emit-cuda` with mlir-translate.
void registerEmitCudaTranslation();

} // namespace mlir::ptrain

#endif // PTRAIN_TARGET_CUDA_EMITCUDA_H
