// RUN: ptrain-opt %s --test-ptrain-timing="cluster=%S/Inputs/toy-memory-cluster.json" | FileCheck %s --check-prefix=UNFUSED
// RUN: ptrain-opt %s --ptrain-outline-elementwise --test-ptrain-timing="cluster=%S/Inputs/toy-memory-cluster.json" | FileCheck %s --check-prefix=FUSED

// The timing model prices a chain --ptrain-outline-elementwise marked by the generated kernel's memory traffic
// (docs/GeneratedKernels.md, "The timing model"): its inputs read once and its outputs written once. On the
// memory-bound toy cluster (Inputs/toy-memory-cluster.json: 1 GFLOP/s, 1 GB/s) F is the matmul (1,024 FLOP:
// 1.024 us) and the two elementwise ops over 2 x 4 x 8 f32 (256 B):
//   unfused, one runtime call each: add h + x reads 512 B and writes 256 (0.768 us), mul by a scalar reads
//   260 B and writes 256 (0.516 us): F = 1.024 + 0.768 + 0.516 = 2.308 us;
//   fused: h, x and the scalar read once (516 B), the product written once (256 B): 0.772 us, F = 1.796 us.
// UNFUSED: F0 ranks 0 start 0.000 end 2.308 {{.*}} duration 2.308
// FUSED: F0 ranks 0 start 0.000 end 1.796 {{.*}} duration 1.796
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  ptrain.state @w key "w" kind parameter : tensor<8x8xf32>
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x4x8xf32>
    %s = arith.constant dense<0.5> : tensor<f32>
    %w = ptrain.state_read @w : tensor<8x8xf32>
    %h = ptrain.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %0 = ptrain.binary add %h, %x : tensor<2x4x8xf32>, tensor<2x4x8xf32>
    %1 = ptrain.binary mul %0, %s : tensor<2x4x8xf32>, tensor<f32>
    return %1 : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    %w = ptrain.state_read @w : tensor<8x8xf32>
    %a = ptrain.matmul %dh, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    return
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage1_forward_backward(%h: tensor<2x4x8xf32>, %tokens: tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<1>} {
    %w = ptrain.state_read @w : tensor<8x8xf32>
    %dh = ptrain.matmul %h, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss, %dh : tensor<f32>, tensor<2x4x8xf32>
  }
  func.func @stage1_optimizer_step() attributes {ptrain.stage = #ptrain.stage<1>} {
    return
  }
}
