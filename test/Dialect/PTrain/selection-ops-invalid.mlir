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

// Dropout (C4): the layout is a dictionary of known entries.
func.func @dropout_c4_not_dictionary(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout must be a dictionary, got 3 : i64}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = 3 : i64, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C4): an unknown entry.
func.func @dropout_c4_unknown(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout has an unknown entry 'rows' (batch_rows, replica_axis, replica_rows, shard_axis, shard_dim)}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = {rows = 2 : i64}, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C4): an entry of the wrong kind.
func.func @dropout_c4_kind(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout's shard_axis must be a string, got 1 : i64}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = {shard_axis = 1 : i64, shard_dim = 1 : i64}, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C5): shard_axis without shard_dim.
func.func @dropout_c5_alone(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout: shard_axis and shard_dim come together}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = {shard_axis = "tp"}, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C5): the sharded dimension is not the batch's (0) and exists.
func.func @dropout_c5_dim(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout: shard_dim 2 is not in [1, 2)}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = {shard_axis = "tp", shard_dim = 2 : i64}, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C6): batch_rows divides the elements.
func.func @dropout_c6(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout: batch_rows 3 does not divide the input's 32 elements}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = {batch_rows = 3 : i64}, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C7): replica_axis without replica_rows.
func.func @dropout_c7_alone(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout: replica_axis and replica_rows come together}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = {batch_rows = 4 : i64, replica_axis = "dp"}, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  return
}

// -----

// Dropout (C7): replica rows need the batch rows (the row packed into the counter).
func.func @dropout_c7_rows(%x: tensor<4x8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{ptrain.dropout_layout: replica_rows must be >= 1 and needs batch_rows}}
  %0 = ptrain.dropout %x, %t {ptrain.dropout_layout = {replica_axis = "dp", replica_rows = 8 : i64}, ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
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
