// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-compress="cb-rank=2"

// Compression decides per pipeline transfer: it needs the pipeline and its schedule.
// expected-error@+1 {{--ptrain-compress: no ptrain.pipeline or ptrain.schedule attribute; run --ptrain-split-stages, --ptrain-build-training-step and --ptrain-schedule first}}
module @no_pipeline {
}

// -----

// CB's choice and SC read the critical path: a schedule without it is refused, not compressed blindly.
// expected-error@+1 {{--ptrain-compress: ptrain.schedule has no critical-path information; run --ptrain-critical-path first}}
module @no_critical_path attributes {ptrain.pipeline = {micro_batches = 1 : i64, pp = 2 : i64, stages = [@forward_stage0, @forward_stage1]}, ptrain.schedule = {kind = "1f1b", micro_batches = 1 : i64, table = [["F0", "B0", "O"], ["FB0", "O"]]}} {
  ptrain.grid @grid(pp = 2)
}

// -----

// The sent tensors' types come from the stage functions; without them there is nothing to price.
// expected-error@+1 {{--ptrain-compress: @forward_stage0 must take one argument and return one result}}
module @no_stage_functions attributes {ptrain.pipeline = {micro_batches = 1 : i64, pp = 2 : i64, stages = [@forward_stage0, @forward_stage1]}, ptrain.schedule = {kind = "1f1b", micro_batches = 1 : i64, send_critical = [[true, false, false], [true, false]], table = [["F0", "B0", "O"], ["FB0", "O"]]}} {
  ptrain.grid @grid(pp = 2)
}

// -----

// A second run would stack codecs on codecs.
// expected-error@+1 {{--ptrain-compress: the module already has ptrain.compression (compressed twice?)}}
module @twice attributes {ptrain.compression = {policy = "none"}, ptrain.pipeline = {micro_batches = 1 : i64, pp = 2 : i64, stages = [@forward_stage0, @forward_stage1]}, ptrain.schedule = {kind = "1f1b", micro_batches = 1 : i64, send_critical = [[true, false, false], [true, false]], table = [["F0", "B0", "O"], ["FB0", "O"]]}} {
  ptrain.grid @grid(pp = 2)
}
