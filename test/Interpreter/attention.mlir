// A one-layer attention block written by hand (embedding, layer_norm, matmul, split, reshape, transpose,
// causal-masked softmax, gelu erf and tanh, tied LM head, cross_entropy), its five parameters read as EXTERNAL
// data (Inputs/attention.onnx + attention.onnx.data), compared with the numpy reference of
// Inputs/make_inputs.py, which computes the same graph in float32 with one rounding per op.
// RUN: ptrain-interpret %s --weights %S/Inputs/attention.onnx --input %S/Inputs/attention_ids.pb \
// RUN:   --input %S/Inputs/attention_labels.pb --expect %S/Inputs/attention_logits.pb \
// RUN:   --expect %S/Inputs/attention_loss.pb --atol 1e-5 --print-summary | FileCheck %s
// CHECK: @forward: 2 result(s)
// CHECK-NEXT: result 0: tensor<1x4x8xf32> max|x| = 3.14{{[0-9]+}}e+00
// CHECK-NEXT: max|x - expected| = {{.*}}: ok
// CHECK-NEXT: result 1: tensor<f32> max|x| = 3.05{{[0-9]+}}e+00
// CHECK-NEXT: max|x - expected| = {{.*}}: ok
// CHECK: states loaded from {{.*}}attention.onnx
// CHECK-NEXT: 'wte.weight' tensor<8x8xf32>
// CHECK-NEXT: 'ln.weight' tensor<8xf32>
// CHECK-NEXT: 'ln.bias' tensor<8xf32>
// CHECK-NEXT: 'attn.qkv.weight' tensor<8x24xf32>
// CHECK-NEXT: 'attn.qkv.bias' tensor<24xf32>

// A label outside [0, 8) is an error naming cross_entropy and the label.
// RUN: not ptrain-interpret %s --weights %S/Inputs/attention.onnx --input %S/Inputs/attention_ids.pb \
// RUN:   --input %S/Inputs/attention_bad_labels.pb 2>&1 | FileCheck %s --check-prefix=LABEL
// LABEL: error: {{.*}}attention.mlir:{{[0-9]+}}:{{[0-9]+}}: 'ptrain.cross_entropy': label 8 at flat position 2 is out of range [0, 8)

// An argument of the wrong type (the logits file given as ids) is an error naming both types.
// RUN: not ptrain-interpret %s --weights %S/Inputs/attention.onnx --input %S/Inputs/attention_logits.pb \
// RUN:   --input %S/Inputs/attention_labels.pb 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: argument 0 of @forward is tensor<1x4xi64>, got tensor<1x4x8xf32>

module {
  ptrain.state @wte key "wte.weight" kind parameter : tensor<8x8xf32>
  ptrain.state @ln_g key "ln.weight" kind parameter : tensor<8xf32>
  ptrain.state @ln_b key "ln.bias" kind parameter : tensor<8xf32>
  ptrain.state @wqkv key "attn.qkv.weight" kind parameter : tensor<8x24xf32>
  ptrain.state @bqkv key "attn.qkv.bias" kind parameter : tensor<24xf32>
  func.func @forward(%ids: tensor<1x4xi64>, %labels: tensor<1x4xi64>) -> (tensor<1x4x8xf32>, tensor<f32>) {
    %wte = ptrain.state_read @wte : tensor<8x8xf32>
    %x = ptrain.embedding %wte, %ids : tensor<8x8xf32>, tensor<1x4xi64>
    %g = ptrain.state_read @ln_g : tensor<8xf32>
    %b = ptrain.state_read @ln_b : tensor<8xf32>
    %h = ptrain.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>
    %wqkv = ptrain.state_read @wqkv : tensor<8x24xf32>
    %bqkv = ptrain.state_read @bqkv : tensor<24xf32>
    %qkv0 = ptrain.matmul %h, %wqkv : tensor<1x4x8xf32>, tensor<8x24xf32>
    %qkv = ptrain.binary add %qkv0, %bqkv : tensor<1x4x24xf32>, tensor<24xf32>
    %q, %k, %v = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 8, 8, 8>} : tensor<1x4x24xf32>
        -> tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
    %q4 = ptrain.reshape %q : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
    %k4 = ptrain.reshape %k : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
    %v4 = ptrain.reshape %v : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
    %qt = ptrain.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
    %kt = ptrain.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
    %vt = ptrain.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
    %s0 = ptrain.matmul %qt, %kt : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
    %scale = arith.constant dense<0.5> : tensor<f32>
    %s1 = ptrain.binary mul %s0, %scale : tensor<1x2x4x4xf32>, tensor<f32>
    %mask = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000],
                                  [0.0, 0.0, 0xFF800000, 0xFF800000],
                                  [0.0, 0.0, 0.0, 0xFF800000],
                                  [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
    %s2 = ptrain.binary add %s1, %mask : tensor<1x2x4x4xf32>, tensor<4x4xf32>
    %p = ptrain.softmax %s2 {axis = -1 : i64} : tensor<1x2x4x4xf32>
    %o = ptrain.matmul %p, %vt : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
    %ot = ptrain.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x4xf32> -> tensor<1x4x2x4xf32>
    %o3 = ptrain.reshape %ot : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
    %r = ptrain.binary add %x, %o3 : tensor<1x4x8xf32>, tensor<1x4x8xf32>
    %m0 = ptrain.gelu %r {approximate = #ptrain<gelu_approximation none>} : tensor<1x4x8xf32>
    %m1 = ptrain.gelu %m0 {approximate = #ptrain<gelu_approximation tanh>} : tensor<1x4x8xf32>
    %wte2 = ptrain.state_read @wte : tensor<8x8xf32>
    %head = ptrain.transpose %wte2 {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %logits = ptrain.matmul %m1, %head : tensor<1x4x8xf32>, tensor<8x8xf32>
    %loss = ptrain.cross_entropy %logits, %labels : tensor<1x4x8xf32>, tensor<1x4xi64>
    return %logits, %loss : tensor<1x4x8xf32>, tensor<f32>
  }
}
