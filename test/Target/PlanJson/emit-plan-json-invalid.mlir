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

// A pipeline without its training step (micro-batches).
// expected-error@+1 {{--emit-plan-json: ptrain.pipeline has no training step (micro_batches; run --ptrain-build-training-step)}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@f]>} {
  func.func private @f()
}

// -----

// A pipeline that was not scheduled.
// expected-error@+1 {{--emit-plan-json: a pipeline module needs ptrain.schedule (run --ptrain-schedule)}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@f], micro_batches = 2>} {
  func.func private @f()
}

// -----

// Two grids.
// expected-error@+1 {{--emit-plan-json: more than one ptrain.grid}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@f], micro_batches = 2>,
                   ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["FB0", "FB1", "O"]]>} {
  ptrain.grid @a(pp = 1)
  ptrain.grid @b(pp = 1)
  func.func private @f()
}

// -----

// A first stage without the tokens.
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>,
                   ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]]>} {
  // expected-error@+1 {{--emit-plan-json: @forward_stage0 must take the tokens and @forward_stage0 return the logits}}
  func.func @forward_stage0() -> tensor<2x4x16xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
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
