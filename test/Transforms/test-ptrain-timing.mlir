// RUN: ptrain-opt %s --split-input-file --test-ptrain-timing="cluster=%S/Inputs/toy-cluster.json" | FileCheck %s

// The timed plan step by step (start, end, slack, duration in us; * marks the critical path) on the toy
// cluster (Inputs/toy-cluster.json: 1 GFLOP/s, 1 GB/s, no latency), so every number can be checked by hand.

// pp = 2, 1F1B, 2 micro-batches: F = 1 matmul (1.024 us), B = 2 (2.048), FB = 3 (3.072); each activation or
// gradient is 256 B (0.256 us). A receive is posted when the step before its consumer ends: F1's send starts
// only when FB0 ends (4.352), although F1 ended at 2.048. The loss all-reduce moves 4 bytes.
// CHECK-LABEL: iteration 9.988 us, bubble 0.6250
// CHECK-NEXT: * F0 ranks 0 start 0.000 end 1.024 slack 0.000 duration 1.024
// CHECK-NEXT:   F1 ranks 0 start 1.024 end 2.048 slack 2.304 duration 1.024
// CHECK-NEXT:   B0 ranks 0 start 4.608 end 6.656 slack 1.024 duration 2.048
// CHECK-NEXT: * B1 ranks 0 start 7.936 end 9.984 slack 0.000 duration 2.048
// CHECK-NEXT: * O ranks 0 start 9.984 end 9.984 slack 0.000 duration 0.000
// CHECK-NEXT: * FB0 ranks 1 start 1.280 end 4.352 slack 0.000 duration 3.072
// CHECK-NEXT: * FB1 ranks 1 start 4.608 end 7.680 slack 0.000 duration 3.072
// CHECK-NEXT:   O ranks 1 start 7.936 end 7.936 slack 2.048 duration 0.000
// CHECK-NEXT: * send F0 0->1 ranks 0 1 start 1.024 end 1.280 slack 0.000 duration 0.256
// CHECK-NEXT: * send F1 0->1 ranks 0 1 start 4.352 end 4.608 slack 0.000 duration 0.256
// CHECK-NEXT:   send B0 1->0 ranks 1 0 start 4.352 end 4.608 slack 1.024 duration 0.256
// CHECK-NEXT: * send B1 1->0 ranks 1 0 start 7.680 end 7.936 slack 0.000 duration 0.256
// CHECK-NEXT: * loss all-reduce ranks 0 1 start 9.984 end 9.988 slack 0.000 duration 0.004
// The iteration time is also written on the module (seconds).
// CHECK: ptrain.test.iteration_time = 9.98{{[0-9]*}}E-6 : f64
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

// dp = 2 x pp = 2: one dp all-reduce per stage of its 8 x 8 gradient (ring of 2 members: 2 (N - 1) / N x 256 B
// = 256 B, 0.256 us) between the last backward and O; stage 0's is on the critical path. The loss
// all-reduce now spans 4 ranks (0.006 us).
// CHECK-LABEL: iteration 10.246 us, bubble 0.6250
// CHECK: * O ranks 0 start 10.240 end 10.240 slack 0.000 duration 0.000
// CHECK: * dp all-reduce stage 0 ranks 0 start 9.984 end 10.240 slack 0.000 duration 0.256
// CHECK-NEXT:   dp all-reduce stage 1 ranks 1 start 7.936 end 8.192 slack 2.048 duration 0.256
// CHECK-NEXT: * loss all-reduce ranks 0 1 start 10.240 end 10.246 slack 0.000 duration 0.006
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
