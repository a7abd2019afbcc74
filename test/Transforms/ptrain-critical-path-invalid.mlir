// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json"
// The lowering's parameter-casts, which the timing model prices: once or per-call (checked before the module).
// RUN: not ptrain-opt %s --split-input-file --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json parameter-casts=never" 2>&1 | FileCheck %s --check-prefix=CASTS
// CASTS: --ptrain-critical-path: parameter-casts must be once or per-call, got 'never'

// The schedule is timed per pipeline stage: the module needs the pipeline of --ptrain-split-stages.
// expected-error@+1 {{--ptrain-critical-path: the module has no ptrain.pipeline (run --ptrain-split-stages and --ptrain-build-training-step)}}
module {
}

// -----

// ... and the table of --ptrain-schedule.
// expected-error@+1 {{--ptrain-critical-path: the module has no ptrain.schedule table (run --ptrain-schedule)}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
}

// -----

// The grid says how many GPUs the plan takes; its pp must be the pipeline's.
// expected-error@+1 {{--ptrain-critical-path: the module has no ptrain.grid with an axis pp of size 2}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 1>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["F0", "B0", "O"], ["FB0", "O"]]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  ptrain.grid @grid(dp = 2)
}

// -----

// dp = 8 x pp = 2 needs 16 GPUs; the toy cluster has one node of 8.
// expected-error@+1 {{--ptrain-critical-path: nodes: the grid needs 16 GPUs but the cluster has 1 x 8 = 8}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 1>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["F0", "B0", "O"], ["FB0", "O"]]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  ptrain.grid @grid(dp = 8, pp = 2)
}

// -----

// Every step of the table is timed through its stage function: a missing one is named (a missing forward stage
// is the verifier's, #ptrain.pipeline (C8)).
// expected-error@+1 {{--ptrain-critical-path: stage 0: missing @stage0_backward (run --ptrain-build-training-step)}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 1>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["F0", "B0", "O"], ["FB0", "O"]]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  ptrain.grid @grid(pp = 2)
}
