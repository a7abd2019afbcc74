// RUN: ptrain-opt %s --ptrain-shard-tp="tp=4" --split-input-file --verify-diagnostics

// Every case --ptrain-shard-tp cannot shard is an error naming the ONNX node (the op's NameLoc) where it has
// one. The cases carry --ptrain-raise's attributes themselves.

// The forward was not raised.
// expected-error@+1 {{--ptrain-shard-tp: @forward has no ptrain.layers: run --ptrain-raise first}}
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}

// -----

// The MLP width is not divisible by tp (6 over 4 ranks).
ptrain.state @w1 key "w1" kind parameter : tensor<4x6xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<6x4xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<4x6xf32>
  %w2 = ptrain.state_read @w2 : tensor<6x4xf32>
  // expected-error@unknown {{--ptrain-shard-tp: ONNX node '/mlp/fc/MatMul' ('ptrain.matmul'): dimension 1 of parameter 'w1' ('tensor<4x6xf32>') has size 6, not divisible by tp = 4}}
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x6xf32> loc("/mlp/fc/MatMul")
  %g = ptrain.gelu %up : tensor<2x6xf32> loc("/mlp/Gelu")
  %down = ptrain.matmul %g, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x6xf32>, tensor<6x4xf32> loc("/mlp/proj/MatMul")
  return %down : tensor<2x4xf32>
}

// -----

// An op the sharding cannot go through inside the region.
ptrain.state @w1 key "w1" kind parameter : tensor<4x8xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<8x4xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<4x8xf32>
  %w2 = ptrain.state_read @w2 : tensor<8x4xf32>
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x8xf32> loc("/mlp/fc/MatMul")
  %g = ptrain.gelu %up : tensor<2x8xf32> loc("/mlp/Gelu")
  // expected-error@+1 {{cannot shard through this op}}
  %ls = ptrain.log_softmax %g {axis = 0 : i64} : tensor<2x8xf32>
  %down = ptrain.matmul %ls, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x8xf32>, tensor<8x4xf32> loc("/mlp/proj/MatMul")
  return %down : tensor<2x4xf32>
}

// -----

// A sharded value that leaves the region other than through its row-parallel linear.
ptrain.state @w1 key "w1" kind parameter : tensor<4x8xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<8x4xf32>
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x8xf32>) attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<4x8xf32>
  %w2 = ptrain.state_read @w2 : tensor<8x4xf32>
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x8xf32> loc("/mlp/fc/MatMul")
  %g = ptrain.gelu %up : tensor<2x8xf32> loc("/mlp/Gelu")
  %down = ptrain.matmul %g, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x8xf32>, tensor<8x4xf32> loc("/mlp/proj/MatMul")
  // expected-error@+1 {{uses a tensor-parallel value of layer region}}
  return %down, %g : tensor<2x4xf32>, tensor<2x8xf32>
}

// -----

// The module already has a grid without the right tp axis.
// expected-error@+1 {{--ptrain-shard-tp: the module already has a grid without axis tp = 4}}
ptrain.grid @grid(pp = 2)
ptrain.state @w1 key "w1" kind parameter : tensor<4x8xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<8x4xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<4x8xf32>
  %w2 = ptrain.state_read @w2 : tensor<8x4xf32>
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x8xf32> loc("/mlp/fc/MatMul")
  %g = ptrain.gelu %up : tensor<2x8xf32> loc("/mlp/Gelu")
  %down = ptrain.matmul %g, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x8xf32>, tensor<8x4xf32> loc("/mlp/proj/MatMul")
  return %down : tensor<2x4xf32>
}

// -----

// The attention carries ptrain.attention but no projection of its layer was marked.
func.func @forward(%s: tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> attributes {ptrain.layers = 1 : i64} {
  // expected-error@unknown {{--ptrain-shard-tp: ONNX node '/attn/Softmax' ('ptrain.softmax'): layer 0 has no Q, K and V projection or no output projection marked by --ptrain-raise}}
  %p = ptrain.softmax %s {axis = -1 : i64, ptrain.attention = {head_dim = 2 : i64, heads = 4 : i64, kv_heads = 4 : i64, layer = 0 : i64}} : tensor<1x4x2x2xf32> loc("/attn/Softmax")
  return %p : tensor<1x4x2x2xf32>
}

// -----

// An MLP up projection without its down projection.
ptrain.state @w1 key "w1" kind parameter : tensor<4x8xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x8xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<4x8xf32>
  // expected-error@unknown {{--ptrain-shard-tp: ONNX node '/mlp/fc/MatMul' ('ptrain.matmul'): layer 0's MLP has no down projection}}
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x8xf32> loc("/mlp/fc/MatMul")
  return %up : tensor<2x8xf32>
}

// -----

