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

// Q and V from one fused projection, K from another.
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
  // expected-error@+1 {{Q, K and V of the attention come neither from one fused projection nor from three projections with parameter weights}}
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
  // expected-error@+1 {{('ptrain.gelu'): layer 0 has a second MLP activation}}
  %g2 = ptrain.gelu %down : tensor<1x2x4xf32>
  %w3 = ptrain.state_read @w2 : tensor<4x4xf32>
  %down2 = ptrain.matmul %g2, %w3 : tensor<1x2x4xf32>, tensor<4x4xf32>
  return %down2 : tensor<1x2x4xf32>
}

// -----

// Separate Q, K and V projections of different inputs (cross attention).
ptrain.state @wq key "wq" kind parameter : tensor<4x4xf32>
ptrain.state @wk key "wk" kind parameter : tensor<4x4xf32>
ptrain.state @wv key "wv" kind parameter : tensor<4x4xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
func.func @forward(%x: tensor<1x2x4xf32>, %y: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %wq = ptrain.state_read @wq : tensor<4x4xf32>
  %wk = ptrain.state_read @wk : tensor<4x4xf32>
  %wv = ptrain.state_read @wv : tensor<4x4xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %qp = ptrain.matmul %x, %wq : tensor<1x2x4xf32>, tensor<4x4xf32>
  %kp = ptrain.matmul %y, %wk : tensor<1x2x4xf32>, tensor<4x4xf32>
  %vp = ptrain.matmul %y, %wv : tensor<1x2x4xf32>, tensor<4x4xf32>
  %q = ptrain.reshape %qp : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k = ptrain.reshape %kp : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %vp : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  // expected-error@unknown {{--ptrain-raise: ONNX node '/attn/MatMul' ('ptrain.matmul'): the attention's Q, K and V projections do not read the same input (cross attention is not supported)}}
  %scores = ptrain.matmul %qt, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> loc("/attn/MatMul")
  %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<1x2x2x2xf32>
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  %out = ptrain.matmul %c, %wo : tensor<1x2x4xf32>, tensor<4x4xf32>
  return %out : tensor<1x2x4xf32>
}

// -----

// Grouped-query K (one head, repeated) but a V projection with two heads: K and V differ in width.
ptrain.state @wq key "wq" kind parameter : tensor<4x4xf32>
ptrain.state @wk key "wk" kind parameter : tensor<4x2xf32>
ptrain.state @wv key "wv" kind parameter : tensor<4x4xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
func.func @forward(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %wq = ptrain.state_read @wq : tensor<4x4xf32>
  %wk = ptrain.state_read @wk : tensor<4x2xf32>
  %wv = ptrain.state_read @wv : tensor<4x4xf32>
  %wo = ptrain.state_read @wo : tensor<4x4xf32>
  %qp = ptrain.matmul %x, %wq : tensor<1x2x4xf32>, tensor<4x4xf32>
  // expected-error@unknown {{ONNX node '/attn/k_proj' ('ptrain.matmul'): the K and V projections have 2 and 4 outputs; expected the same multiple of head_dim = 2}}
  %kp = ptrain.matmul %x, %wk : tensor<1x2x4xf32>, tensor<4x2xf32> loc("/attn/k_proj")
  %vp = ptrain.matmul %x, %wv : tensor<1x2x4xf32>, tensor<4x4xf32>
  %q = ptrain.reshape %qp : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qt = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k = ptrain.reshape %kp : tensor<1x2x2xf32> -> tensor<1x2x1x2xf32>
  %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x1x2xf32> -> tensor<1x1x2x2xf32>
  %kb = ptrain.broadcast_to %kt : tensor<1x1x2x2xf32> -> tensor<1x2x2x2xf32>
  %v = ptrain.reshape %vp : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vt = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %scores = ptrain.matmul %qt, %kb : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<1x2x2x2xf32>
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  %out = ptrain.matmul %c, %wo : tensor<1x2x4xf32>, tensor<4x4xf32>
  return %out : tensor<1x2x4xf32>
}

// -----

// SwiGLU whose "up" side is the layer's input, not a linear: silu(x W_gate) * x.
ptrain.state @wqkv key "wqkv" kind parameter : tensor<4x12xf32>
ptrain.state @wo key "wo" kind parameter : tensor<4x4xf32>
ptrain.state @wg key "wg" kind parameter : tensor<4x4xf32>
ptrain.state @wd key "wd" kind parameter : tensor<4x4xf32>
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
  %ctx = ptrain.matmul %p, %vt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  %ct = ptrain.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = ptrain.reshape %ct : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  %out = ptrain.matmul %c, %wo : tensor<1x2x4xf32>, tensor<4x4xf32>
  %wg = ptrain.state_read @wg : tensor<4x4xf32>
  %wd = ptrain.state_read @wd : tensor<4x4xf32>
  %gate = ptrain.matmul %out, %wg : tensor<1x2x4xf32>, tensor<4x4xf32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %neg = ptrain.unary neg %gate : tensor<1x2x4xf32>
  %exp = ptrain.unary exp %neg : tensor<1x2x4xf32>
  %den = ptrain.binary add %exp, %one : tensor<1x2x4xf32>, tensor<f32>
  %sig = ptrain.unary reciprocal %den : tensor<1x2x4xf32>
  %silu = ptrain.binary mul %gate, %sig : tensor<1x2x4xf32>, tensor<1x2x4xf32>
  // expected-error@unknown {{ONNX node '/mlp/Mul' ('ptrain.binary'): the SwiGLU silu(gate) * up is not between a gate and an up linear of one input and a down linear, all with parameter weights}}
  %glu = ptrain.binary mul %silu, %x : tensor<1x2x4xf32>, tensor<1x2x4xf32> loc("/mlp/Mul")
  %down = ptrain.matmul %glu, %wd : tensor<1x2x4xf32>, tensor<4x4xf32>
  return %down : tensor<1x2x4xf32>
}

// -----

// The rotate-half rotary form with a cos table that is not two equal halves: not a rotation.
func.func @forward(%x: tensor<1x2x3x4xf32>, %cos: tensor<1x1x3x4xf32>, %sin2: tensor<1x3x2xf32>) -> tensor<1x2x3x4xf32> {
  %x1 = ptrain.slice %x {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 1, 2, 3, 2>} : tensor<1x2x3x4xf32> -> tensor<1x2x3x2xf32>
  %x2 = ptrain.slice %x {offsets = array<i64: 0, 0, 0, 2>, sizes = array<i64: 1, 2, 3, 2>} : tensor<1x2x3x4xf32> -> tensor<1x2x3x2xf32>
  %n = ptrain.unary neg %x2 : tensor<1x2x3x2xf32>
  // expected-error@unknown {{--ptrain-raise: ONNX node '/rope/rotate_half' ('ptrain.concat'): a rotate-half rotary embedding x * cos + rotate_half(x) * sin whose cos or sin is not concat(c, c) on the last axis with a unit heads axis}}
  %rh = ptrain.concat %n, %x1 {axis = -1 : i64} : tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32> -> tensor<1x2x3x4xf32> loc("/rope/rotate_half")
  %sc = ptrain.concat %sin2, %sin2 {axis = -1 : i64} : tensor<1x3x2xf32>, tensor<1x3x2xf32> -> tensor<1x3x4xf32>
  %sin = ptrain.reshape %sc : tensor<1x3x4xf32> -> tensor<1x1x3x4xf32>
  %a = ptrain.binary mul %x, %cos : tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>
  %b = ptrain.binary mul %rh, %sin : tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>
  %y = ptrain.binary add %a, %b : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}
