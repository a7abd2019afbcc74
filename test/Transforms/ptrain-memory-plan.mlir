// RUN: ptrain-opt %s --ptrain-memory-plan="annotate=true json=%t.json" 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// A hand-lowered stage 0 of a pp = 2 pipeline, GPipe with 2 micro-batches of [4, 8] tokens: F0 F1 B0 B1 O.
// Sizes: a token slice 4x8xi64 = 256 B, an activation or gradient 4x8xf32 = 128 B; the arena aligns to 64.
//
// The step's buffers (op index: interval, bytes):
//   %t0 slice        [0, 9]   256  (the stashed input of micro-batch 0, until @stage0_backward at 9)
//   %y0 forward      [1, 8]   128  (its output, held by the send until the wait at 8)
//   %t1 slice        [3, 13]  256
//   %y1 forward      [4, 12]  128
//   %r0 recv         [6, 9]   128  (the wait at 7 aliases it)
//   %r1 recv         [10, 13] 128
//   %ar all-reduce   [16, 18] 64   (4 bytes, aligned; the constant at 15 is static)
// Greedy by size: %t0 -> 0, %t1 -> 256, %y0 -> 512, %y1 -> 640, %r0 -> 768 (each overlaps all before);
// %r1 overlaps only %t1 (256..512) and %y1 (640..768): gaps [0, 256) and [512, 640); the smaller -> 512;
// %ar overlaps nothing -> 0. Stash arena 896 B = the lower bound (ops 6-8: 2 x 256 + 3 x 128).
//
// Temporaries: @forward_stage0: %f [0, 2] 128, %y [2, 3] 128 (the state read is in place) -> 256 B.
// @stage0_backward: %f [0, 1], %g [1, 3], %new [3, 4], 128 B each -> %new reuses %f's offset: 256 B.
// @stage0_optimizer_step: the read of @m is used after the write of @m (op 4), so it is copied: %m [2, 5],
// %m2 [3, 4], %w2 [5, 6] -> 256 B. The largest is the first found, @forward_stage0: 256 B.
// States: @w 4x8xf32 128 B parameter, @m 128 B optimizer moment, @g 128 B gradient, @step i64 8 B.
// Peak = 392 (states) + 896 (stash) + 256 (temporaries) = 1544 B. Both micro-batches are stashed at once.
// Allocated (a module without ptrain.pipeline: every state and function): 392 + the step's own arena 896 +
// the arena the other three share, 256 = 1544 B.

// CHECK: remark: memory plan of stage 0: peak 1.51 KiB = states 392 B + stash 896 B (2 micro-batches at once) + temporaries 256 B (@forward_stage0)
// CHECK-LABEL: func.func @stage0_train_step(%arg0
// CHECK-SAME: ptrain.memory_plan = {allocated_bytes = 1544 : i64, codec_bytes = 0 : i64, eval_bytes = 0 : i64, gradient_bytes = 128 : i64, max_stashed = 2 : i64, optimizer_bytes = 128 : i64, other_state_bytes = 8 : i64, parameter_bytes = 128 : i64, peak_bytes = 1544 : i64, stash_bytes = 896 : i64, state_bytes = 392 : i64, temporaries_bytes = 256 : i64, temporaries_function = "forward_stage0"}
// CHECK: ptrain.slice {{.*}}ptrain.arena_offsets = array<i64: 0>
// CHECK-NEXT: call @forward_stage0{{.*}}ptrain.arena_offsets = array<i64: 512>
// CHECK-NEXT: ptrain.send_start {{.*}}ptrain.arena_offsets = array<i64: -1>
// CHECK-NEXT: ptrain.slice {{.*}}ptrain.arena_offsets = array<i64: 256>
// CHECK-NEXT: call @forward_stage0{{.*}}ptrain.arena_offsets = array<i64: 640>
// CHECK-NEXT: ptrain.send_start
// CHECK-NEXT: ptrain.recv_start {{.*}}ptrain.arena_offsets = array<i64: 768>
// CHECK-NEXT: ptrain.wait {{.*}}ptrain.arena_offsets = array<i64: -1>
// CHECK-NEXT: ptrain.wait
// CHECK-NEXT: call @stage0_backward
// CHECK-NEXT: ptrain.recv_start {{.*}}ptrain.arena_offsets = array<i64: 512>
// CHECK: arith.constant {{.*}}ptrain.arena_offsets = array<i64: -1>
// CHECK-NEXT: ptrain.all_reduce_start {{.*}}ptrain.arena_offsets = array<i64: 0>

