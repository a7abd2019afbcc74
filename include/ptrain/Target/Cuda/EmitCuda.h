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
#include "llvm/ADT/SmallVector.h"

namespace mlir::ptrain {

/// Writes the CUDA translation unit of `module` to `os`. Fails, with an error
/// naming the op and its location and writing nothing, on an op the CUDA
/// target does not support (communication, codecs, pipelines), a dynamic
/// shape or an element type other than f32 and i64.
LogicalResult emitCuda(ModuleOp module, raw_ostream &os);

/// The device memory of a --emit-cuda step's states in bytes (docs/CodegenCuda.md, "Memory plan"), as the
/// emitter lays it out: `perStage`, each pipeline stage's d_states in stage order (kStage<s>StateBytes: a rank
/// holds its stage's states only; empty without ptrain.stage functions), and `module`, every state's
/// (kStateBytes). Each block is at least one 256-byte unit, cudaMalloc's alignment.
struct CudaStateBytes {
  SmallVector<int64_t> perStage;
  int64_t module = 0;
};
CudaStateBytes getCudaStateBytes(ModuleOp module);

/// Registers `--emit-cuda` with mlir-translate.
void registerEmitCudaTranslation();

} // namespace mlir::ptrain

#endif // PTRAIN_TARGET_CUDA_EMITCUDA_H
