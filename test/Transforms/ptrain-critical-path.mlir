// RUN: ptrain-opt %s --split-input-file --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" | FileCheck %s
// RUN: ptrain-opt %s --split-input-file --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" | ptrain-opt --split-input-file --ptrain-critical-path | FileCheck %s --check-prefix=AGAIN

// pp = 2, 1F1B, 2 micro-batches on the toy cluster (Inputs/toy-cluster.json: 1 GFLOP/s, 1 GB/s, no latency).
// A 2 x 4 x 8 by 8 x 8 matmul is 1.024 us and a 2 x 4 x 8 f32 transfer 0.256 us, so F = 1.024, B = 2.048 and
// FB = 3.072 us. Stage 1 posts each receive when its previous step ends, so F1's send waits for FB0 (4.352)
// and FB1 runs 4.608-7.680; B1 gets its gradient at 7.936 and ends at 9.984, the loss all-reduce (4 bytes)
// at 9.988 us. Critical: F0, its send, FB0, FB1, FB1's send (B1 of stage 1's row), B1 and stage 0's O; F1 has
// 2.304 us of slack (it could end as late as F1's send starts), B0 1.024 us.
// CHECK-LABEL: module attributes
// CHECK-SAME: ptrain.cluster = {{.*}}name = "toy"
// CHECK-SAME: ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2,
// CHECK-SAME: table = {{\[\[}}"F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]],
// CHECK-SAME: slack = {{\[\[}}{{.*}}, 2.30{{[0-9]*}}E-6, 1.02{{[0-9]*}}E-6, 0.000000e+00, 0.000000e+00], [{{.*}}, 0.000000e+00, 2.04{{[0-9]*}}E-6]],
// CHECK-SAME: critical = {{\[\[}}true, false, false, true, true], [true, true, false]],
// CHECK-SAME: send_slack = {{\[\[}}{{.*}}, {{.*}}, -1.000000e+00, -1.000000e+00, -1.000000e+00], [1.02{{[0-9]*}}E-6, 0.000000e+00, -1.000000e+00]],
// CHECK-SAME: send_critical = {{\[\[}}true, true, false, false, false], [false, true, false]],
// CHECK-SAME: iteration_time = 9.98{{[0-9]*}}E-6 : f64, bubble = 6.250000e-01 : f64>
// Run again without cluster=, the pass takes the cluster the module carries: the same times.
// AGAIN-LABEL: module attributes
// AGAIN-SAME: iteration_time = 9.98{{[0-9]*}}E-6 : f64,
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  ptrain.state @w key "w" kind parameter : tensor<8x8xf32>
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x4x8xf32>
    %w = ptrain.state_read @w : tensor<8x8xf32>
    %h = ptrain.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    %w = ptrain.state_read @w : tensor<8x8xf32>
    %a = ptrain.matmul %dh, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %b = ptrain.matmul %a, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
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
    %a = ptrain.matmul %h, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %b = ptrain.matmul %a, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %dh = ptrain.matmul %b, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss, %dh : tensor<f32>, tensor<2x4x8xf32>
  }
  func.func @stage1_optimizer_step() attributes {ptrain.stage = #ptrain.stage<1>} {
    return
  }
}

// -----

// dp = 2 x pp = 2: each stage's optimizer step all-reduces its 8 x 8 gradient over dp (a ring of 2: 256 B,
// 0.256 us) before O. Stage 0's follows B1 (critical, it delays the iteration to 10.246 us); stage 1's runs
// during B1 and has 2.048 us of slack.
// CHECK-LABEL: module attributes
// CHECK-SAME: dp_all_reduce_slack = [0.000000e+00, 2.04{{[0-9]*}}E-6], dp_all_reduce_critical = [true, false],
// CHECK-SAME: iteration_time = 1.024{{[0-9]*}}E-5 : f64,
// AGAIN-LABEL: module attributes
// AGAIN-SAME: iteration_time = 1.024{{[0-9]*}}E-5 : f64,
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(dp = 2, pp = 2)
  ptrain.state @w key "w" kind parameter : tensor<8x8xf32>
  ptrain.state @w.grad key "w/grad" kind gradient : tensor<8x8xf32>
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x4x8xf32>
    %w = ptrain.state_read @w : tensor<8x8xf32>
    %h = ptrain.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    %w = ptrain.state_read @w : tensor<8x8xf32>
    %a = ptrain.matmul %dh, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %b = ptrain.matmul %a, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    return
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    %g = ptrain.state_read @w.grad : tensor<8x8xf32>
    %r = ptrain.all_reduce_start %g on @grid axes [dp] reduction = avg : tensor<8x8xf32>
    %a = ptrain.wait %r : !ptrain.request<tensor<8x8xf32>>
    ptrain.state_write %a to @w.grad : tensor<8x8xf32>
    return
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage1_forward_backward(%h: tensor<2x4x8xf32>, %tokens: tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<1>} {
    %w = ptrain.state_read @w : tensor<8x8xf32>
    %a = ptrain.matmul %h, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %b = ptrain.matmul %a, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %dh = ptrain.matmul %b, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss, %dh : tensor<f32>, tensor<2x4x8xf32>
  }
  func.func @stage1_optimizer_step() attributes {ptrain.stage = #ptrain.stage<1>} {
    %g = ptrain.state_read @w.grad : tensor<8x8xf32>
    %r = ptrain.all_reduce_start %g on @grid axes [dp] reduction = avg : tensor<8x8xf32>
    %a = ptrain.wait %r : !ptrain.request<tensor<8x8xf32>>
    ptrain.state_write %a to @w.grad : tensor<8x8xf32>
    return
  }
}
