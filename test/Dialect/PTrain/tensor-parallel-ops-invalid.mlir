// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// tp_copy (C1): the grid is a ptrain.grid.
func.func @tp_copy_c1(%x: tensor<8xf32>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %0 = ptrain.tp_copy %x on @grid axis tp : tensor<8xf32>
  return
}

// -----

// tp_copy (C2): the axis is an axis of the grid.
ptrain.grid @grid(dp = 2, pp = 2)
func.func @tp_copy_c2(%x: tensor<8xf32>) {
  // expected-error@+1 {{collective axes name axis 'tp', but grid @grid has axes ["dp", "pp"]}}
  %0 = ptrain.tp_copy %x on @grid axis tp : tensor<8xf32>
  return
}

// -----

// tp_all_reduce (C1): the grid is a ptrain.grid.
ptrain.state @grid key "grid" kind parameter : tensor<8xf32>
func.func @tp_all_reduce_c1(%x: tensor<8xf32>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %0 = ptrain.tp_all_reduce %x on @grid axis tp : tensor<8xf32>
  return
}

// -----

// tp_all_reduce (C2): the axis is an axis of the grid.
ptrain.grid @grid(tp = 2)
func.func @tp_all_reduce_c2(%x: tensor<8xf32>) {
  // expected-error@+1 {{collective axes name axis 'pp', but grid @grid has axes ["tp"]}}
  %0 = ptrain.tp_all_reduce %x on @grid axis pp : tensor<8xf32>
  return
}

// -----

// Both: the result has the input's type.
ptrain.grid @grid(tp = 2)
func.func @tp_all_reduce_type(%x: tensor<8xf32>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "ptrain.tp_all_reduce"(%x) <{grid = @grid, axis = "tp"}> : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

// tp_split (C1): the grid is a ptrain.grid.
func.func @tp_split_c1(%x: tensor<8xf32>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %0 = ptrain.tp_split %x on @grid axis tp dim 0 : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

// tp_split (C2): the axis is an axis of the grid.
ptrain.grid @grid(dp = 2)
func.func @tp_split_c2(%x: tensor<8xf32>) {
  // expected-error@+1 {{collective axes name axis 'tp', but grid @grid has axes ["dp"]}}
  %0 = ptrain.tp_split %x on @grid axis tp dim 0 : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

// tp_split (C3): dim is a dimension of the input.
ptrain.grid @grid(tp = 2)
func.func @tp_split_c3(%x: tensor<8xf32>) {
  // expected-error@+1 {{dim 1 is not a dimension of 'tensor<8xf32>'}}
  %0 = ptrain.tp_split %x on @grid axis tp dim 1 : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

// tp_split (C4): the other dimensions are the input's.
ptrain.grid @grid(tp = 2)
func.func @tp_split_c4_other(%x: tensor<8x3xf32>) {
  // expected-error@+1 {{result 'tensor<4x2xf32>' must equal the input 'tensor<8x3xf32>' outside dimension 0}}
  %0 = ptrain.tp_split %x on @grid axis tp dim 0 : tensor<8x3xf32> -> tensor<4x2xf32>
  return
}

// -----

// tp_split (C4): dimension `dim` is the input's divided by the axis size.
ptrain.grid @grid(tp = 2)
func.func @tp_split_c4_size(%x: tensor<8x3xf32>) {
  // expected-error@+1 {{result dimension 1 must be 3 / 2 (the size of axis tp), got 'tensor<8x1xf32>'}}
  %0 = ptrain.tp_split %x on @grid axis tp dim 1 : tensor<8x3xf32> -> tensor<8x1xf32>
  return
}

// -----

// tp_all_reduce (C3): a bf16 all-reduce declares its accumulation type.
ptrain.grid @grid(tp = 2)
func.func @tp_all_reduce_c3(%x: tensor<8xbf16>) {
  // expected-error@+1 {{a 'bf16' all-reduce must declare its accumulation type: add {accumulate = f32}}}
  %0 = ptrain.tp_all_reduce %x on @grid axis tp : tensor<8xbf16>
  return
}

// -----

// tp_all_reduce (C3): so does an f16 one.
ptrain.grid @grid(tp = 2)
func.func @tp_all_reduce_c3_f16(%x: tensor<8xf16>) {
  // expected-error@+1 {{a 'f16' all-reduce must declare its accumulation type}}
  %0 = ptrain.tp_all_reduce %x on @grid axis tp : tensor<8xf16>
  return
}

// -----

// tp_all_reduce (C4): the accumulation type is f32.
ptrain.grid @grid(tp = 2)
func.func @tp_all_reduce_c4(%x: tensor<8xbf16>) {
  // expected-error@+1 {{accumulate must be f32, got 'f64'}}
  %0 = ptrain.tp_all_reduce %x on @grid axis tp {accumulate = f64} : tensor<8xbf16>
  return
}

// -----

// tp_all_reduce (C4): accumulate is only for 16-bit inputs.
ptrain.grid @grid(tp = 2)
func.func @tp_all_reduce_c4_f32(%x: tensor<8xf32>) {
  // expected-error@+1 {{accumulate = f32 declares how 16-bit values are summed; the input's element type is 'f32', not bf16 or f16}}
  %0 = ptrain.tp_all_reduce %x on @grid axis tp {accumulate = f32} : tensor<8xf32>
  return
}
