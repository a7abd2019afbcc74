// RUN: ptrain-opt %s --split-input-file --ptrain-outline-codecs --mlir-print-local-scope | FileCheck %s

// A 4-bit asymmetric block site with error feedback: marked, and its kernel takes g, the residual, the packed
// codes, the scales and the zero points, returns the first non-finite element; the same site again shares it.
// CHECK-LABEL: func.func @block_feedback
// CHECK: ptrain.compress {{.*}}ptrain.codec_kernel = @ptrain_kernels::@ptrain_codec_kernel_0
// CHECK: ptrain.compress {{.*}}ptrain.codec_kernel = @ptrain_kernels::@ptrain_codec_kernel_0
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_codec_kernel_0(%{{.*}}: memref<8192xf32>, %{{.*}}: memref<8192xf32>, %{{.*}}: memref<4096xi8>, %{{.*}}: memref<128xf32>, %{{.*}}: memref<128xf32>) -> i64
// CHECK: vector.load {{.*}} : memref<8192xf32>, vector<16xf32>
// CHECK: vector.reduction <minnumf>
// CHECK: vector.reduction <maxnumf>
// CHECK: vector.shuffle
// CHECK: vector.store {{.*}} : memref<4096xi8>, vector<8xi8>
// CHECK-NOT: func.func @ptrain_codec_kernel_1
func.func @block_feedback(%g: tensor<64x128xf32>, %e: tensor<64x128xf32>, %h: tensor<64x128xf32>) {
  %c:3, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>, error_feedback}
      : tensor<64x128xf32> state(tensor<64x128xf32>) -> (tensor<4096xi8>, tensor<128xf32>, tensor<128xf32>) state(tensor<64x128xf32>)
  %d:3, %e2 = ptrain.compress %h state(%e1) {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>, error_feedback}
      : tensor<64x128xf32> state(tensor<64x128xf32>) -> (tensor<4096xi8>, tensor<128xf32>, tensor<128xf32>) state(tensor<64x128xf32>)
  return
}

// -----

// Symmetric without error feedback, and per tensor (one block of every element): two kernels, no residual or
// zero points.
// CHECK-LABEL: func.func @symmetric_and_tensor
// CHECK: ptrain.compress {{.*}}ptrain.codec_kernel = @ptrain_kernels::@ptrain_codec_kernel_0
// CHECK: ptrain.compress {{.*}}ptrain.codec_kernel = @ptrain_kernels::@ptrain_codec_kernel_1
// CHECK: func.func @ptrain_codec_kernel_0(%{{.*}}: memref<2048xf32>, %{{.*}}: memref<2048xi8>, %{{.*}}: memref<64xf32>) -> i64
// CHECK: func.func @ptrain_codec_kernel_1(%{{.*}}: memref<2048xf32>, %{{.*}}: memref<512xi8>, %{{.*}}: memref<1xf32>) -> i64
func.func @symmetric_and_tensor(%g: tensor<2048xf32>) {
  %c:2 = ptrain.compress %g {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 32>}
      : tensor<2048xf32> -> (tensor<2048xi8>, tensor<64xf32>)
  %d:2 = ptrain.compress %g {codec = #ptrain.quant<bits = 2, granularity = tensor>}
      : tensor<2048xf32> -> (tensor<512xi8>, tensor<1xf32>)
  return
}

// -----

// Sites the kernel does not cover keep the runtime's encoder: per channel, a block that is no multiple of 16, a
// last block that is short, another codec.
// CHECK-LABEL: func.func @not_sites
// CHECK-NOT: ptrain.codec_kernel
// CHECK-NOT: module @ptrain_kernels
func.func @not_sites(%g: tensor<64x128xf32>, %h: tensor<100xf32>) {
  %a:2 = ptrain.compress %g {codec = #ptrain.quant<bits = 8>} : tensor<64x128xf32> -> (tensor<8192xi8>, tensor<128xf32>)
  %b:2 = ptrain.compress %g {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 24>}
      : tensor<64x128xf32> -> (tensor<8192xi8>, tensor<342xf32>)
  %c:2 = ptrain.compress %h {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 32>}
      : tensor<100xf32> -> (tensor<100xi8>, tensor<4xf32>)
  %d = ptrain.compress %g {codec = #ptrain.cast<bf16>} : tensor<64x128xf32> -> (tensor<64x128xbf16>)
  return
}
