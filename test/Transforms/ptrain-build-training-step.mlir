// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=none" | FileCheck %s --check-prefix=CHECK
// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="lr=1e-3 warmup-steps=10 total-steps=100" | FileCheck %s --check-prefix=ADAMW

// A tied embedding: one parameter read once, used by the token embedding and, transposed, by the LM head.
// Its gradient is the sum of both uses' gradients.

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
ptrain.state @ln key "ln.weight" kind parameter : tensor<8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %g = ptrain.state_read @ln : tensor<8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %h = ptrain.layer_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x5x8xf32>, tensor<8xf32>
  %a = ptrain.gelu %h : tensor<2x5x8xf32>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %a, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[T:.*]]: tensor<2x5xi64>) -> (tensor<f32>, tensor<16x8xf32> {ptrain.grad_of = "wte"}, tensor<8xf32> {ptrain.grad_of = "ln.weight"})
// Next-token loss over positions 0..3 against tokens 1..4.
// CHECK: %[[P:.*]] = ptrain.slice %{{.*}} {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 4, 16>}
// CHECK: %[[L:.*]] = ptrain.slice %[[T]] {offsets = array<i64: 0, 1>, sizes = array<i64: 2, 4>}
// CHECK: %[[LOSS:.*]] = ptrain.cross_entropy %[[P]], %[[L]]
// CHECK: ptrain.cross_entropy_grad %{{.*}}, %[[P]], %[[L]]
// CHECK: ptrain.pad
// The LM head's gradient flows back through the transpose...
// CHECK: %[[DWT:.*]] = ptrain.sum_to %{{.*}} : tensor<2x8x16xf32> -> tensor<8x16xf32>
// CHECK: %[[HEAD:.*]] = ptrain.transpose %[[DWT]] {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
// CHECK: ptrain.gelu_grad
// CHECK: %[[DX:.*]], %[[DG:.*]] = ptrain.layer_norm_grad
// ...and the embedding's through a scatter-add; both are summed.
// CHECK: %[[EMB:.*]] = ptrain.embedding_grad %[[DX]], %[[T]] : tensor<2x5x8xf32>, tensor<2x5xi64> -> tensor<16x8xf32>
// CHECK: %[[WTE:.*]] = ptrain.binary add %[[HEAD]], %[[EMB]] : tensor<16x8xf32>, tensor<16x8xf32>
// CHECK: return %[[LOSS]], %[[WTE]], %[[DG]]

// ADAMW-DAG: ptrain.state @step key "step" kind step_counter : tensor<i64>
// ADAMW-DAG: ptrain.state @wte.adam_m key "wte/adam_m" kind optimizer_moment : tensor<16x8xf32>
// ADAMW-DAG: ptrain.state @ln.adam_v key "ln.weight/adam_v" kind optimizer_moment : tensor<8xf32>
// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME: -> tensor<f32>
// ADAMW: %[[T0:.*]] = ptrain.state_read @step : tensor<i64>
// ADAMW: %[[T1:.*]] = ptrain.binary add %[[T0]], %{{.*}} : tensor<i64>, tensor<i64>
// ADAMW: ptrain.state_write %[[T1]] to @step
// Matrices are decayed, vectors are not.
// ADAMW: ptrain.adamw {{.*}}, %[[T1]] {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, epsilon = 1.000000e-08 : f64, schedule = #ptrain.lr_schedule<peak = 1.000000e-03 : f64, warmup = 10, total = 100, min_ratio = 1.000000e-01 : f64>, weight_decay = 1.000000e-01 : f64} : tensor<16x8xf32>, tensor<i64>
// ADAMW: ptrain.state_write %{{.*}} to @wte : tensor<16x8xf32>
// ADAMW: ptrain.adamw {{.*}}weight_decay = 0.000000e+00 : f64} : tensor<8xf32>, tensor<i64>
// ADAMW: ptrain.state_write %{{.*}} to @ln : tensor<8xf32>
