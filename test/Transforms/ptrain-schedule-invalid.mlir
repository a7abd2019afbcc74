// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-schedule

// The schedule needs the stages of --ptrain-split-stages.
// expected-error@+1 {{--ptrain-schedule: the module has no pipeline (run --ptrain-split-stages and --ptrain-build-training-step first)}}
module @no_pipeline {
}

// -----

// A split module without the training step (no micro_batches yet) would fail later on a misleading count.
// expected-error@+1 {{--ptrain-schedule: the pipeline has no training step (run --ptrain-build-training-step micro-batches=M first)}}
module @no_step attributes {ptrain.pipeline = {pp = 2 : i64, stages = [@forward_stage0, @forward_stage1]}} {
}

// -----

// A training step built with no micro-batch has no table.
// expected-error@+1 {{--ptrain-schedule: micro-batches must be >= 1 (give micro-batches= or build the training step with micro-batches=), got 0}}
module @zero_micro_batches attributes {ptrain.pipeline = {micro_batches = 0 : i64, pp = 2 : i64, stages = [@forward_stage0, @forward_stage1]}} {
}

// -----

// Re-scheduling after --ptrain-critical-path would leave its slack arrays describing the old table.
// expected-error@+1 {{--ptrain-schedule: the module's schedule already has the critical path of --ptrain-critical-path (and what was planned on it); schedule before --ptrain-critical-path}}
module @after_critical_path attributes {ptrain.pipeline = {micro_batches = 1 : i64, pp = 1 : i64, stages = [@forward_stage0]}, ptrain.schedule = {kind = "1f1b", micro_batches = 1 : i64, send_critical = [[false, false]], table = [["FB0", "O"]]}} {
}

// -----

// ... and after --ptrain-compress, the compression record.
// expected-error@+1 {{--ptrain-schedule: the module is already compressed (ptrain.compression) for its schedule; schedule before --ptrain-compress and --ptrain-lower-to-runtime}}
module @after_compress attributes {ptrain.compression = {policy = "none"}, ptrain.pipeline = {micro_batches = 1 : i64, pp = 1 : i64, stages = [@forward_stage0]}} {
}

// -----

// ... and after --ptrain-lower-to-runtime, the lowered steps.
// expected-error@+1 {{--ptrain-schedule: the module is already lowered (@stage0_train_step) for its schedule; schedule before --ptrain-compress and --ptrain-lower-to-runtime}}
module @after_lowering attributes {ptrain.pipeline = {micro_batches = 1 : i64, pp = 1 : i64, stages = [@forward_stage0]}} {
  func.func @stage0_train_step() {
    return
  }
}

// -----

// Model chunks (virtual stages) need the interleaved schedule.
// expected-error@+1 {{--ptrain-schedule: the 1f1b schedule runs one model chunk per stage, but the pipeline has 2 virtual stages per stage (use schedule=interleaved)}}
module @chunks_1f1b attributes {ptrain.pipeline = {micro_batches = 4 : i64, pp = 2 : i64, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], virtual_stages = 2 : i64}} {
}
