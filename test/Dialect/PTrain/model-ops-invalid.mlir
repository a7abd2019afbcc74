// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// Embedding (C1): a 2-D table.
func.func @embedding_c1(%t: tensor<4x8x16xf32>, %ids: tensor<2xi64>) {
  // expected-error@+1 {{table must be 2-D (V x H), got 'tensor<4x8x16xf32>'}}
  %0 = ptrain.embedding %t, %ids : tensor<4x8x16xf32>, tensor<2xi64>
  return
}

// -----

// Embedding (C2): integer ids.
func.func @embedding_c2(%t: tensor<8x16xf32>, %ids: tensor<2xf32>) {
  // expected-error@+1 {{operand #1 must be ranked tensor of signless integer values}}
  %0 = ptrain.embedding %t, %ids : tensor<8x16xf32>, tensor<2xf32>
  return
}

// -----

// Embedding (C3): the result is ids.shape x H (generic form).
func.func @embedding_c3(%t: tensor<8x16xf32>, %ids: tensor<2xi64>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<2x16xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf32>'}}
  %0 = "ptrain.embedding"(%t, %ids) : (tensor<8x16xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  return
}

// -----

// Binary (C1): one element type.
func.func @binary_c1(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+1 {{operands must have the same element type, got 'tensor<4xf32>' and 'tensor<4xf16>'}}
  %0 = ptrain.binary add %a, %b : tensor<4xf32>, tensor<4xf16>
  return
}

// -----

// Binary (C2): broadcastable shapes.
func.func @binary_c2(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{shapes 4x3 and 4 do not broadcast}}
  %0 = ptrain.binary mul %a, %b : tensor<4x3xf32>, tensor<4xf32>
  return
}

// -----

