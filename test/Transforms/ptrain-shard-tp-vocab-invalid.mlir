// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --ptrain-shard-tp="tp=2 vocab-parallel=true"

// Where the vocabulary-parallel split cannot apply: each an error naming the op.

// No LM head (no matmul that --ptrain-raise marked lm_head).
ptrain.state @wte key "wte" kind parameter : tensor<10x4xf32>
// expected-error@+1 {{--ptrain-shard-tp: vocab-parallel=true needs the LM head}}
func.func @forward(%ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> attributes {ptrain.layers = 0 : i64} {
  %w = ptrain.state_read @wte : tensor<10x4xf32>
  %x = ptrain.embedding %w, %ids : tensor<10x4xf32>, tensor<2x3xi64>
  return %x : tensor<2x3x4xf32>
}

// -----

// The head's weight is not a parameter (an activation).
ptrain.state @wte key "wte" kind parameter : tensor<10x4xf32>
func.func @forward(%ids: tensor<2x3xi64>, %w2: tensor<4x10xf32>) -> tensor<2x3x10xf32> attributes {ptrain.layers = 0 : i64} {
  %w = ptrain.state_read @wte : tensor<10x4xf32>
  %x = ptrain.embedding %w, %ids : tensor<10x4xf32>, tensor<2x3xi64>
  // expected-error@+1 {{('ptrain.matmul'): the LM head's weight is not a 2-D parameter}}
  %y = ptrain.matmul %x, %w2 {ptrain.linear = {layer = 0 : i64, role = "lm_head"}} : tensor<2x3x4xf32>, tensor<4x10xf32>
  return %y : tensor<2x3x10xf32>
}

// -----

// The logits have another use than the forward's result.
ptrain.state @wte key "wte" kind parameter : tensor<10x4xf32>
func.func @forward(%ids: tensor<2x3xi64>) -> (tensor<2x3x10xf32>, tensor<2x3x10xf32>) attributes {ptrain.layers = 0 : i64} {
  %w = ptrain.state_read @wte : tensor<10x4xf32>
  %x = ptrain.embedding %w, %ids : tensor<10x4xf32>, tensor<2x3xi64>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<10x4xf32> -> tensor<4x10xf32>
  // expected-error@+1 {{('ptrain.matmul'): the LM head's logits must be the forward's first result and have no other use}}
  %y = ptrain.matmul %x, %wt {ptrain.linear = {layer = 0 : i64, role = "lm_head"}} : tensor<2x3x4xf32>, tensor<4x10xf32>
  %z = ptrain.unary exp %y : tensor<2x3x10xf32>
  return %y, %z : tensor<2x3x10xf32>, tensor<2x3x10xf32>
}

// -----

// The tied table is read by a third op.
ptrain.state @wte key "wte" kind parameter : tensor<10x4xf32>
func.func @forward(%ids: tensor<2x3xi64>) -> (tensor<2x3x10xf32>, tensor<10x4xf32>) attributes {ptrain.layers = 0 : i64} {
  %w = ptrain.state_read @wte : tensor<10x4xf32>
  %x = ptrain.embedding %w, %ids : tensor<10x4xf32>, tensor<2x3xi64>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<10x4xf32> -> tensor<4x10xf32>
  %y = ptrain.matmul %x, %wt {ptrain.linear = {layer = 0 : i64, role = "lm_head"}} : tensor<2x3x4xf32>, tensor<4x10xf32>
  // expected-error@+1 {{('ptrain.unary'): reads the vocabulary-parallel parameter 'wte' besides the token embedding and the LM head}}
  %n = ptrain.unary neg %w : tensor<10x4xf32>
  return %y, %n : tensor<2x3x10xf32>, tensor<10x4xf32>
}

// -----

// No embedding of the tokens (the first argument).
ptrain.state @head key "head" kind parameter : tensor<4x10xf32>
// expected-error@+1 {{--ptrain-shard-tp: vocab-parallel=true needs the token embedding}}
func.func @forward(%x: tensor<2x3x4xf32>) -> tensor<2x3x10xf32> attributes {ptrain.layers = 0 : i64} {
  %w = ptrain.state_read @head : tensor<4x10xf32>
  %y = ptrain.matmul %x, %w {ptrain.linear = {layer = 0 : i64, role = "lm_head"}} : tensor<2x3x4xf32>, tensor<4x10xf32>
  return %y : tensor<2x3x10xf32>
}
