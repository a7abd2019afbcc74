// The quantization sites of codec_bench.py: 2^22 elements (16 MiB of f32, beyond the caches), blocks of 64,
// error feedback: 8-bit symmetric, 4-bit and 2-bit asymmetric (each decoded, so that the step returns f32 only).
// --ptrain-outline-codecs generates ptrain_codec_kernel_0, _1 and _2 in this order.
module {
  func.func @q8(%g: tensor<4194304xf32>, %e: tensor<4194304xf32>) -> (tensor<4194304xf32>, tensor<4194304xf32>) {
    %c:2, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 64>, error_feedback}
        : tensor<4194304xf32> state(tensor<4194304xf32>) -> (tensor<4194304xi8>, tensor<65536xf32>) state(tensor<4194304xf32>)
    %d = ptrain.decompress %c#0, %c#1 {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 64>} : (tensor<4194304xi8>, tensor<65536xf32>) -> tensor<4194304xf32>
    return %d, %e1 : tensor<4194304xf32>, tensor<4194304xf32>
  }
  func.func @q4(%g: tensor<4194304xf32>, %e: tensor<4194304xf32>) -> (tensor<4194304xf32>, tensor<4194304xf32>) {
    %c:3, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>, error_feedback}
        : tensor<4194304xf32> state(tensor<4194304xf32>) -> (tensor<2097152xi8>, tensor<65536xf32>, tensor<65536xf32>) state(tensor<4194304xf32>)
    %d = ptrain.decompress %c#0, %c#1, %c#2 {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>} : (tensor<2097152xi8>, tensor<65536xf32>, tensor<65536xf32>) -> tensor<4194304xf32>
    return %d, %e1 : tensor<4194304xf32>, tensor<4194304xf32>
  }
  func.func @q2(%g: tensor<4194304xf32>, %e: tensor<4194304xf32>) -> (tensor<4194304xf32>, tensor<4194304xf32>) {
    %c:3, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.quant<bits = 2, granularity = block, block_size = 64, symmetric = false>, error_feedback}
        : tensor<4194304xf32> state(tensor<4194304xf32>) -> (tensor<1048576xi8>, tensor<65536xf32>, tensor<65536xf32>) state(tensor<4194304xf32>)
    %d = ptrain.decompress %c#0, %c#1, %c#2 {codec = #ptrain.quant<bits = 2, granularity = block, block_size = 64, symmetric = false>} : (tensor<1048576xi8>, tensor<65536xf32>, tensor<65536xf32>) -> tensor<4194304xf32>
    return %d, %e1 : tensor<4194304xf32>, tensor<4194304xf32>
  }
}
