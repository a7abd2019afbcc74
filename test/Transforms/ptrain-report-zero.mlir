// RUN: ptrain-opt %s --ptrain-report="cluster=%S/Inputs/toy-cluster.json json=%t.json" -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// ZeRO-1's collectives in the timing model (--ptrain-build-training-step zero=1, docs/DistributedOptimizer.md):
// the plan of ptrain-report.mlir (dp = 2 x pp = 2, 1F1B, 2 micro-batches, the toy cluster) with each stage's dp
// all-reduce of its 256 B gradient replaced by a reduce-scatter of it and an all-gather of the updated shard.
// A ring reduce-scatter and a ring all-gather move what a ring all-reduce moves (ZeRO, SC'20 sec. 7.1): the
// same bytes, iteration time and critical path as the all-reduce plan.
// CHECK-LABEL: === ptrain plan report ===
// CHECK: iteration time 0.010 ms, bubble 0.6250
// CHECK-LABEL: bytes sent per iteration by one GPU of each stage
// CHECK-NEXT: stage        intra-node        inter-node
// CHECK-NEXT:     0          774.00 B            0.00 B
// CHECK-NEXT:     1          774.00 B            0.00 B
// CHECK-LABEL: critical path (10 steps): F0@0 send F0 0->1 FB0@1 send F1 0->1 FB1@1 send B1 1->0 B1@0 dp all-reduce stage 0 O@0 loss all-reduce
// CHECK: critical dp all-reduces (stages): 0
// JSON: "iteration_time_s": 1.024{{[0-9]*}}e-05,
// JSON: "dp_all_reduce": {
// JSON-NEXT: "bytes": 256,

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
    %flat = ptrain.reshape %g : tensor<8x8xf32> -> tensor<64xf32>
    %r = ptrain.reduce_scatter_start %flat on @grid axes [dp] scatter_dim = 0 reduction = avg : tensor<64xf32> -> !ptrain.request<tensor<32xf32>>
    %s = ptrain.wait %r : !ptrain.request<tensor<32xf32>>
    %a = ptrain.all_gather_start %s on @grid axes [dp] gather_dim = 0 : tensor<32xf32> -> !ptrain.request<tensor<64xf32>>
    %full = ptrain.wait %a : !ptrain.request<tensor<64xf32>>
    %w = ptrain.reshape %full : tensor<64xf32> -> tensor<8x8xf32>
    ptrain.state_write %w to @w : tensor<8x8xf32>
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
    %flat = ptrain.reshape %g : tensor<8x8xf32> -> tensor<64xf32>
    %r = ptrain.reduce_scatter_start %flat on @grid axes [dp] scatter_dim = 0 reduction = avg : tensor<64xf32> -> !ptrain.request<tensor<32xf32>>
    %s = ptrain.wait %r : !ptrain.request<tensor<32xf32>>
    %a = ptrain.all_gather_start %s on @grid axes [dp] gather_dim = 0 : tensor<32xf32> -> !ptrain.request<tensor<64xf32>>
    %full = ptrain.wait %a : !ptrain.request<tensor<64xf32>>
    %w = ptrain.reshape %full : tensor<64xf32> -> tensor<8x8xf32>
    ptrain.state_write %w to @w : tensor<8x8xf32>
    return
  }
}
