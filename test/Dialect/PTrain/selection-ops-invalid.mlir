// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// Compare (C1): one element type.
func.func @compare_c1(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error@+1 {{operands must have the same element type}}
  %0 = ptrain.compare eq %a, %b : tensor<4xf32>, tensor<4xi64>
  return
}

// -----

// Compare (C1): logical kinds need i1.
func.func @compare_c1_logical(%a: tensor<4xi64>, %b: tensor<4xi64>) {
  // expected-error@+1 {{'and' needs i1 operands, got 'tensor<4xi64>'}}
  %0 = ptrain.compare and %a, %b : tensor<4xi64>, tensor<4xi64>
  return
}

// -----

// Compare (C2): shapes broadcast.
func.func @compare_c2(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{shapes 4 and 3 do not broadcast}}
  %0 = ptrain.compare lt %a, %b : tensor<4xf32>, tensor<3xf32>
  return
}

// -----

// Select (C1): lhs and rhs of one element type.
func.func @select_c1(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf64>) {
  // expected-error@+1 {{lhs and rhs must have the same element type}}
  %0 = ptrain.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf64>
  return
}

// -----

// Select (C2): the three shapes broadcast.
func.func @select_c2(%c: tensor<5xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{shapes 5, 4 and 4 do not broadcast}}
  %0 = ptrain.select %c, %a, %b : tensor<5xi1>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// Reduce (C1): axes in range.
func.func @reduce_c1(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0 = "ptrain.reduce"(%x) <{kind = #ptrain<reduce_kind sum>, axes = array<i64: 2>, keepdims = false}> : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// Reduce (C1): no repeated axis.
func.func @reduce_c1_repeat(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{axis -1 is repeated}}
  %0 = "ptrain.reduce"(%x) <{kind = #ptrain<reduce_kind sum>, axes = array<i64: 1, -1>, keepdims = false}> : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// Reduce (C2): max over a zero-size dimension has no value.
func.func @reduce_c2(%x: tensor<4x0xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{max over the zero-size dimension 1}}
  %0 = "ptrain.reduce"(%x) <{kind = #ptrain<reduce_kind max>, axes = array<i64: 1>, keepdims = false}> : (tensor<4x0xf32>) -> tensor<4xf32>
  return
}

// -----

// Reduce (C3): the result shape.
func.func @reduce_c3(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<4x1xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  %0 = ptrain.reduce sum %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Cast (C1): the shape is kept.
func.func @cast_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{must keep the shape}}
  %0 = ptrain.cast %x : tensor<4x8xf32> -> tensor<8x4xbf16>
  return
}

// -----

// BroadcastTo (C1): the input broadcasts to the result.
func.func @broadcast_to_c1(%x: tensor<3x8xf32>) {
  // expected-error@+1 {{input 'tensor<3x8xf32>' does not broadcast to 'tensor<4x8xf32>'}}
  %0 = ptrain.broadcast_to %x : tensor<3x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Gather (C1): axis in range.
func.func @gather_c1(%x: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0 = ptrain.gather %x, %i {axis = 2 : i64} : tensor<4x8xf32>, tensor<2xi64> -> tensor<4x2xf32>
  return
}

// -----

// Gather (C2): the result shape.
func.func @gather_c2(%x: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<4x2xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf32>'}}
  %0 = ptrain.gather %x, %i {axis = 1 : i64} : tensor<4x8xf32>, tensor<2xi64> -> tensor<2x8xf32>
  return
}

// -----

// LogSoftmax (C1): axis in range.
func.func @log_softmax_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0 = ptrain.log_softmax %x {axis = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

// Dropout (C1): the ratio is in [0, 1).
func.func @dropout_c1(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ratio 1.000000e+00 is not in [0, 1)}}
  %0 = ptrain.dropout %x, %t {ratio = 1.0 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C1): a negative ratio.
func.func @dropout_c1_negative(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ratio -5.000000e-01 is not in [0, 1)}}
  %0 = ptrain.dropout %x, %t {ratio = -0.5 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C2): the counter is a rank-0 i64 tensor.
func.func @dropout_c2(%x: tensor<4x8xf32>, %t: tensor<1xi64>) {
  // expected-error@+1 {{counter must be a rank-0 i64 tensor (the step counter), got 'tensor<1xi64>'}}
  %0 = ptrain.dropout %x, %t {ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<1xi64>
  return
}

// -----

// Dropout (C4): the layout is a #ptrain.dropout_layout (whose entries are checked by the attribute:
// plan-attrs-invalid.mlir, @dropout_layout_c1 to _c3).
func.func @dropout_c4(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout must be a #ptrain.dropout_layout, got {batch_rows = 2 : i64}}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = {batch_rows = 2 : i64}, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C5): the sharded dimension exists.
func.func @dropout_c5(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout: shard_dim 2 is not in [1, 2)}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = #ptrain.dropout_layout<shard_axis = "tp", shard_dim = 2>, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C6): batch_rows divides the elements.
func.func @dropout_c6(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout: batch_rows 3 does not divide the input's 32 elements}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 3>, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C3): the result has the input's type.
func.func @dropout_c3(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf16>'}}
  %0 = "ptrain.dropout"(%x, %t) {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf16>
  return
}
