// The model ops beyond the GPT core, one function each, for CTest codegen-cpu-model-ops
// (test/Target/Cpp/model_ops_e2e.py): the compiled function and the reference interpreter get the same
// inputs and must give the same bits. No states, no grid.

// Dropout at two sites (seeds 7 and INT64_MIN) and its gradient form (dropout of dy with the same counter
// and seed); the counter is an argument, as the step counter would be.
func.func @dropout(%x: tensor<4x64xf32>, %t: tensor<i64>) -> (tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>) {
  %a = ptrain.dropout %x, %t {ratio = 3.000000e-01 : f64, seed = 7 : i64} : tensor<4x64xf32>, tensor<i64>
  %b = ptrain.dropout %x, %t {ratio = 0.10000000149011612 : f64, seed = -9223372036854775808 : i64} : tensor<4x64xf32>, tensor<i64>
  %c = ptrain.dropout %a, %t {ratio = 3.000000e-01 : f64, seed = 7 : i64} : tensor<4x64xf32>, tensor<i64>
  return %a, %b, %c : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>
}

// A micro-batch's dropout (ptrain.dropout_layout batch_rows, PTrainModelOps.td): the counter packs step + 2^32 r,
// and the 2 rows draw rows [r, r + 2) of the whole batch's mask (@dropout's %a on 4 rows at the same step).
func.func @dropout_rows(%x: tensor<2x64xf32>, %t: tensor<i64>) -> tensor<2x64xf32> {
  %a = ptrain.dropout %x, %t {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 2>, ratio = 3.000000e-01 : f64, seed = 7 : i64} : tensor<2x64xf32>, tensor<i64>
  return %a : tensor<2x64xf32>
}

// i1 masks: comparisons of f32 and i64 with broadcasting, a constant causal mask, and/or/xor (Not is xor with
// true), and selections of f32 and i64 by them.
func.func @masks(%a: tensor<2x8xf32>, %b: tensor<8xf32>, %i: tensor<2x8xi64>) -> (tensor<2x8xf32>, tensor<2x8xi64>, tensor<2x8x8xf32>) {
  %lt = ptrain.compare lt %a, %b : tensor<2x8xf32>, tensor<8xf32>
  %three = arith.constant dense<3> : tensor<i64>
  %ge = ptrain.compare ge %i, %three : tensor<2x8xi64>, tensor<i64>
  %eq = ptrain.compare eq %i, %three : tensor<2x8xi64>, tensor<i64>
  %true = arith.constant dense<true> : tensor<i1>
  %not = ptrain.compare xor %ge, %true : tensor<2x8xi1>, tensor<i1>
  %and = ptrain.compare and %lt, %not : tensor<2x8xi1>, tensor<2x8xi1>
  %or = ptrain.compare or %and, %eq : tensor<2x8xi1>, tensor<2x8xi1>
  %le = ptrain.compare le %a, %b : tensor<2x8xf32>, tensor<8xf32>
  %gt = ptrain.compare gt %or, %le : tensor<2x8xi1>, tensor<2x8xi1>
  %s = ptrain.select %gt, %a, %b : tensor<2x8xi1>, tensor<2x8xf32>, tensor<8xf32>
  %zero = arith.constant dense<-1> : tensor<i64>
  %si = ptrain.select %or, %i, %zero : tensor<2x8xi1>, tensor<2x8xi64>, tensor<i64>
  %causal = arith.constant dense<[[true, false, false, false, false, false, false, false],
                                  [true, true, false, false, false, false, false, false],
                                  [true, true, true, false, false, false, false, false],
                                  [true, true, true, true, false, false, false, false],
                                  [true, true, true, true, true, false, false, false],
                                  [true, true, true, true, true, true, false, false],
                                  [true, true, true, true, true, true, true, false],
                                  [true, true, true, true, true, true, true, true]]> : tensor<8x8xi1>
  %ninf = arith.constant dense<-3.40282347E+38> : tensor<f32>
  %sc = ptrain.reshape %a : tensor<2x8xf32> -> tensor<2x1x8xf32>
  %masked = ptrain.select %causal, %sc, %ninf : tensor<8x8xi1>, tensor<2x1x8xf32>, tensor<f32>
  return %s, %si, %masked : tensor<2x8xf32>, tensor<2x8xi64>, tensor<2x8x8xf32>
}

