//===- EmitCuda.h - The CUDA code generator (--emit-cuda) -------*- C++ -*-===//
//
// Translates a training step (keyed state symbols and functions of ptrain
// model, gradient, optimizer and state ops, as --emit-cpp takes them), either
// single-rank or the per-rank steps of --ptrain-lower-to-runtime (pipeline
// sends and receives, data- and tensor-parallel collectives over NCCL, the
// codecs of a compressed plan), into ONE CUDA translation unit per GPU rank
// (.cu, built with nvcc) that keeps every state, constant and intermediate
// tensor in device memory (cudaMalloc once), runs every op through
// libptrain_runtime_cuda's kernels (cuBLAS for matmuls) and keeps the C ABI
// of --emit-cpp: host tokens in, host loss out, ptrain_step_init/save/load
// (docs/CodegenCuda.md, "Multi-rank steps").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_EMITCUDA_H
#define PTRAIN_TARGET_CUDA_EMITCUDA_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::ptrain {

/// Options of --emit-cuda.
struct EmitCudaOptions {
  /// Repeated runs of ops (identical transformer layers) are written once as host functions on device pointers
  /// and called with their own pointers and a row of integers (include/ptrain/Target/Common/BlockOutliner.h);
  /// false writes every op inline (ptrain-translate --emit-cuda-outline=false), computing the same.
  bool outlineBlocks = true;
  /// The constant file: the large constants that are neither splats nor generated (a causal mask, an iota) are
  /// written there (64-byte offsets, as --emit-cpp-constants), and the step reads each at set-up from the file
  /// of this name beside its libstep.so into its range of d_constants. Empty: such a constant is an error.
  std::string constantsFile;
  /// The generated kernels (docs/GeneratedKernels.md, "The CUDA route"; ptrain-translate
  /// --emit-cuda-kernels=sm_80,sm_90): when not empty, --ptrain-outline-elementwise runs first, the kernels
  /// that have a GPU version (KernelPtx.h) are lowered to PTX for each of these architectures and embedded in
  /// the unit, loaded at ptrain_step_init and launched on the step's stream where the CPU step calls them; the
  /// other marked chains keep the runtime's kernels. Empty: every op through the runtime.
  SmallVector<std::string> kernelArchs;
};

/// Writes the CUDA translation unit of `module` to `os` (and options.constantsFile). Fails, with an error naming the op and its location
/// and writing nothing, on an op the CUDA target does not support (docs/CodegenCuda.md lists the ops), a dynamic
/// shape, or an element type other than f32 and i64 (besides the codecs' codes and the i1 masks; collectives take
/// f32 only).
LogicalResult emitCuda(ModuleOp module, raw_ostream &os, const EmitCudaOptions &options = {});

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
