// RUN: ptrain-opt %s --ptrain-raise | FileCheck %s
// RUN: ptrain-opt %s --ptrain-raise --ptrain-shard-tp="tp=2" | FileCheck %s --check-prefix=TP

// Keras' MultiHeadAttention as tf2onnx writes its einsums (test/Import/ONNX/Inputs/tf2onnx/gpt-tf2onnx-opset13.onnx):
// the heads of Q, K and V reshaped to 5-D, transposed, and merged with the batch ([B * heads, S, head_dim]); the
// scores restored to [B, heads, S, S] for the softmax, whose probabilities are merged again before the matmul
// with V. Raise follows the probabilities through the reshapes and reads the heads from the Q projection's
// outputs (2 heads of 4, not the merged dimension's 4).
// CHECK-LABEL: func.func @forward(
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "v"}}
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "q"}}
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "k"}}
// CHECK: ptrain.softmax {{.*}} {axis = -1 : i64, ptrain.attention = {head_dim = 4 : i64, heads = 2 : i64, kv_heads = 2 : i64, layer = 0 : i64}}
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "attn_out"}}

// At tp = 2 each rank holds one head: the merged [B * heads] dimension is [B * 1] locally (B = 2 outside the
// sharded heads), and the scores and context are the rank's batched matmuls.
// TP-LABEL: func.func @forward(
// TP: %[[X:.*]] = ptrain.tp_copy %{{.*}} on @grid axis tp : tensor<2x3x8xf32>
// TP: ptrain.matmul %[[X]], %{{.*}} : tensor<2x3x8xf32>, tensor<8x4xf32>
// TP: ptrain.reshape %{{.*}} : tensor<2x1x1x4x3xf32> -> tensor<2x4x3xf32>
// TP: %[[S:.*]] = ptrain.matmul %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<2x4x3xf32>
// TP: ptrain.reshape %[[S]] : tensor<2x3x3xf32> -> tensor<2x1x3x3x1xf32>
// TP: ptrain.softmax %{{.*}} : tensor<2x1x3x3xf32>
// TP: ptrain.reshape %{{.*}} : tensor<2x1x3x1x3xf32> -> tensor<2x3x3xf32>
// TP: ptrain.matmul %{{.*}}, %{{.*}} : tensor<2x3x3xf32>, tensor<2x3x4xf32>
// TP: %[[O:.*]] = ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x3x4xf32>, tensor<4x8xf32>
// TP: ptrain.tp_all_reduce %[[O]] on @grid axis tp : tensor<2x3x8xf32>
ptrain.state @wa key "h0_attn/value/kernel" kind parameter : tensor<8x8xf32>
ptrain.state @wb key "h0_attn/query/kernel" kind parameter : tensor<8x8xf32>
ptrain.state @wc key "h0_attn/key/kernel" kind parameter : tensor<8x8xf32>
ptrain.state @wo key "h0_attn/attention_output/kernel" kind parameter : tensor<8x8xf32>
func.func @forward(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %scale = arith.constant dense<0.5> : tensor<f32>
  %wa = ptrain.state_read @wa : tensor<8x8xf32>
  %wb = ptrain.state_read @wb : tensor<8x8xf32>
  %wc = ptrain.state_read @wc : tensor<8x8xf32>
  %wo = ptrain.state_read @wo : tensor<8x8xf32>
  %a = ptrain.matmul %x, %wa : tensor<2x3x8xf32>, tensor<8x8xf32>
  %a4 = ptrain.reshape %a : tensor<2x3x8xf32> -> tensor<2x3x2x4xf32>
  %b = ptrain.matmul %x, %wb : tensor<2x3x8xf32>, tensor<8x8xf32>
  %b4 = ptrain.reshape %b : tensor<2x3x8xf32> -> tensor<2x3x2x4xf32>
  %c = ptrain.matmul %x, %wc : tensor<2x3x8xf32>, tensor<8x8xf32>
  %c4 = ptrain.reshape %c : tensor<2x3x8xf32> -> tensor<2x3x2x4xf32>
  %a5 = ptrain.reshape %a4 : tensor<2x3x2x4xf32> -> tensor<2x3x1x2x4xf32>
  %c5 = ptrain.reshape %c4 : tensor<2x3x2x4xf32> -> tensor<2x1x3x2x4xf32>
  %b5 = ptrain.reshape %b4 : tensor<2x3x2x4xf32> -> tensor<2x3x2x1x4xf32>
  %at = ptrain.transpose %a5 {perm = array<i64: 0, 3, 2, 4, 1>} : tensor<2x3x1x2x4xf32> -> tensor<2x2x1x4x3xf32>
  %bt = ptrain.transpose %b5 {perm = array<i64: 0, 2, 1, 3, 4>} : tensor<2x3x2x1x4xf32> -> tensor<2x2x3x1x4xf32>
  %ct = ptrain.transpose %c5 {perm = array<i64: 0, 3, 1, 2, 4>} : tensor<2x1x3x2x4xf32> -> tensor<2x2x1x3x4xf32>
  %a3 = ptrain.reshape %at : tensor<2x2x1x4x3xf32> -> tensor<4x4x3xf32>
  %v = ptrain.transpose %a3 {perm = array<i64: 0, 2, 1>} : tensor<4x4x3xf32> -> tensor<4x3x4xf32>
  %c3 = ptrain.reshape %ct : tensor<2x2x1x3x4xf32> -> tensor<4x3x4xf32>
  %k = ptrain.transpose %c3 {perm = array<i64: 0, 2, 1>} : tensor<4x3x4xf32> -> tensor<4x4x3xf32>
  %q = ptrain.reshape %bt : tensor<2x2x3x1x4xf32> -> tensor<4x3x4xf32>
  %s = ptrain.matmul %q, %k : tensor<4x3x4xf32>, tensor<4x4x3xf32>
  %s5 = ptrain.reshape %s : tensor<4x3x3xf32> -> tensor<2x2x3x3x1xf32>
  %s4 = ptrain.reshape %s5 : tensor<2x2x3x3x1xf32> -> tensor<2x2x3x3xf32>
  %ss = ptrain.binary mul %s4, %scale : tensor<2x2x3x3xf32>, tensor<f32>
  %p = ptrain.softmax %ss {axis = -1 : i64} : tensor<2x2x3x3xf32>
  %p5 = ptrain.reshape %p : tensor<2x2x3x3xf32> -> tensor<2x2x3x1x3xf32>
  %p3 = ptrain.reshape %p5 : tensor<2x2x3x1x3xf32> -> tensor<4x3x3xf32>
  %o3 = ptrain.matmul %p3, %v : tensor<4x3x3xf32>, tensor<4x3x4xf32>
  %o5 = ptrain.reshape %o3 : tensor<4x3x4xf32> -> tensor<2x2x3x4x1xf32>
  %o4 = ptrain.reshape %o5 : tensor<2x2x3x4x1xf32> -> tensor<2x2x3x4xf32>
  %ot = ptrain.transpose %o4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x3x4xf32> -> tensor<2x3x2x4xf32>
  %om = ptrain.reshape %ot : tensor<2x3x2x4xf32> -> tensor<2x3x8xf32>
  %out = ptrain.matmul %om, %wo : tensor<2x3x8xf32>, tensor<8x8xf32>
  %res = ptrain.binary add %x, %out : tensor<2x3x8xf32>, tensor<2x3x8xf32>
  return %res : tensor<2x3x8xf32>
}
