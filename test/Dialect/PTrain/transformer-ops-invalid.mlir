// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// (C1) rms_norm's axis is in [-rank, rank).
func.func @rms_norm_c1(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error@+1 {{(C1) axis 2 is out of range for rank 2}}
  %y = ptrain.rms_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8xf32>, tensor<8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// (C2) rms_norm's scale has the shape x.shape[axis:].
func.func @rms_norm_c2(%x: tensor<2x8xf32>, %g: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error@+1 {{(C2) scale must be 'tensor<8xf32>' (x.shape[axis:]), got 'tensor<2x8xf32>'}}
  %y = ptrain.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8xf32>, tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// (C3) rms_norm's epsilon is >= 0.
func.func @rms_norm_c3(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error@+1 {{(C3) epsilon must be >= 0, got -1}}
  %y = ptrain.rms_norm %x, %g {axis = -1 : i64, epsilon = -1.0 : f64} : tensor<2x8xf32>, tensor<8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// (C4) rms_norm's result has x's type.
func.func @rms_norm_c4(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf64> {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'ptrain.rms_norm' op inferred type(s) 'tensor<2x8xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf64>'}}
  %y = "ptrain.rms_norm"(%x, %g) <{axis = -1 : i64, epsilon = 1.0e-05 : f64}> : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf64>
  return %y : tensor<2x8xf64>
}

// -----

// (C1) rotary_embedding's input is [batch, heads, seq, head_size].
func.func @rotary_c1_rank(%x: tensor<2x16x64xf32>, %c: tensor<2x16x32xf32>) -> tensor<2x16x64xf32> {
  // expected-error@+1 {{(C1) input must be [batch, heads, seq, head_size], got 'tensor<2x16x64xf32>'}}
  %y = ptrain.rotary_embedding %x, %c, %c : tensor<2x16x64xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

// (C1) rotary_embedding's cos and sin are [batch, seq, rotated/2].
func.func @rotary_c1_tables(%x: tensor<2x4x16x8xf32>, %c: tensor<16x4xf32>) -> tensor<2x4x16x8xf32> {
  // expected-error@+1 {{(C1) cos and sin must be 'tensor<2x16x4xf32>' ([batch, seq, rotated/2]), got 'tensor<16x4xf32>'}}
  %y = ptrain.rotary_embedding %x, %c, %c : tensor<2x4x16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>
  return %y : tensor<2x4x16x8xf32>
}

// -----

// (C2) rotary_embedding rotates an even number of channels, at most head_size.
func.func @rotary_c2(%x: tensor<2x4x16x8xf32>, %c: tensor<2x16x5xf32>) -> tensor<2x4x16x8xf32> {
  // expected-error@+1 {{(C2) rotary_dim 10 gives 10 rotated channels; they must be even and in (0, 8]}}
  %y = ptrain.rotary_embedding %x, %c, %c {rotary_dim = 10 : i64}
      : tensor<2x4x16x8xf32>, tensor<2x16x5xf32>, tensor<2x16x5xf32>
  return %y : tensor<2x4x16x8xf32>
}

// -----

// (C3) rotary_embedding's result has the input's type.
func.func @rotary_c3(%x: tensor<2x4x16x8xf32>, %c: tensor<2x16x4xf32>) -> tensor<2x4x16x4xf32> {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'ptrain.rotary_embedding' op inferred type(s) 'tensor<2x4x16x8xf32>' are incompatible with return type(s) of operation 'tensor<2x4x16x4xf32>'}}
  %y = "ptrain.rotary_embedding"(%x, %c, %c) : (tensor<2x4x16x8xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>) -> tensor<2x4x16x4xf32>
  return %y : tensor<2x4x16x4xf32>
}
