// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// tp_all_gather (C1): the grid is a ptrain.grid.
func.func @tp_all_gather_c1(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %0 = ptrain.tp_all_gather %x on @grid axis tp dim 1 : tensor<2x3xf32> -> tensor<2x6xf32>
  return
}

// -----

// tp_all_gather (C2): the axis is an axis of the grid.
ptrain.grid @grid(dp = 2)
func.func @tp_all_gather_c2(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{collective axes name axis 'tp', but grid @grid has axes ["dp"]}}
  %0 = ptrain.tp_all_gather %x on @grid axis tp dim 1 : tensor<2x3xf32> -> tensor<2x6xf32>
  return
}

// -----

// tp_all_gather (C3): dim is a dimension of the input.
ptrain.grid @grid(tp = 2)
func.func @tp_all_gather_c3(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{dim 2 is not a dimension of 'tensor<2x3xf32>'}}
  %0 = ptrain.tp_all_gather %x on @grid axis tp dim 2 : tensor<2x3xf32> -> tensor<2x6xf32>
  return
}

// -----

// tp_all_gather (C4): the gathered dimension is the input's times the axis' size.
ptrain.grid @grid(tp = 2)
func.func @tp_all_gather_c4(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{result dimension 1 must be 3 x 2 (the size of axis tp), got 'tensor<2x9xf32>'}}
  %0 = ptrain.tp_all_gather %x on @grid axis tp dim 1 : tensor<2x3xf32> -> tensor<2x9xf32>
  return
}

// -----

// tp_all_gather (C4): the other dimensions are the input's.
ptrain.grid @grid(tp = 2)
func.func @tp_all_gather_c4_other(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{must equal the input 'tensor<2x3xf32>' outside dimension 1}}
  %0 = ptrain.tp_all_gather %x on @grid axis tp dim 1 : tensor<2x3xf32> -> tensor<4x6xf32>
  return
}

// -----

// vocab_parallel_embedding (C1): the grid is a ptrain.grid.
func.func @embedding_c1(%t: tensor<5x4xf32>, %ids: tensor<2x3xi64>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %0 = ptrain.vocab_parallel_embedding %t, %ids on @grid axis tp : tensor<5x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  return
}

// -----

// vocab_parallel_embedding (C2): the axis is an axis of the grid.
ptrain.grid @grid(pp = 2)
func.func @embedding_c2(%t: tensor<5x4xf32>, %ids: tensor<2x3xi64>) {
  // expected-error@+1 {{collective axes name axis 'tp', but grid @grid has axes ["pp"]}}
  %0 = ptrain.vocab_parallel_embedding %t, %ids on @grid axis tp : tensor<5x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  return
}

// -----

// vocab_parallel_embedding (C3): a 2-D float table.
ptrain.grid @grid(tp = 2)
func.func @embedding_c3(%t: tensor<5xf32>, %ids: tensor<2x3xi64>) {
  // expected-error@+1 {{table must be a 2-D float tensor (Vl x H), got 'tensor<5xf32>'}}
  %0 = ptrain.vocab_parallel_embedding %t, %ids on @grid axis tp : tensor<5xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  return
}

// -----

// vocab_parallel_embedding (C3): integer ids.
ptrain.grid @grid(tp = 2)
func.func @embedding_c3_ids(%t: tensor<5x4xf32>, %ids: tensor<2x3xf32>) {
  // expected-error@+1 {{ids must be integers, got 'tensor<2x3xf32>'}}
  %0 = ptrain.vocab_parallel_embedding %t, %ids on @grid axis tp : tensor<5x4xf32>, tensor<2x3xf32> -> tensor<2x3x4xf32>
  return
}

// -----

// vocab_parallel_embedding (C4): the result is ids.shape x H.
ptrain.grid @grid(tp = 2)
func.func @embedding_c4(%t: tensor<5x4xf32>, %ids: tensor<2x3xi64>) {
  // expected-error@+1 {{result must be ids.shape x H with the table's element type, got 'tensor<2x3x5xf32>'}}
  %0 = ptrain.vocab_parallel_embedding %t, %ids on @grid axis tp : tensor<5x4xf32>, tensor<2x3xi64> -> tensor<2x3x5xf32>
  return
}

// -----

// vocab_parallel_embedding_grad (C1): the grid is a ptrain.grid.
func.func @embedding_grad_c1(%g: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %0 = ptrain.vocab_parallel_embedding_grad %g, %ids on @grid axis tp : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<5x4xf32>
  return
}

// -----

// vocab_parallel_embedding_grad (C2): the axis is an axis of the grid.
ptrain.grid @grid(dp = 2)
func.func @embedding_grad_c2(%g: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>) {
  // expected-error@+1 {{collective axes name axis 'tp', but grid @grid has axes ["dp"]}}
  %0 = ptrain.vocab_parallel_embedding_grad %g, %ids on @grid axis tp : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<5x4xf32>
  return
}

// -----

// vocab_parallel_embedding_grad (C3): grad is ids.shape x H.
ptrain.grid @grid(tp = 2)
func.func @embedding_grad_c3(%g: tensor<2x3x3xf32>, %ids: tensor<2x3xi64>) {
  // expected-error@+1 {{grad must be ids.shape x H with the table's element type, got 'tensor<2x3x3xf32>'}}
  %0 = ptrain.vocab_parallel_embedding_grad %g, %ids on @grid axis tp : tensor<2x3x3xf32>, tensor<2x3xi64> -> tensor<5x4xf32>
  return
}

