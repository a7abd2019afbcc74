// Input of test/Target/Cpp/codecs_e2e.py (CTest codegen-cpu-codecs): each function encodes and decodes a
// 4 x 64 tensor with one codec through the generated code, so the emitted calls are executed, not just compiled.
module {
  ptrain.state @e key "cast/residual" kind codec_residual : tensor<4x64xf32>
  ptrain.state @n key "randk/counter" kind codec_seed : tensor<i64>

  // Top-k of all 256 values: exact.
  func.func @topk_all(%g: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %v, %i = ptrain.compress %g {codec = #ptrain.topk<k = 256>} : tensor<4x64xf32> -> (tensor<256xf32>, tensor<256xi32>)
    %d = ptrain.decompress %v, %i {codec = #ptrain.topk<k = 256>} : (tensor<256xf32>, tensor<256xi32>) -> tensor<4x64xf32>
    return %d : tensor<4x64xf32>
  }
  // Top-k by ratio 0.25: the 64 largest magnitudes survive.
  func.func @topk_quarter(%g: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %v, %i = ptrain.compress %g {codec = #ptrain.topk<ratio = 0.25>} : tensor<4x64xf32> -> (tensor<64xf32>, tensor<64xi32>)
    %d = ptrain.decompress %v, %i {codec = #ptrain.topk<ratio = 0.25>} : (tensor<64xf32>, tensor<64xi32>) -> tensor<4x64xf32>
    return %d : tensor<4x64xf32>
  }
  // Rand-k of 32 values with the counter state: both sides use (seed 7, counter), the counter advances.
  func.func @randk(%g: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<i64>) {
    %n = ptrain.state_read @n : tensor<i64>
    %v, %n1 = ptrain.compress %g state(%n) {codec = #ptrain.randk<k = 32, seed = 7>}
        : tensor<4x64xf32> state(tensor<i64>) -> (tensor<32xf32>) state(tensor<i64>)
    %d, %n2 = ptrain.decompress %v state(%n) {codec = #ptrain.randk<k = 32, seed = 7>}
        : (tensor<32xf32>) state(tensor<i64>) -> tensor<4x64xf32> state(tensor<i64>)
    ptrain.state_write %n1 to @n : tensor<i64>
    return %d, %n2 : tensor<4x64xf32>, tensor<i64>
  }
  // 8-bit symmetric quantization, one scale per column (channel) of the 4 x 64 view.
  func.func @quant8(%g: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %b, %s = ptrain.compress %g {codec = #ptrain.quant<bits = 8>} : tensor<4x64xf32> -> (tensor<256xi8>, tensor<64xf32>)
    %d = ptrain.decompress %b, %s {codec = #ptrain.quant<bits = 8>} : (tensor<256xi8>, tensor<64xf32>) -> tensor<4x64xf32>
    return %d : tensor<4x64xf32>
  }
  // bf16 cast with error feedback: returns the decoded tensor and the new residual (written to its state).
  func.func @cast_ef(%g: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
    %e = ptrain.state_read @e : tensor<4x64xf32>
    %c, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.cast<bf16>, error_feedback}
        : tensor<4x64xf32> state(tensor<4x64xf32>) -> (tensor<4x64xbf16>) state(tensor<4x64xf32>)
    ptrain.state_write %e1 to @e : tensor<4x64xf32>
    %d = ptrain.decompress %c {codec = #ptrain.cast<bf16>} : (tensor<4x64xbf16>) -> tensor<4x64xf32>
    return %d, %e1 : tensor<4x64xf32>, tensor<4x64xf32>
  }
  // PowerSGD rank 4 on 4 x 64: (4 + 64) 4 >= 4 x 64, the exact path.
  func.func @powersgd_exact(%g: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %c:2 = ptrain.compress %g {codec = #ptrain.powersgd<rank = 4, warm_start = false>}
        : tensor<4x64xf32> -> (tensor<4x4xf32>, tensor<64x4xf32>)
    %d = ptrain.decompress %c#0, %c#1 {codec = #ptrain.powersgd<rank = 4, warm_start = false>}
        : (tensor<4x4xf32>, tensor<64x4xf32>) -> tensor<4x64xf32>
    return %d : tensor<4x64xf32>
  }
}
