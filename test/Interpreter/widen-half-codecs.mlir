// The error feedback of a codec on 16-bit traffic is exact (docs/Compression.md, "Codecs on 16-bit traffic"): after
// --ptrain-widen-half-codecs, the interpreter's top-k and rand-k on a bf16 input with an f32 residual return
// e' = (g + e) - decode(the bf16 codes sent) bit for bit, the rounding of the kept values to bf16 included (here
// 8 - 0.006 = 7.994 is sent as 8.0: without the fix-up, e' would hold 0 there and the gap would be 0.006). A
// 16-bit codec op left unwidened is an error that names the pass.
// RUN: ptrain-opt %s --ptrain-widen-half-codecs -o %t.mlir
// RUN: ptrain-interpret %t.mlir --weights %S/Inputs/linear.onnx | FileCheck %s --check-prefix=TOPK
// RUN: ptrain-interpret %t.mlir --weights %S/Inputs/linear.onnx --entry randk | FileCheck %s --check-prefix=RANDK
// RUN: not ptrain-interpret %s --weights %S/Inputs/linear.onnx 2>&1 | FileCheck %s --check-prefix=UNWIDENED
// TOPK: result 0: tensor<8xf32> max|x| = 0.000000e+00
// TOPK-NEXT: result 1: tensor<8xf32> max|x| = 1.499200e+00
// RANDK: result 0: tensor<8xf32> max|x| = 0.000000e+00
// UNWIDENED: 'ptrain.compress': the codec kernels take f32 tensors: run --ptrain-widen-half-codecs on a 16-bit plan's codec ops first

module {
  // Result 0: (g + e) - decode(codes) - e', which must be 0; result 1: e'.
  func.func @forward() -> (tensor<8xf32>, tensor<8xf32>) {
    %g = arith.constant dense<[1.0, -3.0, 0.5, 2.0, -0.25, 8.0, 0.125, -1.5]> : tensor<8xbf16>
    %e = arith.constant dense<[0.001, 0.002, -0.003, 0.0004, 0.005, -0.006, 0.007, 0.0008]> : tensor<8xf32>
    %v, %i, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.topk<k = 3>, error_feedback}
        : tensor<8xbf16> state(tensor<8xf32>) -> (tensor<3xbf16>, tensor<3xi32>) state(tensor<8xf32>)
    %d = ptrain.decompress %v, %i {codec = #ptrain.topk<k = 3>} : (tensor<3xbf16>, tensor<3xi32>) -> tensor<8xbf16>
    %gw = ptrain.cast %g : tensor<8xbf16> -> tensor<8xf32>
    %x = ptrain.binary add %gw, %e : tensor<8xf32>, tensor<8xf32>
    %dw = ptrain.cast %d : tensor<8xbf16> -> tensor<8xf32>
    %sent = ptrain.binary sub %x, %dw : tensor<8xf32>, tensor<8xf32>
    %gap = ptrain.binary sub %sent, %e1 : tensor<8xf32>, tensor<8xf32>
    return %gap, %e1 : tensor<8xf32>, tensor<8xf32>
  }
  // The same with rand-k (the sender's and the receiver's counters start equal).
  func.func @randk() -> tensor<8xf32> {
    %g = arith.constant dense<[1.0, -3.0, 0.5, 2.0, -0.25, 8.0, 0.125, -1.5]> : tensor<8xbf16>
    %e = arith.constant dense<[0.001, 0.002, -0.003, 0.0004, 0.005, -0.006, 0.007, 0.0008]> : tensor<8xf32>
    %n = arith.constant dense<3> : tensor<i64>
    %v, %e1, %n1 = ptrain.compress %g state(%e, %n) {codec = #ptrain.randk<k = 6, seed = 11>, error_feedback}
        : tensor<8xbf16> state(tensor<8xf32>, tensor<i64>) -> (tensor<6xbf16>) state(tensor<8xf32>, tensor<i64>)
    %d, %m1 = ptrain.decompress %v state(%n) {codec = #ptrain.randk<k = 6, seed = 11>}
        : (tensor<6xbf16>) state(tensor<i64>) -> tensor<8xbf16> state(tensor<i64>)
    %gw = ptrain.cast %g : tensor<8xbf16> -> tensor<8xf32>
    %x = ptrain.binary add %gw, %e : tensor<8xf32>, tensor<8xf32>
    %dw = ptrain.cast %d : tensor<8xbf16> -> tensor<8xf32>
    %sent = ptrain.binary sub %x, %dw : tensor<8xf32>, tensor<8xf32>
    %gap = ptrain.binary sub %sent, %e1 : tensor<8xf32>, tensor<8xf32>
    return %gap : tensor<8xf32>
  }
}
