// RUN: not ptrain-translate --emit-cpp %s 2>&1 | FileCheck %s

// A `ptrain.codec_kernel` mark on a site the generated encoders do not cover (per channel) is the emitter's
// error at the op, not a call with the wrong arguments.
// CHECK: error: --emit-cpp: 'ptrain.codec_kernel' names @ptrain_kernels::@ptrain_codec_kernel_0, but the op is no site of a generated quantization kernel
module {
  func.func @channel(%g: tensor<64x128xf32>) -> tensor<64x128xf32> {
    %c:2 = ptrain.compress %g {codec = #ptrain.quant<bits = 8>, ptrain.codec_kernel = @ptrain_kernels::@ptrain_codec_kernel_0}
        : tensor<64x128xf32> -> (tensor<8192xi8>, tensor<128xf32>)
    %d = ptrain.decompress %c#0, %c#1 {codec = #ptrain.quant<bits = 8>} : (tensor<8192xi8>, tensor<128xf32>) -> tensor<64x128xf32>
    return %d : tensor<64x128xf32>
  }
}
