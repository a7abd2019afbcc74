// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-insert-linear-ae="dim=4"

// (C1) The autoencoder sits on stage boundaries: the module must be split.
// expected-error@+1 {{--ptrain-insert-linear-ae: no ptrain.pipeline with stages; run --ptrain-split-stages first}}
module @not_split {
}

// -----

// (C2) Its weights are parameters that autodiff must see: the training step must not be built yet.
// expected-error@+1 {{--ptrain-insert-linear-ae: the training step is already built (@stage0_backward): the autoencoder's weights must be parameters before autodiff, so run --ptrain-insert-linear-ae between --ptrain-split-stages and --ptrain-build-training-step}}
module @built attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 1>} {
  func.func @forward_stage0(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    return %x : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    return %h : tensor<2x4x8xf32>
  }
}

// -----

// (C5) The code is a matmul over the last dimension of a batched activation: a vector boundary is refused.
// expected-error@+1 {{--ptrain-insert-linear-ae: stage 0 -> 1: the boundary tensor must be a static float tensor of rank >= 2 that the next stage takes, got 'tensor<8xf32>'}}
module @vector_boundary attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>} {
  func.func @forward_stage0(%x: tensor<8xf32>) -> tensor<8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    return %x : tensor<8xf32>
  }
  func.func @forward_stage1(%h: tensor<8xf32>) -> tensor<8xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    return %h : tensor<8xf32>
  }
}
