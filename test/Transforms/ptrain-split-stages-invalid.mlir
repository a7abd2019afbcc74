// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect --ptrain-split-stages="pp=2"
// RUN: not ptrain-opt %s --split-input-file --allow-unregistered-dialect --ptrain-split-stages="pp=0" 2>&1 | FileCheck %s --check-prefix=PP0

// There is a forward to split.
// expected-error@+1 {{--ptrain-split-stages: no function @forward}}
module {
  func.func @model(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// A model with one layer has no layer boundary: two stages are more than it has layers.
ptrain.state @w key "w" kind parameter : tensor<8x8xf32>
// expected-error@+1 {{--ptrain-split-stages: pp = 2 needs 1 cut points but @forward has only 0 layer boundaries where a single tensor crosses (more stages than layers)}}
func.func @forward(%x: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  %w = ptrain.state_read @w : tensor<8x8xf32>
  %s = ptrain.matmul %x, %w : tensor<2x8x8xf32>, tensor<8x8xf32>
  %p = ptrain.softmax %s {axis = -1 : i64} : tensor<2x8x8xf32>
  %y = ptrain.binary add %x, %p : tensor<2x8x8xf32>, tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// PP0: error: --ptrain-split-stages: pp must be >= 1, got 0

// -----

// The split runs once: a module that is already split is refused, not split again into clashing symbols.
// expected-error@+1 {{--ptrain-split-stages: the module is already split (it has ptrain.pipeline)}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// The split comes before the training step: a @train_step of the whole model would stay beside the stages.
// expected-error@+1 {{--ptrain-split-stages: the module already has a @train_step; split the forward before --ptrain-build-training-step}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
  func.func @train_step(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// An export with more outputs than the logits (a past key/value state): the error names the importer's
// --signature, which keeps the logits alone.
ptrain.state @w key "w" kind parameter : tensor<8x8xf32>
// expected-error@+1 {{--ptrain-split-stages: @forward must have one result (the logits), got 2; import an export with more outputs (past state) with --signature (e.g. --signature auto; docs/ImportONNX.md)}}
func.func @forward(%x: tensor<2x8x8xf32>) -> (tensor<2x8x8xf32>, tensor<8x8xf32>) {
  %w = ptrain.state_read @w : tensor<8x8xf32>
  %s = ptrain.matmul %x, %w : tensor<2x8x8xf32>, tensor<8x8xf32>
  return %s, %w : tensor<2x8x8xf32>, tensor<8x8xf32>
}
