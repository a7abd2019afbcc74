// RUN: ptrain-opt %s --ptrain-shard-tp="tp=2" --split-input-file --verify-diagnostics | FileCheck %s

// A parameter read in several places (a tied weight, or equal values that the exporter merged into one
// initializer: TorchScript's constant folding and the dynamo exporter's optimizer both do it to the zero biases
// and unit scales of a fresh model). Where every reader slices it alike it is sliced once; where one reads it
// whole, it stays whole and the tensor-parallel readers take the rank's part with ptrain.tp_split.

// The MLP's up weight also read whole after the layer: the state stays whole, the column-parallel linear
// reads the rank's columns.
// CHECK: ptrain.state @w1 key "w1" kind parameter : tensor<4x8xf32>
// CHECK: ptrain.state @w2 key "w2" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [8, 4]>} : tensor<4x4xf32>
// CHECK-LABEL: func.func @forward
// CHECK: %[[W1:.*]] = ptrain.state_read @w1 : tensor<4x8xf32>
// CHECK: %[[PART:.*]] = ptrain.tp_split %[[W1]] on @grid axis tp dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK: ptrain.matmul %{{.*}}, %[[PART]] {{.*}} : tensor<2x4xf32>, tensor<4x4xf32>
// CHECK: %[[TIED:.*]] = ptrain.state_read @w1 : tensor<4x8xf32>
// CHECK: ptrain.matmul %{{.*}}, %[[TIED]] : tensor<2x4xf32>, tensor<4x8xf32>
ptrain.state @w1 key "w1" kind parameter : tensor<4x8xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<8x4xf32>
// expected-remark@-2 {{--ptrain-shard-tp: parameter 'w1' is read whole elsewhere too (a tied weight, or equal values the exporter merged); it stays replicated and its tensor-parallel readers take the rank's part (ptrain.tp_split)}}
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x8xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<4x8xf32>
  %w2 = ptrain.state_read @w2 : tensor<8x4xf32>
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x8xf32>
  %g = ptrain.gelu %up : tensor<2x8xf32>
  %down = ptrain.matmul %g, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x8xf32>, tensor<8x4xf32>
  %tied = ptrain.state_read @w1 : tensor<4x8xf32>
  %sum = ptrain.matmul %down, %tied : tensor<2x4xf32>, tensor<4x8xf32>
  return %sum : tensor<2x8xf32>
}

// -----