// A rotary embedding applied after the heads were folded back into the last dimension.
ptrain.state @w1 key "w1" kind parameter : tensor<4x32xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<32x4xf32>
func.func @forward(%x: tensor<2x4xf32>, %cos: tensor<2x1x16xf32>) -> tensor<2x4xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<4x32xf32>
  %w2 = ptrain.state_read @w2 : tensor<32x4xf32>
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x32xf32>
  %g = ptrain.gelu %up : tensor<2x32xf32>
  %h = ptrain.reshape %g : tensor<2x32xf32> -> tensor<2x1x1x32xf32>
  // expected-error@+1 {{the rotary embedding's input is not sharded over its heads}}
  %r = ptrain.rotary_embedding %h, %cos, %cos : tensor<2x1x1x32xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>
  %f = ptrain.reshape %r : tensor<2x1x1x32xf32> -> tensor<2x32xf32>
  %down = ptrain.matmul %f, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x32xf32>, tensor<32x4xf32>
  return %down : tensor<2x4xf32>
}

// -----

// A dropout on a value sharded along dimension 0 (its mask is keyed by the global index, which needs the
// batch rows outside the sharded dimension: #ptrain.dropout_layout C1, PTrainPlanAttrs.td).
ptrain.state @step key "step" kind step_counter : tensor<i64>
ptrain.state @w1 key "w1" kind parameter : tensor<4x8xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<8x4xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<4x8xf32>
  %w2 = ptrain.state_read @w2 : tensor<8x4xf32>
  %t = ptrain.state_read @step : tensor<i64>
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4xf32>, tensor<4x8xf32> loc("/mlp/fc/MatMul")
  %tr = ptrain.transpose %up {perm = array<i64: 1, 0>} : tensor<2x8xf32> -> tensor<8x2xf32>
  // expected-error@+1 {{dropout on a value sharded along dimension 0 in 1 groups}}
  %d = ptrain.dropout %tr, %t {ratio = 1.000000e-01 : f64, seed = 7 : i64} : tensor<8x2xf32>, tensor<i64>
  %back = ptrain.transpose %d {perm = array<i64: 1, 0>} : tensor<8x2xf32> -> tensor<2x8xf32>
  %down = ptrain.matmul %back, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x8xf32>, tensor<8x4xf32> loc("/mlp/proj/MatMul")
  return %down : tensor<2x4xf32>
}

// -----

// Heads merged with an outer dimension (the [B x heads] batch of Keras' einsum attention) pass only reshapes,
// transposes, batched matmuls and elementwise ops: a split of the merged dimension is refused.
ptrain.state @w1 key "w1" kind parameter : tensor<8x8xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<8x8xf32>
func.func @forward(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<8x8xf32>
  %w2 = ptrain.state_read @w2 : tensor<8x8xf32>
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x3x8xf32>, tensor<8x8xf32>
  %g = ptrain.gelu %up : tensor<2x3x8xf32>
  %flat = ptrain.reshape %g : tensor<2x3x8xf32> -> tensor<48xf32>
  // expected-error@unknown {{--ptrain-shard-tp: ONNX node '/Split' ('ptrain.split'): cannot shard through this op: its operand's sharded heads are merged into a batch x heads dimension}}
  %h0, %h1 = ptrain.split %flat {axis = 0 : i64, sizes = array<i64: 24, 24>} : tensor<48xf32> -> tensor<24xf32>, tensor<24xf32> loc("/Split")
  %c = ptrain.concat %h0, %h1 {axis = 0 : i64} : tensor<24xf32>, tensor<24xf32> -> tensor<48xf32>
  %back = ptrain.reshape %c : tensor<48xf32> -> tensor<2x3x8xf32>
  %down = ptrain.matmul %back, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x3x8xf32>, tensor<8x8xf32>
  return %down : tensor<2x3x8xf32>
}

// -----

// Nor can a replicated operand of the merged dimension's full size be cut to the rank's part (it is not one slice).
ptrain.state @w1 key "w1" kind parameter : tensor<8x8xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<8x8xf32>
func.func @forward(%x: tensor<2x3x8xf32>, %m: tensor<48xf32>) -> tensor<2x3x8xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @w1 : tensor<8x8xf32>
  %w2 = ptrain.state_read @w2 : tensor<8x8xf32>
  %up = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x3x8xf32>, tensor<8x8xf32>
  %flat = ptrain.reshape %up : tensor<2x3x8xf32> -> tensor<48xf32>
  // expected-error@unknown {{--ptrain-shard-tp: ONNX node '/Add' ('ptrain.binary'): operand 1 is not sharded, and the sharded heads are merged into a batch x heads dimension, whose rank's part is not one slice}}
  %a = ptrain.binary add %flat, %m : tensor<48xf32>, tensor<48xf32> loc("/Add")
  %back = ptrain.reshape %a : tensor<48xf32> -> tensor<2x3x8xf32>
  %g = ptrain.gelu %back : tensor<2x3x8xf32>
  %down = ptrain.matmul %g, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x3x8xf32>, tensor<8x8xf32>
  return %down : tensor<2x3x8xf32>
}
