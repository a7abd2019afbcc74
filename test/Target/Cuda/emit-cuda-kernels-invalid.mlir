// RUN: split-file %s %t
// RUN: not ptrain-translate --emit-cuda %t/stale-mark.mlir --emit-cuda-kernels=sm_80,sm_90 -o %t/a.cu 2>&1 | FileCheck %s --check-prefix=STALE
// RUN: not test -e %t/a.cu
// RUN: not ptrain-translate --emit-cuda %t/outlined.mlir --emit-cuda-kernels=sm_80,sm_90 -o %t/b.cu 2>&1 | FileCheck %s --check-prefix=OUTLINED
// RUN: not test -e %t/b.cu

// --emit-cuda-kernels' errors at the module (the architectures' are emit-cuda-kernels.mlir's): nothing written.
// A chain mark that names no kernel of the module (a step edited after --ptrain-outline-elementwise): the chain
// planning both targets share (FusedChains.h) refuses it at the op instead of dropping the op's result.
// STALE: stale-mark.mlir:3:8: error: --emit-cuda: 'ptrain.kernel' names @ptrain_kernels::@gone, which is not a kernel of 3 memrefs for this chain
//--- stale-mark.mlir
func.func @stale_mark(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // A lone op marked as a chain's first.
  %0 = ptrain.binary add %x, %y {ptrain.kernel = @ptrain_kernels::@gone, ptrain.kernel_op = 0 : i64} : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// The generated kernels come from --emit-cuda-kernels itself: a module outlined before is the pass's error.
// OUTLINED: outlined.mlir:1:1: error: --ptrain-outline-elementwise: the module already has @ptrain_kernels; the pass runs once
//--- outlined.mlir
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  module @ptrain_kernels {
  }
}
