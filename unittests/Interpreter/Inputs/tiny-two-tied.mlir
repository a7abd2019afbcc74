// The tiny tied-embedding model (tiny-tied-gpt.mlir) with a second tied weight: `shared` is layer 0's value
// projection and layer 1's query projection. Split into two stages, stage 0 reads wte then shared, stage 1
// reads shared then wte (a second read of it, for the LM head): the two tied groups are met in different
// orders on the two stages. Used by
// MultiRankExecutorTest.
module {
  ptrain.state @wte key "wte" kind parameter : tensor<8x4xf32>
  ptrain.state @wq0 key "l0.wq" kind parameter : tensor<4x4xf32>
  ptrain.state @wk0 key "l0.wk" kind parameter : tensor<4x4xf32>
  ptrain.state @shared key "shared" kind parameter : tensor<4x4xf32>
  ptrain.state @wk1 key "l1.wk" kind parameter : tensor<4x4xf32>
  ptrain.state @wv1 key "l1.wv" kind parameter : tensor<4x4xf32>
  ptrain.state @lnf key "lnf.weight" kind parameter : tensor<4xf32>
  func.func @forward(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
    %wte = ptrain.state_read @wte : tensor<8x4xf32>
    %h0 = ptrain.embedding %wte, %tokens : tensor<8x4xf32>, tensor<2x4xi64>
    %wq0 = ptrain.state_read @wq0 : tensor<4x4xf32>
    %wk0 = ptrain.state_read @wk0 : tensor<4x4xf32>
    %wv0 = ptrain.state_read @shared : tensor<4x4xf32>
    %q0 = ptrain.matmul %h0, %wq0 : tensor<2x4x4xf32>, tensor<4x4xf32>
    %k0 = ptrain.matmul %h0, %wk0 : tensor<2x4x4xf32>, tensor<4x4xf32>
    %v0 = ptrain.matmul %h0, %wv0 : tensor<2x4x4xf32>, tensor<4x4xf32>
    %kt0 = ptrain.transpose %k0 {perm = array<i64: 0, 2, 1>} : tensor<2x4x4xf32> -> tensor<2x4x4xf32>
    %s0 = ptrain.matmul %q0, %kt0 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
    %p0 = ptrain.softmax %s0 {axis = -1 : i64} : tensor<2x4x4xf32>
    %a0 = ptrain.matmul %p0, %v0 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
    %h1 = ptrain.binary add %h0, %a0 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
    %wq1 = ptrain.state_read @shared : tensor<4x4xf32>
    %wk1 = ptrain.state_read @wk1 : tensor<4x4xf32>
    %wv1 = ptrain.state_read @wv1 : tensor<4x4xf32>
    %q1 = ptrain.matmul %h1, %wq1 : tensor<2x4x4xf32>, tensor<4x4xf32>
    %k1 = ptrain.matmul %h1, %wk1 : tensor<2x4x4xf32>, tensor<4x4xf32>
    %v1 = ptrain.matmul %h1, %wv1 : tensor<2x4x4xf32>, tensor<4x4xf32>
    %kt1 = ptrain.transpose %k1 {perm = array<i64: 0, 2, 1>} : tensor<2x4x4xf32> -> tensor<2x4x4xf32>
    %s1 = ptrain.matmul %q1, %kt1 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
    %p1 = ptrain.softmax %s1 {axis = -1 : i64} : tensor<2x4x4xf32>
    %a1 = ptrain.matmul %p1, %v1 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
    %h2 = ptrain.binary add %h1, %a1 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
    %lnf = ptrain.state_read @lnf : tensor<4xf32>
    %n = ptrain.layer_norm %h2, %lnf {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x4xf32>, tensor<4xf32>
    %wte2 = ptrain.state_read @wte : tensor<8x4xf32>
    %wt = ptrain.transpose %wte2 {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
    %logits = ptrain.matmul %n, %wt : tensor<2x4x4xf32>, tensor<4x8xf32>
    return %logits : tensor<2x4x8xf32>
  }
}