// One bias read by the up projections of two layers (the exporter merged their equal values), through one
// state_read: both slice it alike, so the state is sliced once and each reader gets its own local read.
// CHECK: ptrain.state @b key "b" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [8]>} : tensor<4xf32>
// CHECK-LABEL: func.func @forward
// CHECK-NOT: ptrain.tp_split
// CHECK-COUNT-2: ptrain.state_read @b : tensor<4xf32>
// CHECK-NOT: ptrain.tp_split
ptrain.state @up0 key "up0" kind parameter : tensor<4x8xf32>
ptrain.state @down0 key "down0" kind parameter : tensor<8x4xf32>
ptrain.state @up1 key "up1" kind parameter : tensor<4x8xf32>
ptrain.state @down1 key "down1" kind parameter : tensor<8x4xf32>
ptrain.state @b key "b" kind parameter : tensor<8xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {ptrain.layers = 2 : i64} {
  %b = ptrain.state_read @b : tensor<8xf32>
  %u0 = ptrain.state_read @up0 : tensor<4x8xf32>
  %d0 = ptrain.state_read @down0 : tensor<8x4xf32>
  %a0 = ptrain.matmul %x, %u0 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x8xf32>
  %ab0 = ptrain.binary add %a0, %b : tensor<2x8xf32>, tensor<8xf32>
  %g0 = ptrain.gelu %ab0 : tensor<2x8xf32>
  %y0 = ptrain.matmul %g0, %d0 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x8xf32>, tensor<8x4xf32>
  %u1 = ptrain.state_read @up1 : tensor<4x8xf32>
  %d1 = ptrain.state_read @down1 : tensor<8x4xf32>
  %a1 = ptrain.matmul %y0, %u1 {ptrain.linear = {layer = 1 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x8xf32>
  %ab1 = ptrain.binary add %b, %a1 : tensor<8xf32>, tensor<2x8xf32>
  %g1 = ptrain.gelu %ab1 : tensor<2x8xf32>
  %y1 = ptrain.matmul %g1, %d1 {ptrain.linear = {layer = 1 : i64, role = "mlp_down"}} : tensor<2x8xf32>, tensor<8x4xf32>
  return %y1 : tensor<2x4xf32>
}

// -----

// A bias read by a column-parallel linear in 3 groups (a fused Q|K|V bias: rank r keeps Q, K and V's heads r)
// and read whole by a layer norm: viewed as 3 x 4, the rank's part of the 4, back to 6.
// CHECK: ptrain.state @b key "b" kind parameter : tensor<12xf32>
// CHECK-LABEL: func.func @forward
// CHECK: %[[B:.*]] = ptrain.state_read @b : tensor<12xf32>
// CHECK: %[[V:.*]] = ptrain.reshape %[[B]] : tensor<12xf32> -> tensor<3x4xf32>
// CHECK: %[[P:.*]] = ptrain.tp_split %[[V]] on @grid axis tp dim 1 : tensor<3x4xf32> -> tensor<3x2xf32>
// CHECK: %[[L:.*]] = ptrain.reshape %[[P]] : tensor<3x2xf32> -> tensor<6xf32>
// CHECK: ptrain.binary add %{{.*}}, %[[L]] : tensor<1x2x6xf32>, tensor<6xf32>
// CHECK: ptrain.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {{.*}} : tensor<1x2x12xf32>, tensor<12xf32>, tensor<12xf32>
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
ptrain.state @b key "b" kind parameter : tensor<12xf32>
// expected-remark@-1 {{parameter 'b' is read whole elsewhere too}}
ptrain.state @g key "g" kind parameter : tensor<12xf32>
func.func @forward(%x: tensor<1x2x4xf32>, %y: tensor<1x2x12xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x12xf32>) attributes {ptrain.layers = 1 : i64} {
  %w = ptrain.state_read @wqkv : tensor<4x12xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %b = ptrain.state_read @b : tensor<12xf32>
  %qkv0 = ptrain.matmul %x, %w {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<1x2x4xf32>, tensor<4x12xf32>
  %qkv = ptrain.binary add %qkv0, %b : tensor<1x2x12xf32>, tensor<12xf32>
  %s:3 = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  %q = ptrain.reshape %s#0 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k = ptrain.reshape %s#1 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %s#2 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %scores = ptrain.matmul %qt, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %p = ptrain.softmax %scores {axis = -1 : i64, ptrain.attention = {head_dim = 2 : i64, heads = 2 : i64, kv_heads = 2 : i64, layer = 0 : i64}} : tensor<1x2x2x2xf32>
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  %out = ptrain.matmul %c, %wo {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<1x2x4xf32>, tensor<4x4xf32>
  %gamma = ptrain.state_read @g : tensor<12xf32>
  %b2 = ptrain.state_read @b : tensor<12xf32>
  %n = ptrain.layer_norm %y, %gamma, %b2 {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<1x2x12xf32>, tensor<12xf32>, tensor<12xf32>
  return %out, %n : tensor<1x2x4xf32>, tensor<1x2x12xf32>
}

// -----

// A replicated activation (here computed from an argument; an additive mask expanded to all heads) meets a
// sharded one inside the region: the rank takes its part of it.
// CHECK-LABEL: func.func @forward
// CHECK: %[[FULL:.*]] = ptrain.unary neg %{{.*}} : tensor<2x8xf32>
// CHECK: %[[PART:.*]] = ptrain.tp_split %[[FULL]] on @grid axis tp dim 1 : tensor<2x8xf32> -> tensor<2x4xf32>
// CHECK: ptrain.binary add %{{.*}}, %[[PART]] : tensor<2x4xf32>, tensor<2x4xf32>
ptrain.state @w1 key "w1" kind parameter : tensor<4x8xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<8x4xf32>
func.func @forward(%x: tensor<2x4xf32>, %up0: tensor<2x8xf32>) -> tensor<2x4xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<4x8xf32>
  %w2 = ptrain.state_read @w2 : tensor<8x4xf32>
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x8xf32>
  %g = ptrain.gelu %up : tensor<2x8xf32>
  %full = ptrain.unary neg %up0 : tensor<2x8xf32>
  %act = ptrain.binary add %g, %full : tensor<2x8xf32>, tensor<2x8xf32>
  %down = ptrain.matmul %act, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x8xf32>, tensor<8x4xf32>
  return %down : tensor<2x4xf32>
}
