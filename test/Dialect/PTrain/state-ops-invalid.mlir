// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// State (C1): a static shape.
// expected-error@+1 {{state type must have a static shape, got 'tensor<?x128xf32>'}}
ptrain.state @w key "w" kind parameter : tensor<?x128xf32>

// -----

// State (C2): a key.
// expected-error@+1 {{state key must not be empty}}
ptrain.state @w key "" kind parameter : tensor<4xf32>

// -----

// State (C3): keys are unique: two symbols with one key would share a checkpoint entry.
// expected-note@+1 {{first use of the key}}
ptrain.state @w key "transformer.h.0.attn.c_attn.weight" kind parameter : tensor<4xf32>
ptrain.state @x key "other" kind parameter : tensor<4xf32>
// expected-error@+1 {{state key "transformer.h.0.attn.c_attn.weight" is already used by @w}}
ptrain.state @v key "transformer.h.0.attn.c_attn.weight" kind optimizer_moment : tensor<4xf32>

// -----

// State (C4): only a parameter has a default initial value (moments and codec states start at zero).
// expected-error@+1 {{a ptrain.init is only for a parameter, got kind optimizer_moment}}
ptrain.state @m key "ae/0->1/encoder/adam_m" kind optimizer_moment {ptrain.init = {kind = "orthogonal", seed = 0 : i64}} : tensor<128x64xf32>

// -----

// State (C5): a known generator.
// expected-error@+1 {{ptrain.init must be {kind = "orthogonal" or "orthogonal_transposed", seed = S} with an integer S >= 0, got {kind = "xavier", seed = 0 : i64}}}
ptrain.state @w key "w" kind parameter {ptrain.init = {kind = "xavier", seed = 0 : i64}} : tensor<4x4xf32>

// -----

// State (C5): the seed is not negative.
// expected-error@+1 {{ptrain.init must be {kind = "orthogonal" or "orthogonal_transposed", seed = S} with an integer S >= 0, got {kind = "orthogonal", seed = -1 : i64}}}
ptrain.state @w key "w" kind parameter {ptrain.init = {kind = "orthogonal", seed = -1 : i64}} : tensor<4x4xf32>

// -----

// State (C5): a dictionary of exactly kind and seed.
// expected-error@+1 {{ptrain.init must be {kind = "orthogonal" or "orthogonal_transposed", seed = S} with an integer S >= 0, got "orthogonal"}}
ptrain.state @w key "w" kind parameter {ptrain.init = "orthogonal"} : tensor<4x4xf32>

// -----

// State (C6): an orthogonal init is a matrix of f32.
// expected-error@+1 {{an orthogonal ptrain.init needs a rank-2 f32 tensor, got 'tensor<4x64x128xf32>'}}
ptrain.state @w key "w" kind parameter {ptrain.init = {kind = "orthogonal", seed = 0 : i64}} : tensor<4x64x128xf32>

// -----

// State (C6): an orthogonal init is a matrix of f32, not of integers.
// expected-error@+1 {{an orthogonal ptrain.init needs a rank-2 f32 tensor, got 'tensor<4x4xi64>'}}
ptrain.state @w key "w" kind parameter {ptrain.init = {kind = "orthogonal", seed = 0 : i64}} : tensor<4x4xi64>

// -----

// StateRead (C1): the symbol is a ptrain.state.
ptrain.grid @grid(dp = 2)
func.func @state_read_c1() {
  // expected-error@+1 {{@grid does not name a ptrain.state}}
  %0 = ptrain.state_read @grid : tensor<4xf32>
  return
}

// -----

// StateRead (C2): the result type is the state's type.
ptrain.state @w key "w" kind parameter : tensor<4xf32>
func.func @state_read_c2() {
  // expected-error@+1 {{type 'tensor<8xf32>' differs from the type 'tensor<4xf32>' of state @w}}
  %0 = ptrain.state_read @w : tensor<8xf32>
  return
}

// -----

// StateWrite (C1): the symbol is a ptrain.state.
func.func @state_write_c1(%v: tensor<4xf32>) {
  // expected-error@+1 {{@missing does not name a ptrain.state}}
  ptrain.state_write %v to @missing : tensor<4xf32>
  return
}

// -----

// StateWrite (C2): an update has the state's type.
ptrain.state @w key "w" kind parameter : tensor<4xf32>
func.func @state_write_c2(%v: tensor<4xf16>) {
  // expected-error@+1 {{type 'tensor<4xf16>' differs from the type 'tensor<4xf32>' of state @w}}
  ptrain.state_write %v to @w : tensor<4xf16>
  return
}
