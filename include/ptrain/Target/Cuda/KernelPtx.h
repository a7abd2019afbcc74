//===- KernelPtx.h - Generated kernels to PTX for the CUDA step -*- C++ -*-===//
//
// The CUDA route of issue 26's generated kernels (docs/GeneratedKernels.md,
// "The CUDA route"): the elementwise chains --ptrain-outline-elementwise wrote
// into the nested module @ptrain_kernels (one linalg.generic on memrefs per
// kernel) become `gpu.func` kernels, one element per thread, and are lowered
// in-process through upstream MLIR (convert-scf-to-cf, convert-gpu-to-nvvm
// with bare-pointer kernel arguments, gpu-module-to-binary to PTX) for each
// requested architecture. The CUDA step (--emit-cuda-kernels, EmitCuda.h)
// embeds the PTX, loads it at ptrain_step_init through the driver API and
// launches each kernel where the CPU step calls its object-code twin.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_KERNELPTX_H
#define PTRAIN_TARGET_CUDA_KERNELPTX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir::ptrain {

struct KernelPtxOptions {
  /// The architectures, each `sm_<NN>` with NN >= 70 (PTX ISA 8.0 covers sm_70 to sm_90a): one PTX image each.
  SmallVector<std::string> archs = {"sm_80", "sm_90"};
  /// The PTX ISA version of the images, as LLVM's NVPTX feature (`+ptx80`: PTX ISA 8.0, CUDA 12.0's; sm_90 needs
  /// at least 7.8, sm_80 7.0; MLIR's default 6.0 refuses both).
  std::string ptxFeature = "+ptx80";
  /// Threads per block of every launch (one element per thread; the grid is ceil(elements / threads) blocks).
  int64_t threadsPerBlock = 256;
};

/// One generated kernel of the PTX images: its entry name (the kernel's symbol in @ptrain_kernels), its launch
/// over a one-dimensional grid, and its parameters (bare device pointers: the inputs, then the outputs).
struct GpuKernelLaunch {
  std::string name;
  bool rows = false;    ///< a row kernel (a thread per row or row group), not one element per thread
  int64_t elements = 0; ///< the work items, one per thread: the iteration space's elements, or the rows (groups)
  int64_t blocks = 0;   ///< ceil(elements / threads)
  int64_t threads = 0;  ///< per block
  unsigned numInputs = 0;
  unsigned numParams = 0;
};

/// The PTX of one architecture.
struct PtxImage {
  std::string arch;      ///< "sm_80"
  int64_t smVersion = 0; ///< 80
  std::string ptx;       ///< the PTX text, NUL-free
};

/// The CUDA side of the generated kernels: which kernels have a GPU version, and the images.
struct KernelPtx {
  llvm::StringMap<GpuKernelLaunch> kernels;
  SmallVector<PtxImage> images;
};

/// Whether `kernel` (a func.func of @ptrain_kernels) has a GPU version: either one all-parallel linalg.generic
/// on f32 memrefs of static shape (the function's arguments, inputs then outputs) whose input maps read each
/// dimension or the constant 0 (broadcasting) and whose output maps are the identity, then the return (an
/// elementwise chain: one element per thread); or a row kernel (SoftmaxArith.h: a softmax at a chain's end or
/// its gradient at the start, rank >= 2): constants and a perfect nest of scf.for loops over the leading
/// dimensions with constant bounds and no carried values, down to the row's (or row group's) body, f32 memref
/// parameters, no vector op (one row or row group per thread, its columns in the CPU kernel's order). The codec
/// and AdamW kernels are not: the CUDA step computes those ops with the runtime's kernels.
bool hasGpuKernel(Operation *kernel);

/// The first half of lowerKernelsToPtx: a module (`gpu.container_module`) holding one `gpu.module
/// @ptrain_cuda_kernels` with one NVVM target per architecture of `options` and a `gpu.func` of the same name
/// per kernel of `kernels` that hasGpuKernel (the form below), and each one's launch in `launches`. Also what
/// the unit test runs on the CPU, thread by thread (unittests/Target/GpuKernelsTest.cpp).
OwningOpRef<ModuleOp> buildGpuKernels(ModuleOp kernels, const KernelPtxOptions &options,
                                      llvm::StringMap<GpuKernelLaunch> &launches);

/// Lowers every kernel of `kernels` that hasGpuKernel to PTX for each of `options.archs` (`kernels` is not
/// modified). Each becomes a `gpu.func` of the same name whose thread i < elements computes work item i: for
/// an elementwise kernel, element i (the index delinearized over the iteration space, row-major, each input
/// loaded through its map, the linalg body cloned unchanged, the outputs stored); for a row kernel, iteration i
/// of its loops over the leading dimensions (delinearized, the row's body cloned unchanged). So the same arith
/// ops in the same order as the CPU object: no `contract` flag, so the NVPTX back end emits `.rn` operations
/// ptxas never contracts into FMAs. Fails with an
/// error at `kernels` naming the stage (an architecture that is no `sm_<NN>`, NN >= 70; the GPU lowering; the
/// PTX serialization).
FailureOr<KernelPtx> lowerKernelsToPtx(ModuleOp kernels, const KernelPtxOptions &options);

} // namespace mlir::ptrain

#endif // PTRAIN_TARGET_CUDA_KERNELPTX_H
