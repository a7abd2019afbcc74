// RUN: ptrain-opt %s --ptrain-report="cluster=%S/Inputs/toy-cluster.json json=%t.json trace=%t.trace.json" -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json
// RUN: not ptrain-opt %s --ptrain-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOCLUSTER

// The plan report of dp = 2 x pp = 2, 1F1B, 2 micro-batches on the toy cluster (Inputs/toy-cluster.json:
// 1 GFLOP/s, 1 GB/s, no latency), the timeline of test-ptrain-timing.mlir's second case: F = 1.024 us,
// B = 2.048, FB = 3.072; 256 B per activation, gradient and dp all-reduce (a ring of 2).
// CHECK-LABEL: === ptrain plan report ===
// CHECK-NEXT: cluster toy: 1 nodes x 8 toy
// CHECK-NEXT: grid dp=2 tp=1 pp=2, schedule 1f1b, 2 micro-batches
// CHECK-NEXT: iteration time 0.010 ms, bubble 0.6250 (bubble time / ideal time; (p-1)/m = 0.5000)
// Bytes per GPU: two 256 B sends, the 256 B dp all-reduce and 6 B of the loss all-reduce (4 B over 4 ranks).
// CHECK-LABEL: bytes sent per iteration by one GPU of each stage
// CHECK-NEXT: stage        intra-node        inter-node
// CHECK-NEXT:     0          774.00 B            0.00 B
// CHECK-NEXT:     1          774.00 B            0.00 B
// Stage 0's dp all-reduce follows its last backward and delays O; stage 1's overlaps B1 of stage 0.
// CHECK-LABEL: critical path (10 steps): F0@0 send F0 0->1 FB0@1 send F1 0->1 FB1@1 send B1 1->0 B1@0 dp all-reduce stage 0 O@0 loss all-reduce
// CHECK-NEXT: critical backward sends: [send B1 1->0]
// CHECK-NEXT: critical dp all-reduces (stages): 0
// The critical path by kind: F0 + FB0 + FB1 + B1 = 9.216 us of compute, two 0.256 us sends 0 -> 1, one back,
// the dp all-reduce of stage 0 and the loss all-reduce; the parts sum to the iteration.
// CHECK-LABEL: critical path by kind (ms, share of the iteration)
// CHECK-NEXT: compute 0.009 89.9%
// CHECK-NEXT: codec kernels 0.000 0.0%
// CHECK-NEXT: cpu overhead of sends 0.000 0.0%
// CHECK-NEXT: sends 0->1 (2) 0.001 5.0%
// CHECK-NEXT: sends 1->0 (1) 0.000 2.5%
// CHECK-NEXT: dp all-reduce stage 0 (1) 0.000 2.5%
// CHECK-NEXT: loss all-reduce (1) 0.000 0.1%
// CHECK-EMPTY:
// CHECK-NEXT: memory per device (capacity 953.67 MiB)

// JSON: "bubble": 0.625,
// JSON: "cluster": "toy",
// JSON: "critical_dp_all_reduces": [
// JSON-NEXT: 0
// JSON: "critical_path_breakdown": {
// JSON-NEXT: "codec_kernels_s": 0,
// JSON-NEXT: "collectives": [
// JSON-NEXT: {
// JSON-NEXT: "count": 1,
// JSON-NEXT: "name": "dp all-reduce stage 0",
// JSON-NEXT: "seconds": 2.56{{[0-9]*}}e-07
// JSON: "name": "loss all-reduce",
// JSON: "compute_s": 9.216{{[0-9]*}}e-06,
// JSON-NEXT: "cpu_overhead_s": 0,
// JSON-NEXT: "sends": [
// JSON-NEXT: {
// JSON-NEXT: "crossing_s": 0,
// JSON-NEXT: "link": "0->1",
// JSON-NEXT: "seconds": 5.1{{[0-9]*}}e-07,
// JSON-NEXT: "transfers": 2
// JSON: "iteration_time_s": 1.024{{[0-9]*}}e-05,
// JSON: "stages": [
// JSON: "dp_all_reduce": {
// JSON-NEXT: "bytes": 256,
// JSON-NEXT: "critical": true,
// JSON: "intra_node_bytes": 774,

// The trace: one process per stage rank, threads for its streams, each step an event in us with its slack.
// TRACE: "name": "stage 0 (one of 2 dp x tp ranks)"
// TRACE: "name": "compute stream"
// TRACE: "critical": true,
// TRACE: "dur": 1.024,
// TRACE-NEXT: "name": "F0",

// A report needs a machine: the module carries none and no cluster= is given.
// NOCLUSTER: error: --ptrain-report: no cluster: give cluster=FILE or attach ptrain.cluster to the module

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
