// RUN: not ptrain-opt %s --ptrain-outline-codecs --ptrain-outline-codecs 2>&1 | FileCheck %s

// The pass runs once: a second run finds its kernel's name taken in @ptrain_kernels and names the op.
// CHECK: error: --ptrain-outline-codecs: @ptrain_kernels already has @ptrain_codec_kernel_0; the pass runs once
func.func @twice(%g: tensor<2048xf32>) {
  %c:2 = ptrain.compress %g {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 32>}
      : tensor<2048xf32> -> (tensor<2048xi8>, tensor<64xf32>)
  return
}
