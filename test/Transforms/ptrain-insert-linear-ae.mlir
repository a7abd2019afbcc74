// RUN: ptrain-opt %s --ptrain-insert-linear-ae="dim=4" | FileCheck %s
// RUN: ptrain-opt %s --ptrain-insert-linear-ae="dim=4 skip-stages=1" | FileCheck %s --check-prefix=SKIP
// RUN: not ptrain-opt %s --ptrain-insert-linear-ae="dim=0" 2>&1 | FileCheck %s --check-prefix=C3-ZERO
// RUN: not ptrain-opt %s --ptrain-insert-linear-ae="dim=9" 2>&1 | FileCheck %s --check-prefix=C3-WIDE
// RUN: not ptrain-opt %s --ptrain-insert-linear-ae="dim=4 skip-stages=2" 2>&1 | FileCheck %s --check-prefix=C4
// RUN: ptrain-opt %s --ptrain-insert-linear-ae="dim=4" | not ptrain-opt --ptrain-insert-linear-ae="dim=4" 2>&1 | FileCheck %s --check-prefix=C6

// Three stages after --ptrain-split-stages (hidden size H = 8, tied embedding): each boundary c -> c + 1 gets
// an encoder W_e (H x dim) at the end of stage c and a decoder W_d (dim x H) at the start of stage c + 1, new
// parameters with one orthogonal init seed per boundary (W_d = W_e^T at the start), so the pipeline sends the
// 2 x 4 x dim code instead of the 2 x 4 x H activation.
// CHECK-DAG: ptrain.state @ae_encoder_0 key "ae/0->1/encoder" kind parameter {ptrain.init = {kind = "orthogonal", seed = 0 : i64}} : tensor<8x4xf32>
// CHECK-DAG: ptrain.state @ae_decoder_0 key "ae/0->1/decoder" kind parameter {ptrain.init = {kind = "orthogonal_transposed", seed = 0 : i64}} : tensor<4x8xf32>
// CHECK-LABEL: func.func @forward_stage0(
// CHECK-SAME: -> tensor<2x4x4xf32>
// CHECK: %[[X:.*]] = ptrain.embedding
// CHECK-NEXT: %[[WE:.*]] = ptrain.state_read @ae_encoder_0 : tensor<8x4xf32>
// CHECK-NEXT: %[[CODE:.*]] = ptrain.matmul %[[X]], %[[WE]] : tensor<2x4x8xf32>, tensor<8x4xf32>
// CHECK-NEXT: return %[[CODE]] : tensor<2x4x4xf32>
// The next boundary's pair is declared before the stage that encodes with it.
// CHECK: ptrain.state @ae_encoder_1 key "ae/1->2/encoder" kind parameter {ptrain.init = {kind = "orthogonal", seed = 1 : i64}} : tensor<8x4xf32>
// CHECK-NEXT: ptrain.state @ae_decoder_1 key "ae/1->2/decoder" kind parameter {ptrain.init = {kind = "orthogonal_transposed", seed = 1 : i64}} : tensor<4x8xf32>
// CHECK-LABEL: func.func @forward_stage1(
// CHECK-SAME: %[[C:.*]]: tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[WD:.*]] = ptrain.state_read @ae_decoder_0 : tensor<4x8xf32>
// CHECK-NEXT: %[[H:.*]] = ptrain.matmul %[[C]], %[[WD]] : tensor<2x4x4xf32>, tensor<4x8xf32>
// CHECK: ptrain.matmul %[[H]], %{{.*}} : tensor<2x4x8xf32>, tensor<8x8xf32>
// CHECK: ptrain.state_read @ae_encoder_1
// CHECK-LABEL: func.func @forward_stage2(
// CHECK-SAME: tensor<2x4x4xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: ptrain.state_read @ae_decoder_1

// skip-stages=1: the boundary after stage 0 stays exact (MCBench leaves the early layers uncompressed).
// SKIP-NOT: ae/0->1
// SKIP-LABEL: func.func @forward_stage0(
// SKIP-SAME: -> tensor<2x4x8xf32>
// SKIP-NOT: ae/0->1
// SKIP: ptrain.state @ae_encoder_1 key "ae/1->2/encoder"
// SKIP-LABEL: func.func @forward_stage1(
// SKIP-SAME: tensor<2x4x8xf32>) -> tensor<2x4x4xf32>

// (C3) the code is at least 1 and at most H wide; (C4) a boundary must remain; (C6) inserted once.
// C3-ZERO: error: --ptrain-insert-linear-ae: dim must be >= 1, got 0
// C3-WIDE: error: --ptrain-insert-linear-ae: dim 9 exceeds the hidden size 8 of the boundary 0 -> 1 ('tensor<2x4x8xf32>'): the code would be larger than the activation
// C4: error: --ptrain-insert-linear-ae: skip-stages must be in [0, 1] (a boundary must remain), got 2
// C6: error: --ptrain-insert-linear-ae: the module already has a linear autoencoder (state 'ae/0->1/encoder'): insert it once, with one dim for every boundary
// C6-NOT: see current operation

module @pp3 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 3, stages = [@forward_stage0, @forward_stage1, @forward_stage2]>} {
  ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
  ptrain.state @w1 key "blocks.1.w" kind parameter : tensor<8x8xf32>
  func.func @forward_stage0(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %wte = ptrain.state_read @wte : tensor<16x8xf32>
    %x = ptrain.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
    return %x : tensor<2x4x8xf32>
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    %w = ptrain.state_read @w1 : tensor<8x8xf32>
    %y = ptrain.matmul %h, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    return %y : tensor<2x4x8xf32>
  }
  func.func @forward_stage2(%h: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> attributes {ptrain.stage = #ptrain.stage<2>} {
    %wte = ptrain.state_read @wte : tensor<16x8xf32>
    %wt = ptrain.transpose %wte {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
    %logits = ptrain.matmul %h, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
    return %logits : tensor<2x4x16xf32>
  }
}
