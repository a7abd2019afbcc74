// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-print-schedule -o /dev/null | FileCheck %s

// --ptrain-print-schedule reads only ptrain.schedule; each case is the attribute --ptrain-schedule writes.

// 1F1B at pp = 2 with 4 micro-batches and unit costs (forward 1, backward 2, fused FB 3): bubble (P - 1) / M.
// CHECK-LABEL: schedule 1f1b: pp = 2, virtual stages = 1, micro-batches = 4
// CHECK-NEXT: stage 0: F0 F1 B0 F2 B1 F3 B2 B3 O
// CHECK-NEXT: stage 1: FB0 FB1 FB2 FB3 O
// CHECK-NEXT: unit costs (forward 1, backward 2 per model chunk, free communication): makespan 15
// CHECK-NEXT: stage 0: busy 12, idle 3, bubble (idle / busy) 0.2500
// CHECK-NEXT: stage 1: busy 12, idle 3, bubble (idle / busy) 0.2500
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 4>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 4, table = [["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
}

// -----

// Interleaved with 2 chunks per stage: the bubble shrinks to (P - 1) / (v M) = 1/8.
// CHECK-LABEL: schedule interleaved: pp = 2, virtual stages = 2, micro-batches = 4
// CHECK-NEXT: stage 0: F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3 O
// CHECK-NEXT: stage 1: F0 F1 FB0.1 FB1.1 F2 B0 F3 B1 FB2.1 FB3.1 B2 B3 O
// CHECK: stage 0: busy 24, idle 3, bubble (idle / busy) 0.1250
// CHECK-NEXT: stage 1: busy 24, idle 3, bubble (idle / busy) 0.1250
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], micro_batches = 4>, ptrain.schedule = #ptrain.schedule<kind = "interleaved", micro_batches = 4, virtual_stages = 2, table = [["F0", "F1", "F0.1", "F1.1", "F2", "B0.1", "F3", "B1.1", "F2.1", "B0", "F3.1", "B1", "B2.1", "B3.1", "B2", "B3", "O"], ["F0", "F1", "FB0.1", "FB1.1", "F2", "B0", "F3", "B1", "FB2.1", "FB3.1", "B2", "B3", "O"]]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  func.func private @forward_stage2()
  func.func private @forward_stage3()
}

// -----

// Without a schedule there is nothing to print.
// expected-error@+1 {{--ptrain-print-schedule: no ptrain.schedule; run --ptrain-schedule first}}
module {
}
