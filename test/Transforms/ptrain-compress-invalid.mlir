// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-compress="cb-rank=2"

// Compression decides per pipeline transfer: it needs the pipeline and its schedule.
// expected-error@+1 {{--ptrain-compress: no ptrain.pipeline or ptrain.schedule attribute; run --ptrain-split-stages, --ptrain-build-training-step and --ptrain-schedule first}}
module @no_pipeline {
}

// -----

// CB's choice and SC read the critical path: a schedule without it is refused, not compressed blindly.
// expected-error@+1 {{--ptrain-compress: ptrain.schedule has no critical-path information; run --ptrain-critical-path first}}
module @no_critical_path attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 1>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["F0", "B0", "O"], ["FB0", "O"]]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  ptrain.grid @grid(pp = 2)
}

// -----

// The sent tensors' types come from the stage functions; without them there is nothing to price.
// expected-error@+1 {{--ptrain-compress: @forward_stage0 must take one argument and return one result}}
module @no_stage_functions attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 1>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["F0", "B0", "O"], ["FB0", "O"]], send_critical = [[true, false, false], [true, false]]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  ptrain.grid @grid(pp = 2)
}

// -----

// A second run would stack codecs on codecs.
// expected-error@+1 {{--ptrain-compress: the module already has ptrain.compression (compressed twice?)}}
module @twice attributes {ptrain.compression = #ptrain.compression<policy = "none", backward_sends = [[false], [false]], dp_all_reduce = [false, false]>, ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 1>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["F0", "B0", "O"], ["FB0", "O"]], send_critical = [[true, false, false], [true, false]]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  ptrain.grid @grid(pp = 2)
}
