// RUN: ptrain-opt %s --split-input-file --ptrain-split-stages="pp=2" | FileCheck %s

// Two layers (a layer is recognized by its attention, a softmax) and a tied embedding: the cut is the layer
// boundary where only the residual stream crosses; the embedding table is not sent but read again by the last
// stage for the LM head, and @forward stays as the reference.
// CHECK-LABEL: module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>}
// CHECK: func.func @forward(
// CHECK-LABEL: func.func @forward_stage0(
// CHECK-SAME: %[[IDS:.*]]: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>}
// CHECK-DAG: %[[WTE:.*]] = ptrain.state_read @wte
// CHECK-DAG: %[[W0:.*]] = ptrain.state_read @w0
// CHECK: %[[X0:.*]] = ptrain.embedding %[[WTE]], %[[IDS]]
// CHECK: %[[S0:.*]] = ptrain.matmul %[[X0]], %[[W0]]
// CHECK: %[[P0:.*]] = ptrain.softmax %[[S0]]
// CHECK: %[[X1:.*]] = ptrain.binary add %[[X0]], %[[P0]]
// CHECK: return %[[X1]] : tensor<2x4x8xf32>
// CHECK-LABEL: func.func @forward_stage1(
// CHECK-SAME: %[[H:.*]]: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> attributes {ptrain.stage = #ptrain.stage<1>}
// CHECK-DAG: %[[WTE1:.*]] = ptrain.state_read @wte
// CHECK-DAG: %[[W1:.*]] = ptrain.state_read @w1
// CHECK-DAG: %[[WT:.*]] = ptrain.transpose %[[WTE1]]
// CHECK: %[[S1:.*]] = ptrain.matmul %[[H]], %[[W1]]
// CHECK: %[[P1:.*]] = ptrain.softmax %[[S1]]
// CHECK: %[[X2:.*]] = ptrain.binary add %[[H]], %[[P1]]
// CHECK: %[[LOGITS:.*]] = ptrain.matmul %[[X2]], %[[WT]]
// CHECK: return %[[LOGITS]] : tensor<2x4x16xf32>
ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
ptrain.state @w0 key "blocks.0.w" kind parameter : tensor<8x8xf32>
ptrain.state @w1 key "blocks.1.w" kind parameter : tensor<8x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %wte = ptrain.state_read @wte : tensor<16x8xf32>
  %x0 = ptrain.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  %w0 = ptrain.state_read @w0 : tensor<8x8xf32>
  %s0 = ptrain.matmul %x0, %w0 : tensor<2x4x8xf32>, tensor<8x8xf32>
  %p0 = ptrain.softmax %s0 {axis = -1 : i64} : tensor<2x4x8xf32>
  %x1 = ptrain.binary add %x0, %p0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %w1 = ptrain.state_read @w1 : tensor<8x8xf32>
  %s1 = ptrain.matmul %x1, %w1 : tensor<2x4x8xf32>, tensor<8x8xf32>
  %p1 = ptrain.softmax %s1 {axis = -1 : i64} : tensor<2x4x8xf32>
  %x2 = ptrain.binary add %x1, %p1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %wt = ptrain.transpose %wte {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %x2, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}

// -----

// Four equal layers: the stages are balanced by FLOPs, not by layer count. A layer is about 1.2 kFLOP
// (2 x 8 x 8 x 8 for its matmul); the LM head alone is 2 x 8 x 8 x 16 = 2 kFLOP, so the last stage gets one
// layer and the head (3.3 kFLOP) and the first three layers (3.5 kFLOP).
// CHECK-LABEL: func.func @forward_stage0(
// CHECK: ptrain.state_read @w0
// CHECK: ptrain.state_read @w1
// CHECK: ptrain.state_read @w2
// CHECK-NOT: ptrain.state_read @w3
// CHECK: return
// CHECK-LABEL: func.func @forward_stage1(
// CHECK-NOT: ptrain.state_read @w{{[012]}}
// CHECK: ptrain.state_read @w3
// CHECK-NOT: ptrain.state_read @w{{[012]}}
// CHECK: return
ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
ptrain.state @w0 key "blocks.0.w" kind parameter : tensor<8x8xf32>
ptrain.state @w1 key "blocks.1.w" kind parameter : tensor<8x8xf32>
ptrain.state @w2 key "blocks.2.w" kind parameter : tensor<8x8xf32>
ptrain.state @w3 key "blocks.3.w" kind parameter : tensor<8x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %wte = ptrain.state_read @wte : tensor<16x8xf32>
  %x0 = ptrain.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  %w0 = ptrain.state_read @w0 : tensor<8x8xf32>
  %s0 = ptrain.matmul %x0, %w0 : tensor<2x4x8xf32>, tensor<8x8xf32>
  %p0 = ptrain.softmax %s0 {axis = -1 : i64} : tensor<2x4x8xf32>
  %x1 = ptrain.binary add %x0, %p0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %w1 = ptrain.state_read @w1 : tensor<8x8xf32>
  %s1 = ptrain.matmul %x1, %w1 : tensor<2x4x8xf32>, tensor<8x8xf32>
  %p1 = ptrain.softmax %s1 {axis = -1 : i64} : tensor<2x4x8xf32>
  %x2 = ptrain.binary add %x1, %p1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %w2 = ptrain.state_read @w2 : tensor<8x8xf32>
  %s2 = ptrain.matmul %x2, %w2 : tensor<2x4x8xf32>, tensor<8x8xf32>
  %p2 = ptrain.softmax %s2 {axis = -1 : i64} : tensor<2x4x8xf32>
  %x3 = ptrain.binary add %x2, %p2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %w3 = ptrain.state_read @w3 : tensor<8x8xf32>
  %s3 = ptrain.matmul %x3, %w3 : tensor<2x4x8xf32>, tensor<8x8xf32>
  %p3 = ptrain.softmax %s3 {axis = -1 : i64} : tensor<2x4x8xf32>
  %x4 = ptrain.binary add %x3, %p3 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %wt = ptrain.transpose %wte {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %x4, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}
