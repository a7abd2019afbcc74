// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-schedule

// The schedule needs the stages of --ptrain-split-stages.
// expected-error@+1 {{--ptrain-schedule: the module has no pipeline (run --ptrain-split-stages and --ptrain-build-training-step first)}}
module @no_pipeline {
}

// -----

// A split module without the training step (no micro_batches yet) would fail later on a misleading count.
// expected-error@+1 {{--ptrain-schedule: the pipeline has no training step (run --ptrain-build-training-step micro-batches=M first)}}
module @no_step attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
}

// -----

// Re-scheduling after --ptrain-critical-path would leave its slack arrays describing the old table.
// expected-error@+1 {{--ptrain-schedule: the module's schedule already has the critical path of --ptrain-critical-path (and what was planned on it); schedule before --ptrain-critical-path}}
module @after_critical_path attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]], send_critical = [[false, false]]>} {
  func.func private @forward_stage0()
}

// -----

// ... and after --ptrain-compress, the compression record.
// expected-error@+1 {{--ptrain-schedule: the module is already compressed (ptrain.compression) for its schedule; schedule before --ptrain-compress and --ptrain-lower-to-runtime}}
module @after_compress attributes {ptrain.compression = #ptrain.compression<policy = "none", backward_sends = [[false]], dp_all_reduce = [false]>, ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>} {
  func.func private @forward_stage0()
}

// -----

// ... and after --ptrain-lower-to-runtime, the lowered steps.
// expected-error@+1 {{--ptrain-schedule: the module is already lowered (@stage0_train_step) for its schedule; schedule before --ptrain-compress and --ptrain-lower-to-runtime}}
module @after_lowering attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>} {
  func.func private @forward_stage0()
  func.func @stage0_train_step() {
    return
  }
}

// -----

// Model chunks (virtual stages) need the interleaved schedule.
// expected-error@+1 {{--ptrain-schedule: the 1f1b schedule runs one model chunk per stage, but the pipeline has 2 virtual stages per stage (use schedule=interleaved)}}
module @chunks_1f1b attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], micro_batches = 4>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  func.func private @forward_stage2()
  func.func private @forward_stage3()
}