// Reductions over several axes, with and without keepdims, and a broadcast copy of f32 and i64.
func.func @reduce(%x: tensor<3x4x5xf32>, %i: tensor<4x1xi64>) -> (tensor<3x1x1xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<2x4x3xi64>, tensor<2x3x4x5xf32>) {
  %sum = ptrain.reduce sum %x {axes = array<i64: 1, 2>, keepdims = true} : tensor<3x4x5xf32> -> tensor<3x1x1xf32>
  %mean = ptrain.reduce mean %x {axes = array<i64: 0, -1>, keepdims = false} : tensor<3x4x5xf32> -> tensor<4xf32>
  %max = ptrain.reduce max %x {axes = array<i64: 2>, keepdims = false} : tensor<3x4x5xf32> -> tensor<3x4xf32>
  %bi = ptrain.broadcast_to %i : tensor<4x1xi64> -> tensor<2x4x3xi64>
  %bx = ptrain.broadcast_to %x : tensor<3x4x5xf32> -> tensor<2x3x4x5xf32>
  return %sum, %mean, %max, %bi, %bx : tensor<3x1x1xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<2x4x3xi64>, tensor<2x3x4x5xf32>
}

// RMS norm over one and over two trailing dimensions; rotary embedding, half-split over all channels and
// interleaved over the first 8 of 16, and its gradient form (-sin).
func.func @llama(%x: tensor<2x4x16xf32>, %g: tensor<16xf32>, %g2: tensor<4x16xf32>, %q: tensor<2x3x4x16xf32>,
                 %cos: tensor<2x4x8xf32>, %sin: tensor<2x4x8xf32>, %cos4: tensor<2x4x4xf32>, %sin4: tensor<2x4x4xf32>)
    -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x3x4x16xf32>, tensor<2x3x4x16xf32>, tensor<2x3x4x16xf32>) {
  %r1 = ptrain.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64} : tensor<2x4x16xf32>, tensor<16xf32>
  %r2 = ptrain.rms_norm %x, %g2 {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x16xf32>, tensor<4x16xf32>
  %q1 = ptrain.rotary_embedding %q, %cos, %sin {interleaved = false, rotary_dim = 0 : i64}
      : tensor<2x3x4x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %q2 = ptrain.rotary_embedding %q, %cos4, %sin4 {interleaved = true, rotary_dim = 8 : i64}
      : tensor<2x3x4x16xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %nsin = ptrain.unary neg %sin : tensor<2x4x8xf32>
  %back = ptrain.rotary_embedding %q1, %cos, %nsin {interleaved = false, rotary_dim = 0 : i64}
      : tensor<2x3x4x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return %r1, %r2, %q1, %q2, %back : tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x3x4x16xf32>, tensor<2x3x4x16xf32>, tensor<2x3x4x16xf32>
}

// ONNX Gather, LogSoftmax and Cast as imported: gathers of f32 (axis 1, 2-D indices, a negative index) and i64
// (axis 0), log_softmax over the last and a middle axis, and casts f32 -> i64 (truncation toward zero),
// i64 -> f32, i64 -> i1 -> f32 (the reduce-max gradient's tie mask) and f32 -> i1 -> i64.
func.func @selection(%x: tensor<3x4x5xf32>, %i: tensor<2x2xi64>, %n: tensor<6xi64>)
    -> (tensor<3x2x2x5xf32>, tensor<2x2xi64>, tensor<3x4x5xf32>, tensor<3x4x5xf32>, tensor<3x4x5xi64>, tensor<6xf32>,
        tensor<6xf32>, tensor<3x4x5xi64>) {
  %g = ptrain.gather %x, %i {axis = 1 : i64} : tensor<3x4x5xf32>, tensor<2x2xi64> -> tensor<3x2x2x5xf32>
  %gi = ptrain.gather %n, %i {axis = 0 : i64} : tensor<6xi64>, tensor<2x2xi64> -> tensor<2x2xi64>
  %ls = ptrain.log_softmax %x {axis = -1 : i64} : tensor<3x4x5xf32>
  %ls1 = ptrain.log_softmax %x {axis = 1 : i64} : tensor<3x4x5xf32>
  %k = arith.constant dense<3.7> : tensor<f32>
  %xs = ptrain.binary mul %x, %k : tensor<3x4x5xf32>, tensor<f32>
  %xi = ptrain.cast %xs : tensor<3x4x5xf32> -> tensor<3x4x5xi64>
  %nf = ptrain.cast %n : tensor<6xi64> -> tensor<6xf32>
  %nm = ptrain.cast %n : tensor<6xi64> -> tensor<6xi1>
  %nmf = ptrain.cast %nm : tensor<6xi1> -> tensor<6xf32>
  %xm = ptrain.cast %xi : tensor<3x4x5xi64> -> tensor<3x4x5xi1>
  %xmi = ptrain.cast %xm : tensor<3x4x5xi1> -> tensor<3x4x5xi64>
  return %g, %gi, %ls, %ls1, %xi, %nf, %nmf, %xmi : tensor<3x2x2x5xf32>, tensor<2x2xi64>, tensor<3x4x5xf32>,
      tensor<3x4x5xf32>, tensor<3x4x5xi64>, tensor<6xf32>, tensor<6xf32>, tensor<3x4x5xi64>
}
