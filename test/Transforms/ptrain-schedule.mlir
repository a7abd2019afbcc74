// RUN: ptrain-opt %s --split-input-file --ptrain-schedule="schedule=1f1b" | FileCheck %s
// RUN: ptrain-opt %s --split-input-file --ptrain-schedule="schedule=gpipe" | FileCheck %s --check-prefix=GPIPE
// RUN: not ptrain-opt %s --split-input-file --ptrain-schedule="schedule=zb" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not ptrain-opt %s --split-input-file --ptrain-schedule="micro-batches=8" 2>&1 | FileCheck %s --check-prefix=MISMATCH

// --ptrain-schedule reads only the module's ptrain.pipeline (stages, pp, micro_batches of the built training
// step) and writes ptrain.schedule; the stage functions themselves are not needed.

// 1F1B at pp = 2: stage 0 runs P - s - 1 = 1 warm-up forward, then alternates; the last stage fuses forward,
// loss and backward per micro-batch; the optimizer step closes every row.
// CHECK-LABEL: module @pp2_m4
// CHECK-SAME: ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 4, table = {{\[}}["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]>
// GPipe: every forward, then every backward.
// GPIPE-LABEL: module @pp2_m4
// GPIPE-SAME: ptrain.schedule = #ptrain.schedule<kind = "gpipe", micro_batches = 4, table = {{\[}}["F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]>
module @pp2_m4 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 4>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
}

// -----

// 1F1B at pp = 4: 3, 2, 1 and 0 warm-up forwards on stages 0..3.
// CHECK-LABEL: module @pp4_m4
// CHECK-SAME: table = {{\[}}["F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3", "O"], ["F0", "F1", "F2", "B0", "F3", "B1", "B2", "B3", "O"], ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]
// GPIPE-LABEL: module @pp4_m4
// GPIPE-SAME: table = {{\[}}["F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3", "O"], ["F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3", "O"], ["F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]
module @pp4_m4 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 4, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], micro_batches = 4>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  func.func private @forward_stage2()
  func.func private @forward_stage3()
}

// -----

// Fewer micro-batches than stages (M < P - 1): the degenerate 1F1B runs every forward, then every backward,
// which is GPipe's table.
// CHECK-LABEL: module @pp4_m2
// CHECK-SAME: table = {{\[}}["F0", "F1", "B0", "B1", "O"], ["F0", "F1", "B0", "B1", "O"], ["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]
// GPIPE-LABEL: module @pp4_m2
// GPIPE-SAME: table = {{\[}}["F0", "F1", "B0", "B1", "O"], ["F0", "F1", "B0", "B1", "O"], ["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]
module @pp4_m2 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 4, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], micro_batches = 2>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  func.func private @forward_stage2()
  func.func private @forward_stage3()
}

// -----

// One stage: every micro-batch is a fused forward-backward.
// CHECK-LABEL: module @pp1_m3
// CHECK-SAME: table = {{\[}}["FB0", "FB1", "FB2", "O"]]
// GPIPE-LABEL: module @pp1_m3
// GPIPE-SAME: table = {{\[}}["FB0", "FB1", "FB2", "O"]]
module @pp1_m3 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 3>} {
  func.func private @forward_stage0()
}

// An unknown schedule kind and a micro-batch count other than the training step's are errors on every case.
// KIND-COUNT-4: error: --ptrain-schedule: schedule must be gpipe, 1f1b or interleaved, got 'zb'
// MISMATCH: error: --ptrain-schedule: micro-batches = 8 differs from the training step's 4 (its loss gradient is seeded with 1 / micro-batches)
