// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-schedule="schedule=interleaved" | FileCheck %s

// Interleaved 1F1B (Megatron-LM, SC'21 sec. 2.2.2) at pp = 2 with 2 model chunks per stage and 4 micro-batches:
// stage 0 holds virtual stages 0 and 2, stage 1 holds 1 and 3 (the last, fused FB); forwards go through the
// chunks in groups of pp micro-batches, backwards through them in reverse; ".1" names chunk 1.
// CHECK-LABEL: module @pp2_v2_m4
// CHECK-SAME: ptrain.schedule = #ptrain.schedule<kind = "interleaved", micro_batches = 4, virtual_stages = 2, table = {{\[}}["F0", "F1", "F0.1", "F1.1", "F2", "B0.1", "F3", "B1.1", "F2.1", "B0", "F3.1", "B1", "B2.1", "B3.1", "B2", "B3", "O"], ["F0", "F1", "FB0.1", "FB1.1", "F2", "B0", "F3", "B1", "FB2.1", "FB3.1", "B2", "B3", "O"]]>
module @pp2_v2_m4 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], micro_batches = 4>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  func.func private @forward_stage2()
  func.func private @forward_stage3()
}

// -----

// Chunks advance in groups of pp micro-batches: M must be a multiple of pp.
// expected-error@+1 {{--ptrain-schedule: the interleaved schedule needs micro-batches to be a multiple of pp (chunks advance in groups of pp micro-batches; Megatron-LM), got 3 micro-batches for pp = 2}}
module @pp2_v2_m3 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], micro_batches = 3>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  func.func private @forward_stage2()
  func.func private @forward_stage3()
}

// -----

// A pipeline split without virtual stages has one chunk per stage: nothing to interleave.
// expected-error@+1 {{--ptrain-schedule: the interleaved schedule needs pp >= 2 and virtual stages >= 2 (--ptrain-split-stages virtual-stages=V), got pp = 2, virtual stages = 1}}
module @pp2_v1 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 4>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
}
