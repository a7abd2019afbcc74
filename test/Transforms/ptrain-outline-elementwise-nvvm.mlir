// RUN: ptrain-opt %s --ptrain-outline-elementwise --mlir-print-local-scope | awk '/module @ptrain_kernels/{f=1} f' | sed '$d' > %t.mlir
// RUN: mlir-opt %t.mlir --convert-linalg-to-parallel-loops --gpu-map-parallel-loops --convert-parallel-loops-to-gpu --gpu-kernel-outlining --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=isa" | FileCheck %s --check-prefixes=PTX,SM80
// RUN: mlir-opt %t.mlir --convert-linalg-to-parallel-loops --gpu-map-parallel-loops --convert-parallel-loops-to-gpu --gpu-kernel-outlining --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" | FileCheck %s --check-prefixes=PTX,SM90

// The CUDA route of issue 26, checked up to PTX (no GPU, no ptxas needed): the kernel module the pass writes
// (bias + GELU) goes through upstream MLIR's gpu and NVVM lowering (Debian's mlir-opt 22: linalg to parallel
// loops, mapped to blocks and threads, outlined into a gpu.module, gpu-lower-to-nvvm-pipeline) to PTX for sm_80
// and sm_90. The fp64 GELU keeps its rounding: every multiply and add is `.rn` (round to nearest, which ptxas
// may not contract into an FMA), one correctly rounded division, no fma: the runtime's operations, so the same
// bits as on the CPU. The CUDA step's own in-process route (one element per thread, KernelPtx.h) is
// test/Target/Cuda/emit-cuda-kernels.mlir (docs/GeneratedKernels.md, "The CUDA route").
// PTX: gpu.binary @ptrain_kernel_0_kernel
// SM80-SAME: .target sm_80
// SM90-SAME: .target sm_90
// PTX-SAME: add.rn.f32
// PTX-SAME: cvt.f64.f32
// PTX-SAME: div.rn.f64
// PTX-SAME: mul.rn.f64
// PTX-SAME: cvt.rn.f32.f64
// PTX-NOT: fma.rn
func.func @bias_gelu(%x: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = ptrain.binary add %x, %b : tensor<4x16xf32>, tensor<16xf32>
  %1 = ptrain.gelu %0 : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
