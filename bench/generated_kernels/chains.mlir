// The chains bench/generated_kernels/chain_bench.py times (chain_bench.cpp): ptrain_kernel_0 is the attention
// scores' scale and causal mask of a GPT-2-small-sized batch (8 x 12 heads x 256 x 256), ptrain_kernel_1 the
// bias + residual add after a row-parallel linear (16 x 512 tokens x 768), ptrain_kernel_2 the bias + exact GELU
// of a GPT-2-small MLP's up projection (8 x 512 tokens x 3072). All far larger than the caches. ptrain_kernel_3
// and ptrain_kernel_4 are the scores' scale, mask and softmax at the GPT-2-small size and at the bundled GPT's
// (4 x 4 heads x 64 x 64, 256 KiB: in L2). ptrain_kernel_5 and ptrain_kernel_6 are bias + GELU after the MLP's
// up projection of the bundled GPT (256 tokens x 512) and of 1024 GPT-2-small tokens (x 3072), timed against
// GemmFusion's bias rows (the GEMM starts from the bias, then the runtime's GELU). ptrain_kernel_7 and
// ptrain_kernel_8: the softmax gradient and the scale's gradient, at both sizes of the softmax above.
module {
  func.func @scale_mask(%x: tensor<8x12x256x256xf32>, %mask: tensor<256x256xf32>) -> tensor<8x12x256x256xf32> {
    %scale = arith.constant dense<0.125> : tensor<f32>
    %0 = ptrain.binary mul %x, %scale : tensor<8x12x256x256xf32>, tensor<f32>
    %1 = ptrain.binary add %0, %mask : tensor<8x12x256x256xf32>, tensor<256x256xf32>
    return %1 : tensor<8x12x256x256xf32>
  }
  func.func @bias_residual(%y: tensor<16x512x768xf32>, %b: tensor<768xf32>, %r: tensor<16x512x768xf32>) -> tensor<16x512x768xf32> {
    %0 = ptrain.binary add %b, %y : tensor<768xf32>, tensor<16x512x768xf32>
    %1 = ptrain.binary add %r, %0 : tensor<16x512x768xf32>, tensor<16x512x768xf32>
    return %1 : tensor<16x512x768xf32>
  }
  func.func @bias_gelu(%y: tensor<8x512x3072xf32>, %b: tensor<3072xf32>) -> tensor<8x512x3072xf32> {
    %0 = ptrain.binary add %y, %b : tensor<8x512x3072xf32>, tensor<3072xf32>
    %1 = ptrain.gelu %0 : tensor<8x512x3072xf32>
    return %1 : tensor<8x512x3072xf32>
  }
  func.func @scale_mask_softmax(%x: tensor<8x12x256x256xf32>, %mask: tensor<256x256xf32>) -> tensor<8x12x256x256xf32> {
    %scale = arith.constant dense<0.125> : tensor<f32>
    %0 = ptrain.binary mul %x, %scale : tensor<8x12x256x256xf32>, tensor<f32>
    %1 = ptrain.binary add %0, %mask : tensor<8x12x256x256xf32>, tensor<256x256xf32>
    %2 = ptrain.softmax %1 {axis = -1 : i64} : tensor<8x12x256x256xf32>
    return %2 : tensor<8x12x256x256xf32>
  }
  func.func @scale_mask_softmax_gpt(%x: tensor<4x4x64x64xf32>, %mask: tensor<64x64xf32>) -> tensor<4x4x64x64xf32> {
    %scale = arith.constant dense<0.17677669> : tensor<f32>
    %0 = ptrain.binary mul %x, %scale : tensor<4x4x64x64xf32>, tensor<f32>
    %1 = ptrain.binary add %0, %mask : tensor<4x4x64x64xf32>, tensor<64x64xf32>
    %2 = ptrain.softmax %1 {axis = -1 : i64} : tensor<4x4x64x64xf32>
    return %2 : tensor<4x4x64x64xf32>
  }
  func.func @bias_gelu_gpt(%y: tensor<256x512xf32>, %b: tensor<512xf32>) -> tensor<256x512xf32> {
    %0 = ptrain.binary add %y, %b : tensor<256x512xf32>, tensor<512xf32>
    %1 = ptrain.gelu %0 : tensor<256x512xf32>
    return %1 : tensor<256x512xf32>
  }
  func.func @bias_gelu_1k(%y: tensor<1024x3072xf32>, %b: tensor<3072xf32>) -> tensor<1024x3072xf32> {
    %0 = ptrain.binary add %y, %b : tensor<1024x3072xf32>, tensor<3072xf32>
    %1 = ptrain.gelu %0 : tensor<1024x3072xf32>
    return %1 : tensor<1024x3072xf32>
  }
  func.func @softmax_grad_scale(%dy: tensor<8x12x256x256xf32>, %y: tensor<8x12x256x256xf32>) -> tensor<8x12x256x256xf32> {
    %scale = arith.constant dense<0.125> : tensor<f32>
    %0 = ptrain.softmax_grad %dy, %y {axis = -1 : i64} : tensor<8x12x256x256xf32>
    %1 = ptrain.binary mul %0, %scale : tensor<8x12x256x256xf32>, tensor<f32>
    return %1 : tensor<8x12x256x256xf32>
  }
  func.func @softmax_grad_scale_gpt(%dy: tensor<4x4x64x64xf32>, %y: tensor<4x4x64x64xf32>) -> tensor<4x4x64x64xf32> {
    %scale = arith.constant dense<0.17677669> : tensor<f32>
    %0 = ptrain.softmax_grad %dy, %y {axis = -1 : i64} : tensor<4x4x64x64xf32>
    %1 = ptrain.binary mul %0, %scale : tensor<4x4x64x64xf32>, tensor<f32>
    return %1 : tensor<4x4x64x64xf32>
  }
}
