// RUN: ptrain-opt %s --ptrain-report="cluster=%S/Inputs/toy-cluster.json json=%t.json" -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// The report of a compressed plan: CB on both backward sends of pp = 2 (a hand-written ptrain.compression, as
// --ptrain-compress="cb-sends=all cb-rank=2" writes it) on the toy cluster. PowerSGD rank 2 sends P and Q of
// the 8 x 8 view, 2 x 8 x 2 x 4 B = 128 B instead of 256 B, but its kernels cost more than the 0.128 us it
// saves per send: the modelled speedup is below 1 (auto would not pick it).
// CHECK-LABEL: compression (policy optimus-cc): iteration time 0.010 ms uncompressed, 0.012 ms compressed, modelled speedup 0.857{{[0-9]}}x
// CHECK-NEXT: bytes sent per iteration by one GPU, per link
// CHECK-NEXT: link                               before             after
// CHECK-NEXT: activations 0->1                  512.00 B          512.00 B
// CHECK-NEXT: gradients 1->0                    512.00 B          256.00 B
// CHECK-NEXT: loss all-reduce                     4.00 B            4.00 B
// CHECK-LABEL: compressed edges (2)
// CHECK-NEXT: send B0 1->0: #ptrain.powersgd<rank = 2>, 256.00 B -> 128.00 B, {{.*}}, slack 0.002 ms
// CHECK-NEXT: send B1 1->0: #ptrain.powersgd<rank = 2>, 256.00 B -> 128.00 B, {{.*}}, slack 0.000 ms (critical)

// JSON: "compression": {
// JSON: "decisions": [
// JSON: "bytes_after": 128,
// JSON-NEXT: "bytes_before": 256,
// JSON-NEXT: "codec": "#ptrain.powersgd<rank = 2>",
// JSON: "edge": "send B0 1->0",
// JSON: "edge": "send B1 1->0",
// JSON: "iteration_time_uncompressed_s": 9.98{{[0-9]*}}e-06,
// JSON: "policy": "optimus-cc",
// JSON-NEXT: "speedup": 0.857

module attributes {ptrain.compression = #ptrain.compression<policy = "optimus-cc", backward_sends = [[false, false], [true, true]], backward_codec = #ptrain.powersgd<rank = 2>, forward_sends = [[false, false], [false, false]], dp_all_reduce = [false, false]>, ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
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