// JSON: "alignment": 64
// JSON: "allocated_bytes": 1544
// JSON: "peak_bytes": 1544
// JSON: "stage": 0
// JSON: "stash_bytes": 896
// JSON: "temporaries_function": "forward_stage0"

module {
  ptrain.grid @grid(pp = 2)
  ptrain.state @w key "w" kind parameter : tensor<4x8xf32>
  ptrain.state @m key "w/adam_m" kind optimizer_moment : tensor<4x8xf32>
  ptrain.state @g key "w/grad" kind gradient : tensor<4x8xf32>
  ptrain.state @step key "step" kind step_counter : tensor<i64>

  func.func @forward_stage0(%t: tensor<4x8xi64>) -> tensor<4x8xf32> {
    %f = arith.sitofp %t : tensor<4x8xi64> to tensor<4x8xf32>
    %w = ptrain.state_read @w : tensor<4x8xf32>
    %y = ptrain.binary mul %f, %w : tensor<4x8xf32>, tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
  func.func @stage0_backward(%t: tensor<4x8xi64>, %dy: tensor<4x8xf32>) {
    %f = arith.sitofp %t : tensor<4x8xi64> to tensor<4x8xf32>
    %g = ptrain.binary mul %f, %dy : tensor<4x8xf32>, tensor<4x8xf32>
    %old = ptrain.state_read @g : tensor<4x8xf32>
    %new = ptrain.binary add %old, %g : tensor<4x8xf32>, tensor<4x8xf32>
    ptrain.state_write %new to @g : tensor<4x8xf32>
    return
  }
  func.func @stage0_optimizer_step() {
    %w = ptrain.state_read @w : tensor<4x8xf32>
    %g = ptrain.state_read @g : tensor<4x8xf32>
    %m = ptrain.state_read @m : tensor<4x8xf32>
    %m2 = ptrain.binary add %m, %g : tensor<4x8xf32>, tensor<4x8xf32>
    ptrain.state_write %m2 to @m : tensor<4x8xf32>
    %w2 = ptrain.binary sub %w, %m : tensor<4x8xf32>, tensor<4x8xf32>
    ptrain.state_write %w2 to @w : tensor<4x8xf32>
    %s = ptrain.state_read @step : tensor<i64>
    return
  }
  func.func @stage0_train_step(%tok: tensor<8x8xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %t0 = ptrain.slice %tok {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 8>} : tensor<8x8xi64> -> tensor<4x8xi64>
    %y0 = call @forward_stage0(%t0) : (tensor<4x8xi64>) -> tensor<4x8xf32>
    %s0 = ptrain.send_start %y0 to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<4x8xf32>
    %t1 = ptrain.slice %tok {offsets = array<i64: 4, 0>, sizes = array<i64: 4, 8>} : tensor<8x8xi64> -> tensor<4x8xi64>
    %y1 = call @forward_stage0(%t1) : (tensor<4x8xi64>) -> tensor<4x8xf32>
    %s1 = ptrain.send_start %y1 to @grid axis pp offset 1 {ptrain.tag = 2 : i64} : tensor<4x8xf32>
    %r0 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<4x8xf32>>
    %g0 = ptrain.wait %r0 : !ptrain.request<tensor<4x8xf32>>
    ptrain.wait %s0 : !ptrain.request
    call @stage0_backward(%t0, %g0) : (tensor<4x8xi64>, tensor<4x8xf32>) -> ()
    %r1 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 3 : i64} : !ptrain.request<tensor<4x8xf32>>
    %g1 = ptrain.wait %r1 : !ptrain.request<tensor<4x8xf32>>
    ptrain.wait %s1 : !ptrain.request
    call @stage0_backward(%t1, %g1) : (tensor<4x8xi64>, tensor<4x8xf32>) -> ()
    call @stage0_optimizer_step() : () -> ()
    %z = arith.constant dense<0.0> : tensor<f32>
    %ar = ptrain.all_reduce_start %z on @grid axes [pp] reduction = sum : tensor<f32>
    %l = ptrain.wait %ar : !ptrain.request<tensor<f32>>
    return %l : tensor<f32>
  }
}
