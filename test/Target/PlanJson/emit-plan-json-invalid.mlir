// RUN: ptrain-translate --emit-plan-json --split-input-file --verify-diagnostics %s

// A single-rank step without @forward.
// expected-error@+1 {{--emit-plan-json: no @forward(tokens) -> logits function}}
module {
  func.func @train_step(%t: tensor<2x4xi64>) -> tensor<f32> {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A single-rank step without @train_step.
// expected-error@+1 {{--emit-plan-json: no @train_step function}}
module {
  func.func @forward(%t: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
    %l = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %l : tensor<2x4x16xf32>
  }
}

// -----

// Tokens that are not [batch, seq].
module {
  // expected-error@+1 {{--emit-plan-json: the tokens must be [batch, seq] and the logits end in the vocabulary, got 'tensor<8xi64>' and 'tensor<8x16xf32>'}}
  func.func @forward(%t: tensor<8xi64>) -> tensor<8x16xf32> {
    %l = arith.constant dense<0.0> : tensor<8x16xf32>
    return %l : tensor<8x16xf32>
  }
  func.func @train_step(%t: tensor<8xi64>) -> tensor<f32> {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tokens of a dynamic shape.
module {
  // expected-error@+1 {{--emit-plan-json: the tokens must be a tensor of static shape, got 'tensor<?x4xi64>'}}
  func.func @forward(%t: tensor<?x4xi64>) -> tensor<2x4x16xf32> {
    %l = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %l : tensor<2x4x16xf32>
  }
  func.func @train_step(%t: tensor<2x4xi64>) -> tensor<f32> {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A pipeline without its micro-batches.
// expected-error@+1 {{--emit-plan-json: ptrain.pipeline needs integers pp and micro_batches and the stages' forward functions, got {pp = 2 : i64, stages = [@f]}}}
module attributes {ptrain.pipeline = {pp = 2 : i64, stages = [@f]}} {
}

// -----

// A pipeline that was not scheduled.
// expected-error@+1 {{--emit-plan-json: a pipeline module needs ptrain.schedule with a string kind (run --ptrain-schedule)}}
module attributes {ptrain.pipeline = {micro_batches = 2 : i64, pp = 1 : i64, stages = [@f]}} {
}

// -----

// Stages that name no function.
// expected-error@+1 {{--emit-plan-json: ptrain.pipeline's stages must name the stages' forward functions}}
module attributes {ptrain.pipeline = {micro_batches = 2 : i64, pp = 1 : i64, stages = [@f]},
                   ptrain.schedule = {kind = "1f1b"}} {
}

// -----

// Two grids.
// expected-error@+1 {{--emit-plan-json: more than one ptrain.grid}}
module attributes {ptrain.pipeline = {micro_batches = 2 : i64, pp = 1 : i64, stages = [@f]},
                   ptrain.schedule = {kind = "1f1b"}} {
  ptrain.grid @a(pp = 1)
  ptrain.grid @b(pp = 1)
}

// -----

// ptrain.pipeline that is not a dictionary.
// expected-error@+1 {{--emit-plan-json: ptrain.pipeline must be a dictionary}}
module attributes {ptrain.pipeline = 2 : i64} {
}

// -----

// A first stage without the tokens.
module attributes {ptrain.pipeline = {micro_batches = 1 : i64, pp = 1 : i64, stages = [@forward_stage0]},
                   ptrain.schedule = {kind = "1f1b"}} {
  // expected-error@+1 {{--emit-plan-json: @forward_stage0 must take the tokens and @forward_stage0 return the logits}}
  func.func @forward_stage0() -> tensor<2x4x16xf32> attributes {ptrain.stage = 0 : i64} {
    %l = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %l : tensor<2x4x16xf32>
  }
}

// -----

// A result of @train_step of a dynamic shape.
module {
  func.func @forward(%t: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
    %l = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %l : tensor<2x4x16xf32>
  }
  // expected-error@+1 {{--emit-plan-json: a result of @train_step must be a tensor of static shape, got 'tensor<?xf32>'}}
  func.func @train_step(%t: tensor<2x4xi64>, %g: tensor<?xf32>) -> tensor<?xf32> {
    return %g : tensor<?xf32>
  }
}
