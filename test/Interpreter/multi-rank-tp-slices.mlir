// RUN: split-file %s %t
// RUN: ptrain-interpret %t/columns.mlir --multi-rank --random-tokens 1 --weights %S/Inputs/linear.onnx --print-states | FileCheck %s --check-prefix=COLUMNS
// RUN: not ptrain-interpret %t/no-vocab.mlir --multi-rank --random-tokens 1 --weights %S/Inputs/linear.onnx 2>&1 | FileCheck %s --check-prefix=NO-VOCAB
// RUN: not ptrain-interpret %t/misfit.mlir --multi-rank --random-tokens 1 --weights %S/Inputs/linear.onnx 2>&1 | FileCheck %s --check-prefix=MISFIT

// The multi-rank executor loads each tp rank's slice of a parameter that --ptrain-shard-tp sliced
// (`ptrain.tp_slice`) and sums with ptrain.tp_all_reduce over the tp group. linear.onnx's w is
// [[1, -2], [0.5, 0.25], [-1.5, 3]]: sliced by columns, rank 0 holds [1, 0.5, -1.5] (sum 0, max|x| 1.5) and
// rank 1 [-2, 0.25, 3] (sum 1.25, max|x| 3); the all-reduced loss is 1.25 on both ranks.

// COLUMNS: step 1: loss 1.25 on all 2 rank(s)
// COLUMNS: rank 0 'w' tensor<3x1xf32> max|x| = 1.500000e+00
// COLUMNS: rank 1 'w' tensor<3x1xf32> max|x| = 3.000000e+00

// Random tokens need a vocabulary (an embedding's table): an error, not a division by zero.
// NO-VOCAB: error: --random-tokens: no ptrain.embedding of the token ids (a function argument) gives the vocabulary size

// A slice for another grid (tp = 4: a global [3, 4] in parts of 1 column) is the executor's error; a slice that
// does not fit the state's type at all is the verifier's (test/Dialect/PTrain/plan-attrs-invalid.mlir).
// MISFIT: ptrain.tp_slice #ptrain.tp_slice<axis = "tp", dim = 1, groups = 1, shape = [3, 4]> does not fit the local type tensor<3x1xf32> on 2 ranks

//--- columns.mlir
module {
  ptrain.grid @grid(pp = 1, tp = 2)
  ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 1, shape = [3, 2]>} : tensor<3x1xf32>
  func.func @stage0_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.entry = "train"} {
    %table = arith.constant dense<0.0> : tensor<3x2xf32>
    %e = ptrain.embedding %table, %t : tensor<3x2xf32>, tensor<1x2xi64>
    %w = ptrain.state_read @w : tensor<3x1xf32>
    %s = ptrain.reduce sum %w {axes = array<i64: 0, 1>, keepdims = false} : tensor<3x1xf32> -> tensor<f32>
    %loss = ptrain.tp_all_reduce %s on @grid axis tp : tensor<f32>
    return %loss : tensor<f32>
  }
}

//--- misfit.mlir
module {
  ptrain.grid @grid(pp = 1, tp = 2)
  ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 1, shape = [3, 4]>} : tensor<3x1xf32>
  func.func @stage0_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.entry = "train"} {
    %table = arith.constant dense<0.0> : tensor<3x2xf32>
    %e = ptrain.embedding %table, %t : tensor<3x2xf32>, tensor<1x2xi64>
    %w = ptrain.state_read @w : tensor<3x1xf32>
    %s = ptrain.reduce sum %w {axes = array<i64: 0, 1>, keepdims = false} : tensor<3x1xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

//--- no-vocab.mlir
module {
  ptrain.grid @grid(pp = 1, tp = 2)
  func.func @stage0_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.entry = "train"} {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}