// Binary (C3): the broadcast result shape (generic form).
func.func @binary_c3(%a: tensor<4x1xf32>, %b: tensor<3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  %0 = "ptrain.binary"(%a, %b) <{kind = #ptrain<binary_kind sub>}> : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Matmul (C1): rank >= 2.
func.func @matmul_c1(%a: tensor<4xf32>, %b: tensor<4x3xf32>) {
  // expected-error@+1 {{operands must have rank >= 2, got 'tensor<4xf32>' and 'tensor<4x3xf32>'}}
  %0 = ptrain.matmul %a, %b : tensor<4xf32>, tensor<4x3xf32>
  return
}

// -----

// Matmul (C2): equal contracted dimensions.
func.func @matmul_c2(%a: tensor<2x4xf32>, %b: tensor<5x3xf32>) {
  // expected-error@+1 {{contracted dimensions differ: 2x4 x 5x3}}
  %0 = ptrain.matmul %a, %b : tensor<2x4xf32>, tensor<5x3xf32>
  return
}

// -----

// Matmul (C3): broadcastable batch dimensions.
func.func @matmul_c3(%a: tensor<3x2x4xf32>, %b: tensor<2x4x3xf32>) {
  // expected-error@+1 {{batch dimensions of 3x2x4 and 2x4x3 do not broadcast}}
  %0 = ptrain.matmul %a, %b : tensor<3x2x4xf32>, tensor<2x4x3xf32>
  return
}

// -----

// Matmul (C4): the inferred result (generic form).
func.func @matmul_c4(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  %0 = "ptrain.matmul"(%a, %b) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

// Matmul (C5): accumulate is f32.
func.func @matmul_c5_type(%a: tensor<2x4xbf16>, %b: tensor<4x3xbf16>) {
  // expected-error@+1 {{accumulate must be f32, got 'f16'}}
  %0 = ptrain.matmul %a, %b {accumulate = f16} : tensor<2x4xbf16>, tensor<4x3xbf16>
  return
}

// -----

// Matmul (C5): accumulate = f32 reads 16-bit (bf16 or f16) operands.
func.func @matmul_c5_operands(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) {
  // expected-error@+1 {{accumulate = f32 needs 16-bit operands (bf16 or f16), got 'tensor<2x4xf32>' and 'tensor<4x3xf32>'}}
  %0 = ptrain.matmul %a, %b {accumulate = f32} : tensor<2x4xf32>, tensor<4x3xf32>
  return
}

// -----

// Matmul (C1): a bf16 and an f16 operand do not mix, with accumulate too.
func.func @matmul_c1_mixed_16bit(%a: tensor<2x4xbf16>, %b: tensor<4x3xf16>) {
  // expected-error@+1 {{same element type}}
  %0 = ptrain.matmul %a, %b {accumulate = f32} : tensor<2x4xbf16>, tensor<4x3xf16>
  return
}

// -----

// Matmul (C4): with accumulate, the result has its type (generic form).
func.func @matmul_c4_accumulate(%a: tensor<2x4xbf16>, %b: tensor<4x3xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xbf16>'}}
  %0 = "ptrain.matmul"(%a, %b) <{accumulate = f32}> : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
  return
}

// -----

// LayerNorm (C1): axis in range.
func.func @layer_norm_c1(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0 = ptrain.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

// LayerNorm (C2): scale has the normalized shape.
func.func @layer_norm_c2(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{scale must be 'tensor<8xf32>' (the input's dimensions from axis 1), got 'tensor<4xf32>'}}
  %0 = ptrain.layer_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// LayerNorm (C2): bias has the normalized shape.
func.func @layer_norm_c2_bias(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+1 {{bias must be 'tensor<8xf32>' (the input's dimensions from axis 1), got 'tensor<4x8xf32>'}}
  %0 = ptrain.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>
  return
}

// -----

// LayerNorm (C3): epsilon > 0.
func.func @layer_norm_c3(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{epsilon must be > 0, got 0}}
  %0 = ptrain.layer_norm %x, %g {axis = -1 : i64, epsilon = 0.0 : f64} : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

// LayerNorm (C4): the result has the input's type (generic form).
func.func @layer_norm_c4(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  %0 = "ptrain.layer_norm"(%x, %g) <{axis = -1 : i64, epsilon = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Softmax (C1): axis in range.
func.func @softmax_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{axis -3 is out of range for rank 2}}
  %0 = ptrain.softmax %x {axis = -3 : i64} : tensor<4x8xf32>
  return
}

// -----

// Reshape (C1): the same element count.
func.func @reshape_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{must keep the element count: 'tensor<4x8xf32>' has 32, 'tensor<4x4xf32>' has 16}}
  %0 = ptrain.reshape %x : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

// Reshape (C1): static shapes.
func.func @reshape_c1_static(%x: tensor<?x8xf32>) {
  // expected-error@+1 {{needs static shapes, got 'tensor<?x8xf32>' -> 'tensor<32xf32>'}}
  %0 = ptrain.reshape %x : tensor<?x8xf32> -> tensor<32xf32>
  return
}

// -----

// Transpose (C1): a permutation.
func.func @transpose_c1(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{perm [0, 0] is not a permutation of the 2 dimensions of 'tensor<4x8xf32>'}}
  %0 = ptrain.transpose %x {perm = array<i64: 0, 0>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

// Transpose (C2): the permuted shape.
func.func @transpose_c2(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<8x4xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  %0 = ptrain.transpose %x {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Split (C1): axis in range.
func.func @split_c1(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0:2 = ptrain.split %x {axis = 2 : i64, sizes = array<i64: 4, 4>} : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  return
}

// -----

// Split (C2): the sizes add up to the dimension.
func.func @split_c2(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{sizes add up to 6 but dimension 1 of 'tensor<4x8xf32>' is 8}}
  %0:2 = ptrain.split %x {axis = 1 : i64, sizes = array<i64: 4, 2>} : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x2xf32>
  return
}

// -----

// Split (C2): sizes >= 0.
func.func @split_c2_negative(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{sizes must be >= 0, got -4}}
  %0:2 = ptrain.split %x {axis = 1 : i64, sizes = array<i64: 12, -4>} : tensor<4x8xf32> -> tensor<4x12xf32>, tensor<4x4xf32>
  return
}

// -----

// Split (C3): one result per size.
func.func @split_c3(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<4x4xf32>', 'tensor<4x4xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  %0 = ptrain.split %x {axis = 1 : i64, sizes = array<i64: 4, 4>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// CrossEntropy (C1): labels have the logits' leading shape.
func.func @cross_entropy_c1(%l: tensor<4x8x256xf32>, %y: tensor<4x7xi64>) {
  // expected-error@+1 {{labels 'tensor<4x7xi64>' must have the logits' shape without the class dimension, got logits 'tensor<4x8x256xf32>'}}
  %0 = ptrain.cross_entropy %l, %y : tensor<4x8x256xf32>, tensor<4x7xi64>
  return
}

// -----

// CrossEntropy (C2): integer labels.
func.func @cross_entropy_c2(%l: tensor<4x256xf32>, %y: tensor<4xf32>) {
  // expected-error@+1 {{operand #1 must be ranked tensor of signless integer values}}
  %0 = ptrain.cross_entropy %l, %y : tensor<4x256xf32>, tensor<4xf32>
  return
}

// -----

// CrossEntropy (C3): a scalar loss (generic form).
func.func @cross_entropy_c3(%l: tensor<4x256xf32>, %y: tensor<4xi64>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  %0 = "ptrain.cross_entropy"(%l, %y) : (tensor<4x256xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

// CrossEntropy (C4): class weights are [C] of the logits' element type.
func.func @cross_entropy_c4(%l: tensor<4x256xf32>, %y: tensor<4xi64>, %w: tensor<255xf32>) {
  // expected-error@+1 {{weight must be [C] of the logits' element type for logits 'tensor<4x256xf32>', got 'tensor<255xf32>'}}
  %0 = ptrain.cross_entropy %l, %y weight %w : tensor<4x256xf32>, tensor<4xi64>, tensor<255xf32>
  return
}

// -----

// CrossEntropy (C4): the weights' element type is the logits'.
func.func @cross_entropy_c4_type(%l: tensor<4x256xf32>, %y: tensor<4xi64>, %w: tensor<256xf64>) {
  // expected-error@+1 {{weight must be [C] of the logits' element type}}
  %0 = ptrain.cross_entropy %l, %y weight %w : tensor<4x256xf32>, tensor<4xi64>, tensor<256xf64>
  return
}

// -----

// CrossEntropy (C5): the reduction is "mean" or "sum".
func.func @cross_entropy_c5(%l: tensor<4x256xf32>, %y: tensor<4xi64>) {
  // expected-error@+1 {{reduction must be "mean" or "sum", got "none"}}
  %0 = ptrain.cross_entropy %l, %y {reduction = "none"} : tensor<4x256xf32>, tensor<4xi64>
  return
}

// -----

// CrossEntropy (C6): the ignore_index fits the labels' type.
func.func @cross_entropy_c6(%l: tensor<4x256xf32>, %y: tensor<4xi8>) {
  // expected-error@+1 {{ignore_index -200 does not fit the labels' type 'i8'}}
  %0 = ptrain.cross_entropy %l, %y {ignore_index = -200 : i64} : tensor<4x256xf32>, tensor<4xi8>
  return
}
