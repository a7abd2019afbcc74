// RUN: ptrain-opt %s --ptrain-raise --split-input-file --verify-diagnostics

// Every structure --ptrain-raise cannot recognise is an error at the op, naming its ONNX node (the op's
// NameLoc) where it has one.

// No attention: the forward has no softmax.
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
// expected-error@+1 {{--ptrain-raise: @forward has no attention (no ptrain.softmax)}}
func.func @forward(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  return %x : tensor<1x2x4xf32>
}

// -----

// The softmax's input is not a matmul of Q and K.
func.func @forward(%x: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  // expected-error@unknown {{--ptrain-raise: ONNX node '/attn/Softmax' ('ptrain.softmax'): the attention's scores (the softmax's input) are not a matmul of Q and K}}
  %p = ptrain.softmax %x {axis = -1 : i64} : tensor<1x2x2x2xf32> loc("/attn/Softmax")
  return %p : tensor<1x2x2x2xf32>
}

// -----

// The probabilities do not feed the context matmul.
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
func.func @forward(%x: tensor<1x2x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = ptrain.state_read @wqkv : tensor<4x12xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %qkv = ptrain.matmul %x, %w : tensor<1x2x4xf32>, tensor<4x12xf32>
  %s:3 = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  %q = ptrain.reshape %s#0 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k = ptrain.reshape %s#1 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %s#2 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %scores = ptrain.matmul %qt, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  // expected-error@unknown {{the attention's probabilities do not feed a matmul with V}}
  %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<1x2x2x2xf32> loc("/attn/Softmax")
  %e = ptrain.unary exp %p : tensor<1x2x2x2xf32>
  return %e : tensor<1x2x2x2xf32>
}

// -----

// Separate Q and K projections.
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
ptrain.state @wk key "wk" kind parameter : tensor<4x4xf32>
func.func @forward(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %w = ptrain.state_read @wqkv : tensor<4x12xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %qkv = ptrain.matmul %x, %w : tensor<1x2x4xf32>, tensor<4x12xf32>
  %s:3 = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  %q = ptrain.reshape %s#0 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %w2 = ptrain.state_read @wk : tensor<4x4xf32>
  %kp = ptrain.matmul %x, %w2 : tensor<1x2x4xf32>, tensor<4x4xf32>
  %k2 = ptrain.reshape %kp : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = ptrain.transpose %k2 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %s#2 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  // expected-error@+1 {{Q, K and V of the attention do not come from one fused projection with a parameter weight}}
  %scores = ptrain.matmul %qt, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<1x2x2x2xf32>
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  %out = ptrain.matmul %c, %wo : tensor<1x2x4xf32>, tensor<4x4xf32>
  return %out : tensor<1x2x4xf32>
}

// -----

// The context does not reach an output projection.
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
func.func @forward(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %w = ptrain.state_read @wqkv : tensor<4x12xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %qkv = ptrain.matmul %x, %w : tensor<1x2x4xf32>, tensor<4x12xf32>
  %s:3 = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  %q = ptrain.reshape %s#0 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k = ptrain.reshape %s#1 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %s#2 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %scores = ptrain.matmul %qt, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<1x2x2x2xf32>
  // expected-error@+1 {{the attention's context does not reach an output projection with a parameter weight}}
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  return %c : tensor<1x2x4xf32>
}

// -----

// A GELU before the first attention.
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
func.func @forward(%x0: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error@+1 {{a GELU before the first attention is not part of a transformer layer}}
  %x = ptrain.gelu %x0 : tensor<1x2x4xf32>
  %w = ptrain.state_read @wqkv : tensor<4x12xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %qkv = ptrain.matmul %x, %w : tensor<1x2x4xf32>, tensor<4x12xf32>
  %s:3 = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  %q = ptrain.reshape %s#0 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k = ptrain.reshape %s#1 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %s#2 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %scores = ptrain.matmul %qt, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<1x2x2x2xf32> loc("/attn/Softmax")
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  %out = ptrain.matmul %c, %wo : tensor<1x2x4xf32>, tensor<4x4xf32>
  return %out : tensor<1x2x4xf32>
}

// -----

// A GELU that is not between two linears.
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
func.func @forward(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %w = ptrain.state_read @wqkv : tensor<4x12xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %qkv = ptrain.matmul %x, %w : tensor<1x2x4xf32>, tensor<4x12xf32>
  %s:3 = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  %q = ptrain.reshape %s#0 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k = ptrain.reshape %s#1 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %s#2 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %scores = ptrain.matmul %qt, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<1x2x2x2xf32> loc("/attn/Softmax")
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  %out = ptrain.matmul %c, %wo : tensor<1x2x4xf32>, tensor<4x4xf32>
  // expected-error@+1 {{the MLP's GELU is not between two linears with parameter weights}}
  %g = ptrain.gelu %out : tensor<1x2x4xf32>
  return %g : tensor<1x2x4xf32>
}

// -----

// Two GELUs in one layer.
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
ptrain.state @w1 key "w1" kind parameter : tensor<4x4xf32>
ptrain.state @w2 key "w2" kind parameter : tensor<4x4xf32>
func.func @forward(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %w = ptrain.state_read @wqkv : tensor<4x12xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %qkv = ptrain.matmul %x, %w : tensor<1x2x4xf32>, tensor<4x12xf32>
  %s:3 = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  %q = ptrain.reshape %s#0 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k = ptrain.reshape %s#1 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %s#2 : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %scores = ptrain.matmul %qt, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<1x2x2x2xf32> loc("/attn/Softmax")
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  %out = ptrain.matmul %c, %wo : tensor<1x2x4xf32>, tensor<4x4xf32>
  %w1 = ptrain.state_read @w1 : tensor<4x4xf32>
  %w2 = ptrain.state_read @w2 : tensor<4x4xf32>
  %up = ptrain.matmul %out, %w1 : tensor<1x2x4xf32>, tensor<4x4xf32>
  %g = ptrain.gelu %up : tensor<1x2x4xf32>
  %down = ptrain.matmul %g, %w2 : tensor<1x2x4xf32>, tensor<4x4xf32>
  // expected-error@+1 {{('ptrain.gelu'): layer 0 has a second GELU}}
  %g2 = ptrain.gelu %down : tensor<1x2x4xf32>
  return %g2 : tensor<1x2x4xf32>
}
