// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-lower-to-runtime

// Only a pipeline module (after --ptrain-split-stages) has a schedule to lower.
// expected-error@+1 {{--ptrain-lower-to-runtime: no ptrain.pipeline attribute; run --ptrain-split-stages, --ptrain-build-training-step and --ptrain-schedule first}}
module {
  func.func @forward(%t: tensor<1x4xi64>) -> tensor<1x4xi64> {
    return %t : tensor<1x4xi64>
  }
}

// -----

// The transfers need a grid with the pipeline axis pp.
// expected-error@+1 {{--ptrain-lower-to-runtime: no ptrain.grid with an axis pp}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>,
    ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]]>} {
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4x4xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %c = arith.constant dense<0.0> : tensor<1x4x4xf32>
    return %c : tensor<1x4x4xf32>
  }
}

// -----

// A pipeline module without its schedule table.
// expected-error@+1 {{--ptrain-lower-to-runtime: no ptrain.schedule attribute; run --ptrain-schedule first}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>} {
  ptrain.grid @grid(pp = 1)
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4x4xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %c = arith.constant dense<0.0> : tensor<1x4x4xf32>
    return %c : tensor<1x4x4xf32>
  }
}

// -----

// A table step that is not F<i>, B<i>, FB<i> or O.
// expected-error@+1 {{--ptrain-lower-to-runtime: ptrain.schedule: stage 0 step 0 'X0': expected F<i>, B<i>, FB<i> or O}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>,
    ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["X0", "O"]]>} {
  ptrain.grid @grid(pp = 1)
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4x4xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %c = arith.constant dense<0.0> : tensor<1x4x4xf32>
    return %c : tensor<1x4x4xf32>
  }
}

// -----

// A micro-batch scheduled twice on one stage.
// expected-error@+1 {{--ptrain-lower-to-runtime: ptrain.schedule: stage 0 step 1 'FB0': micro-batch scheduled twice}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>,
    ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "FB0", "O"]]>} {
  ptrain.grid @grid(pp = 1)
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4x4xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %c = arith.constant dense<0.0> : tensor<1x4x4xf32>
    return %c : tensor<1x4x4xf32>
  }
}

// -----

// The stage functions of --ptrain-build-training-step must be there.
// expected-error@+1 {{--ptrain-lower-to-runtime: the pipeline module has no function @stage0_optimizer_step}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>,
    ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]]>} {
  ptrain.grid @grid(pp = 1)
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4x4xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %c = arith.constant dense<0.0> : tensor<1x4x4xf32>
    return %c : tensor<1x4x4xf32>
  }
}

// -----

// With fp16's loss scaler (the state @loss_scaler), each optimizer step returns the skip flag that the training
// step's codec states are kept on (--ptrain-build-training-step precision=fp16 builds it so).
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>,
    ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]]>} {
  ptrain.grid @grid(pp = 1)
  ptrain.state @loss_scaler key "loss_scaler" kind step_counter : tensor<3xf32>
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4x4xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %c = arith.constant dense<0.0> : tensor<1x4x4xf32>
    return %c : tensor<1x4x4xf32>
  }
  // expected-error@+1 {{--ptrain-lower-to-runtime: @stage0_optimizer_step must take 0 argument(s) and return 1 result(s)}}
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
}
