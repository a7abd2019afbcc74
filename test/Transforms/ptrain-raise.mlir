// RUN: ptrain-opt %s --split-input-file --ptrain-raise | FileCheck %s

// The structure --ptrain-shard-tp reads, marked on a one-layer forward (errors: ptrain-raise-invalid.mlir;
// real exports: test/Integration/ptrain-raise.mlir, ptrain-raise-llama.mlir).

// A GPT block with a fused Q|K|V projection (weights through ptrain.transpose, as torch's Linear exports them),
// a scaled softmax, a GELU MLP and a tied LM head: each linear gets its layer and role, the softmax the head
// geometry read from the reshapes (2 heads of 4), the function the number of layers; the LM head is "layer"
// 1, after the last block.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: attributes {ptrain.layers = 1 : i64}
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x4x8xf32>, tensor<8x24xf32>
// CHECK: ptrain.softmax {{.*}} {axis = -1 : i64, ptrain.attention = {head_dim = 4 : i64, heads = 2 : i64, kv_heads = 2 : i64, layer = 0 : i64}}
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4x8xf32>, tensor<8x16xf32>
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x4x16xf32>, tensor<16x8xf32>
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 1 : i64, role = "lm_head"}} : tensor<2x4x8xf32>, tensor<8x16xf32>
// The attention's inner matmuls (scores, context) are not linears.
// CHECK-NOT: ptrain.linear
ptrain.state @wte key "wte.weight" kind parameter : tensor<16x8xf32>
ptrain.state @qkv key "blocks.0.attn.qkv.weight" kind parameter : tensor<24x8xf32>
ptrain.state @proj key "blocks.0.attn.proj.weight" kind parameter : tensor<8x8xf32>
ptrain.state @fc key "blocks.0.mlp.fc.weight" kind parameter : tensor<16x8xf32>
ptrain.state @fc_proj key "blocks.0.mlp.proj.weight" kind parameter : tensor<8x16xf32>
func.func @forward(%tokens: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %scale = arith.constant dense<0.5> : tensor<f32>
  %wte = ptrain.state_read @wte : tensor<16x8xf32>
  %x = ptrain.embedding %wte, %tokens : tensor<16x8xf32>, tensor<2x4xi64>
  %wqkv = ptrain.state_read @qkv : tensor<24x8xf32>
  %wqkv_t = ptrain.transpose %wqkv {perm = array<i64: 1, 0>} : tensor<24x8xf32> -> tensor<8x24xf32>
  %qkv = ptrain.matmul %x, %wqkv_t : tensor<2x4x8xf32>, tensor<8x24xf32>
  %q, %k, %v = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 8, 8, 8>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %q4 = ptrain.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %qh = ptrain.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %k4 = ptrain.reshape %k : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %kt = ptrain.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %v4 = ptrain.reshape %v : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %vh = ptrain.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %s = ptrain.matmul %qh, %kt : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %ss = ptrain.binary mul %s, %scale : tensor<2x2x4x4xf32>, tensor<f32>
  %p = ptrain.softmax %ss {axis = -1 : i64} : tensor<2x2x4x4xf32>
  %c = ptrain.matmul %p, %vh : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %ct = ptrain.transpose %c {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %cm = ptrain.reshape %ct : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %wo = ptrain.state_read @proj : tensor<8x8xf32>
  %wo_t = ptrain.transpose %wo {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
  %o = ptrain.matmul %cm, %wo_t : tensor<2x4x8xf32>, tensor<8x8xf32>
  %x1 = ptrain.binary add %x, %o : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %w1 = ptrain.state_read @fc : tensor<16x8xf32>
  %w1_t = ptrain.transpose %w1 {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %u = ptrain.matmul %x1, %w1_t : tensor<2x4x8xf32>, tensor<8x16xf32>
  %g = ptrain.gelu %u : tensor<2x4x16xf32>
  %w2 = ptrain.state_read @fc_proj : tensor<8x16xf32>
  %w2_t = ptrain.transpose %w2 {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %d = ptrain.matmul %g, %w2_t : tensor<2x4x16xf32>, tensor<16x8xf32>
  %x2 = ptrain.binary add %x1, %d : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %wt = ptrain.transpose %wte {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %x2, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}

// -----

// Separate Q, K and V projections of one input (BERT, LLaMA) with weights read directly, no MLP and no LM
// head: the roles q, k, v and attn_out.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: attributes {ptrain.layers = 1 : i64}
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "q"}}
// CHECK-NEXT: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "k"}}
// CHECK-NEXT: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "v"}}
// CHECK: ptrain.softmax {{.*}} {axis = -1 : i64, ptrain.attention = {head_dim = 4 : i64, heads = 2 : i64, kv_heads = 2 : i64, layer = 0 : i64}}
// CHECK: ptrain.matmul {{.*}} {ptrain.linear = {layer = 0 : i64, role = "attn_out"}}
// CHECK-NOT: ptrain.linear
ptrain.state @wq key "blocks.0.attn.q.weight" kind parameter : tensor<8x8xf32>
ptrain.state @wk key "blocks.0.attn.k.weight" kind parameter : tensor<8x8xf32>
ptrain.state @wv key "blocks.0.attn.v.weight" kind parameter : tensor<8x8xf32>
ptrain.state @wo key "blocks.0.attn.o.weight" kind parameter : tensor<8x8xf32>
func.func @forward(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %wq = ptrain.state_read @wq : tensor<8x8xf32>
  %wk = ptrain.state_read @wk : tensor<8x8xf32>
  %wv = ptrain.state_read @wv : tensor<8x8xf32>
  %q = ptrain.matmul %x, %wq : tensor<2x4x8xf32>, tensor<8x8xf32>
  %k = ptrain.matmul %x, %wk : tensor<2x4x8xf32>, tensor<8x8xf32>
  %v = ptrain.matmul %x, %wv : tensor<2x4x8xf32>, tensor<8x8xf32>
  %q4 = ptrain.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %qh = ptrain.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %k4 = ptrain.reshape %k : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %kt = ptrain.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %v4 = ptrain.reshape %v : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %vh = ptrain.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %s = ptrain.matmul %qh, %kt : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %p = ptrain.softmax %s {axis = -1 : i64} : tensor<2x2x4x4xf32>
  %c = ptrain.matmul %p, %vh : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %ct = ptrain.transpose %c {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %cm = ptrain.reshape %ct : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %wo = ptrain.state_read @wo : tensor<8x8xf32>
  %o = ptrain.matmul %cm, %wo : tensor<2x4x8xf32>, tensor<8x8xf32>
  %y = ptrain.binary add %x, %o : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
