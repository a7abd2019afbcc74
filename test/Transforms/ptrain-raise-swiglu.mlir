// RUN: ptrain-opt %s --ptrain-raise | FileCheck %s

// SwiGLU written with the sigmoid first, sigmoid(gate) * gate, and the up side first: (x W_up) * silu(x W_gate).
// --ptrain-raise still finds the gate, up and down linears.

// CHECK: {ptrain.linear = {layer = 0 : i64, role = "mlp_gate"}}
// CHECK: {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}}
// CHECK: {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}}
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
ptrain.state @wg key "wg" kind parameter : tensor<4x8xf32>
ptrain.state @wu key "wu" kind parameter : tensor<4x8xf32>
ptrain.state @wd key "wd" kind parameter : tensor<8x4xf32>
func.func @forward(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %w = ptrain.state_read @wqkv : tensor<4x12xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %qkv = ptrain.matmul %x, %w : tensor<1x2x4xf32>, tensor<4x12xf32>
  %s:3 = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  %q = ptrain.reshape %s#0 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k = ptrain.reshape %s#1 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %s#2 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %scores = ptrain.matmul %qt, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<1x2x2x2xf32>
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  %out = ptrain.matmul %c, %wo : tensor<1x2x4xf32>, tensor<4x4xf32>
  %wg = ptrain.state_read @wg : tensor<4x8xf32>
  %wu = ptrain.state_read @wu : tensor<4x8xf32>
  %wd = ptrain.state_read @wd : tensor<8x4xf32>
  %gate = ptrain.matmul %out, %wg : tensor<1x2x4xf32>, tensor<4x8xf32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %neg = ptrain.unary neg %gate : tensor<1x2x8xf32>
  %exp = ptrain.unary exp %neg : tensor<1x2x8xf32>
  %den = ptrain.binary add %one, %exp : tensor<f32>, tensor<1x2x8xf32>
  %sig = ptrain.unary reciprocal %den : tensor<1x2x8xf32>
  %silu = ptrain.binary mul %sig, %gate : tensor<1x2x8xf32>, tensor<1x2x8xf32>
  %up = ptrain.matmul %out, %wu : tensor<1x2x4xf32>, tensor<4x8xf32>
  %glu = ptrain.binary mul %up, %silu : tensor<1x2x8xf32>, tensor<1x2x8xf32>
  %down = ptrain.matmul %glu, %wd : tensor<1x2x8xf32>, tensor<8x4xf32>
  %y = ptrain.binary add %out, %down : tensor<1x2x4xf32>, tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}