// -----

// vocab_parallel_cross_entropy_parts (C1): the grid is a ptrain.grid.
func.func @parts_c1(%l: tensor<2x3xf32>, %y: tensor<2xi64>, %m: tensor<2xf32>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %0:2 = ptrain.vocab_parallel_cross_entropy_parts %l, %y, %m on @grid axis tp {vocab = 5 : i64} : tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>
  return
}

// -----

// vocab_parallel_cross_entropy_parts (C2): the axis is an axis of the grid.
ptrain.grid @grid(pp = 2)
func.func @parts_c2(%l: tensor<2x3xf32>, %y: tensor<2xi64>, %m: tensor<2xf32>) {
  // expected-error@+1 {{collective axes name axis 'tp', but grid @grid has axes ["pp"]}}
  %0:2 = ptrain.vocab_parallel_cross_entropy_parts %l, %y, %m on @grid axis tp {vocab = 5 : i64} : tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>
  return
}

// -----

// vocab_parallel_cross_entropy_parts (C3): labels of the logits' leading shape.
ptrain.grid @grid(tp = 2)
func.func @parts_c3(%l: tensor<2x3xf32>, %y: tensor<3xi64>, %m: tensor<3xf32>) {
  // expected-error@+1 {{labels must be integers of the logits' shape without the class dimension, got 'tensor<3xi64>'}}
  %0:2 = ptrain.vocab_parallel_cross_entropy_parts %l, %y, %m on @grid axis tp {vocab = 5 : i64} : tensor<2x3xf32>, tensor<3xi64>, tensor<3xf32>
  return
}

// -----

// vocab_parallel_cross_entropy_parts (C3): max of the labels' shape and the logits' element type.
ptrain.grid @grid(tp = 2)
func.func @parts_c3_max(%l: tensor<2x3xf32>, %y: tensor<2xi64>, %m: tensor<2xf64>) {
  // expected-error@+1 {{max and the per-position sums must have the labels' shape and the logits' element type, got 'tensor<2xf64>'}}
  %0:2 = ptrain.vocab_parallel_cross_entropy_parts %l, %y, %m on @grid axis tp {vocab = 5 : i64} : tensor<2x3xf32>, tensor<2xi64>, tensor<2xf64>
  return
}

// -----

// vocab_parallel_cross_entropy_parts (C4): vocab >= 1.
ptrain.grid @grid(tp = 2)
func.func @parts_c4(%l: tensor<2x3xf32>, %y: tensor<2xi64>, %m: tensor<2xf32>) {
  // expected-error@+1 {{vocab must be >= 1, got 0}}
  %0:2 = ptrain.vocab_parallel_cross_entropy_parts %l, %y, %m on @grid axis tp {vocab = 0 : i64} : tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>
  return
}

// -----

// vocab_parallel_cross_entropy_parts_grad (C1): the grid is a ptrain.grid.
func.func @parts_grad_c1(%d: tensor<2xf32>, %l: tensor<2x3xf32>, %y: tensor<2xi64>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %0 = ptrain.vocab_parallel_cross_entropy_parts_grad %d, %d, %l, %y, %d on @grid axis tp {vocab = 5 : i64} : tensor<2xf32>, tensor<2x3xf32>, tensor<2xi64>
  return
}

// -----

// vocab_parallel_cross_entropy_parts_grad (C2): the axis is an axis of the grid.
ptrain.grid @grid(dp = 2)
func.func @parts_grad_c2(%d: tensor<2xf32>, %l: tensor<2x3xf32>, %y: tensor<2xi64>) {
  // expected-error@+1 {{collective axes name axis 'tp', but grid @grid has axes ["dp"]}}
  %0 = ptrain.vocab_parallel_cross_entropy_parts_grad %d, %d, %l, %y, %d on @grid axis tp {vocab = 5 : i64} : tensor<2xf32>, tensor<2x3xf32>, tensor<2xi64>
  return
}

// -----

// vocab_parallel_cross_entropy_parts_grad (C3): labels of the logits' leading shape.
ptrain.grid @grid(tp = 2)
func.func @parts_grad_c3(%d: tensor<3xf32>, %l: tensor<2x3xf32>, %y: tensor<3xi64>) {
  // expected-error@+1 {{labels must be integers of the logits' shape without the class dimension, got 'tensor<3xi64>'}}
  %0 = ptrain.vocab_parallel_cross_entropy_parts_grad %d, %d, %l, %y, %d on @grid axis tp {vocab = 5 : i64} : tensor<3xf32>, tensor<2x3xf32>, tensor<3xi64>
  return
}

// -----

// vocab_parallel_cross_entropy_parts_grad (C4): vocab >= 1.
ptrain.grid @grid(tp = 2)
func.func @parts_grad_c4(%d: tensor<2xf32>, %l: tensor<2x3xf32>, %y: tensor<2xi64>) {
  // expected-error@+1 {{vocab must be >= 1, got -1}}
  %0 = ptrain.vocab_parallel_cross_entropy_parts_grad %d, %d, %l, %y, %d on @grid axis tp {vocab = -1 : i64} : tensor<2xf32>, tensor<2x3xf32>, tensor<2xi64>
  return
}
