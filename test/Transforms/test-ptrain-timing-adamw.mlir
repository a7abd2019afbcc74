// RUN: ptrain-opt %s --test-ptrain-timing="cluster=%S/Inputs/toy-memory-cluster.json" | FileCheck %s --check-prefix=UNFUSED
// RUN: ptrain-opt %s --ptrain-outline-adamw --test-ptrain-timing="cluster=%S/Inputs/toy-memory-cluster.json" | FileCheck %s --check-prefix=FUSED

// The timing model prices an AdamW update --ptrain-outline-adamw marked by its kernel's traffic, the update's
// operands read and results written as before, and the clip scale's mul its kernel folds in at nothing
// (docs/GeneratedKernels.md, "AdamW over a bucket"). On the memory-bound toy cluster (1 GFLOP/s, 1 GB/s) stage 0's
// optimizer step O updates an 8 x 8 f32 parameter:
//   the AdamW update: p, g, m, v (1,024 B) and the i64 step (8 B) read, p, m, v written (768 B): 1.800 us
//   (its 14 x 64 = 896 FLOP take 0.896 us);
//   the mul of the gradient by the rank-0 scale: 256 + 4 B read, 256 B written: 0.516 us;
//   unfused O = 2.316 us, fused (the mul folded in) O = 1.800 us.
// UNFUSED: O ranks 0 start 7.176 end 9.492 {{.*}} duration 2.316
// FUSED: O ranks 0 start 7.176 end 8.976 {{.*}} duration 1.800
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  ptrain.state @w key "w" kind parameter : tensor<8x8xf32>
  ptrain.state @w_g key "w/grad" kind gradient : tensor<8x8xf32>
  ptrain.state @w_m key "w/adam_m" kind optimizer_moment : tensor<8x8xf32>
  ptrain.state @w_v key "w/adam_v" kind optimizer_moment : tensor<8x8xf32>
  ptrain.state @step key "step" kind step_counter : tensor<i64>
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
    %t = ptrain.state_read @step : tensor<i64>
    %s = arith.constant dense<0.5> : tensor<f32>
    %w = ptrain.state_read @w : tensor<8x8xf32>
    %g = ptrain.state_read @w_g : tensor<8x8xf32>
    %gs = ptrain.binary mul %g, %s : tensor<8x8xf32>, tensor<f32>
    %m = ptrain.state_read @w_m : tensor<8x8xf32>
    %v = ptrain.state_read @w_v : tensor<8x8xf32>
    %w1, %m1, %v1 = ptrain.adamw %w, %gs, %m, %v, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<8x8xf32>, tensor<i64>
    ptrain.state_write %w1 to @w : tensor<8x8xf32>
    ptrain.state_write %m1 to @w_m : tensor<8x8xf32>
    ptrain.state_write %v1 to @w_v : tensor<8x8xf32>
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
