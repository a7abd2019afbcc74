// RUN: ptrain-opt %s --ptrain-shard-tp="tp=4 vocab-parallel=true" | FileCheck %s
// RUN: ptrain-opt %s --ptrain-shard-tp="tp=4 vocab-parallel=true" --ptrain-build-training-step="micro-batches=1 optimizer=none" | FileCheck %s --check-prefix=STEP
// RUN: not ptrain-opt %s --ptrain-shard-tp="tp=4 vocab-parallel=true vocab-multiple=0" 2>&1 | FileCheck %s --check-prefix=MULTIPLE
// RUN: ptrain-opt %s --ptrain-shard-tp="tp=4" | FileCheck %s --check-prefix=OFF

// A tied embedding of vocabulary 10 (a raised forward without transformer layers) at tp = 4: the vocabulary is
// padded to 12, each rank keeps 3 rows of the one tied table (the padded rows 10 and 11 are rank 3's last two,
// zero), the embedding is the rank's lookup plus g, the head makes 3 logits per position, gathered to 12 and cut
// back to 10 for the forward's result.

// CHECK: ptrain.grid @grid(tp = 4)
// CHECK: ptrain.state @wte key "wte" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [10, 4], padded = 12>} : tensor<3x4xf32>
// CHECK: %[[W:.*]] = ptrain.state_read @wte : tensor<3x4xf32>
// CHECK: %[[E:.*]] = ptrain.vocab_parallel_embedding %[[W]], %arg0 on @grid axis tp : tensor<3x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// CHECK: %[[X:.*]] = ptrain.tp_all_reduce %[[E]] on @grid axis tp : tensor<2x3x4xf32>
// CHECK: %[[WT:.*]] = ptrain.transpose %[[W]] {perm = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
// CHECK: %[[F:.*]] = ptrain.tp_copy %[[X]] on @grid axis tp : tensor<2x3x4xf32>
// CHECK: %[[Y:.*]] = ptrain.matmul %[[F]], %[[WT]] {{.*}} : tensor<2x3x4xf32>, tensor<4x3xf32>
// CHECK: %[[ALL:.*]] = ptrain.tp_all_gather %[[Y]] on @grid axis tp dim 2 : tensor<2x3x3xf32> -> tensor<2x3x12xf32>
// CHECK: %[[CUT:.*]] = ptrain.slice %[[ALL]] {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 3, 10>} : tensor<2x3x12xf32> -> tensor<2x3x10xf32>
// CHECK: return %[[CUT]] : tensor<2x3x10xf32>

// The step's loss reads the local logits (positions 0..1 against tokens 1..2): the ranks' maxima gathered and
// reduced, the parts with vocab = 10 (rank 3's columns 10, 11 masked), both sums over tp, mean of log - target.
// The logits are not gathered; the backward is the parts' gradient, then f's all-reduce and the embedding's rows.
// STEP-LABEL: func.func @train_step
// STEP-NOT: ptrain.tp_all_gather %{{.*}} dim 2
// STEP: %[[L:.*]] = ptrain.slice %{{.*}} {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 2, 3>} : tensor<2x3x3xf32> -> tensor<2x2x3xf32>
// STEP: %[[M:.*]] = ptrain.reduce max %[[L]] {axes = array<i64: 2>, keepdims = false} : tensor<2x2x3xf32> -> tensor<2x2xf32>
// STEP: %[[R:.*]] = ptrain.reshape %[[M]] : tensor<2x2xf32> -> tensor<1x2x2xf32>
// STEP: %[[G:.*]] = ptrain.tp_all_gather %[[R]] on @grid axis tp dim 0 : tensor<1x2x2xf32> -> tensor<4x2x2xf32>
// STEP: %[[MAX:.*]] = ptrain.reduce max %[[G]] {axes = array<i64: 0>, keepdims = false} : tensor<4x2x2xf32> -> tensor<2x2xf32>
// STEP: %[[PS:.*]], %[[PT:.*]] = ptrain.vocab_parallel_cross_entropy_parts %[[L]], %{{.*}}, %[[MAX]] on @grid axis tp {vocab = 10 : i64} : tensor<2x2x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>
// STEP: %[[S:.*]] = ptrain.tp_all_reduce %[[PS]] on @grid axis tp : tensor<2x2xf32>
// STEP: %[[T:.*]] = ptrain.tp_all_reduce %[[PT]] on @grid axis tp : tensor<2x2xf32>
// STEP: %[[LOG:.*]] = ptrain.unary log %[[S]] : tensor<2x2xf32>
// STEP: %[[D:.*]] = ptrain.binary sub %[[LOG]], %[[T]]
// STEP: %[[LOSS:.*]] = ptrain.reduce mean %[[D]] {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x2xf32> -> tensor<f32>
// STEP: ptrain.vocab_parallel_cross_entropy_parts_grad %{{.*}}, %{{.*}}, %[[L]], %{{.*}}, %[[MAX]] on @grid axis tp {vocab = 10 : i64}
// STEP: ptrain.tp_all_reduce %{{.*}} on @grid axis tp : tensor<2x3x4xf32>
// STEP: ptrain.vocab_parallel_embedding_grad %{{.*}}, %arg0 on @grid axis tp : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<3x4xf32>
// STEP: return %[[LOSS]]

// MULTIPLE: error: --ptrain-shard-tp: vocab-multiple must be >= 1, got 0

// Without vocab-parallel the embedding and the head stay replicated.
// OFF: ptrain.state @wte key "wte" kind parameter : tensor<10x4xf32>
// OFF-NOT: vocab_parallel
// OFF-NOT: tp_all_gather

ptrain.state @wte key "wte" kind parameter : tensor<10x4xf32>
func.func @forward(%ids: tensor<2x3xi64>) -> tensor<2x3x10xf32> attributes {ptrain.layers = 0 : i64} {
  %w = ptrain.state_read @wte : tensor<10x4xf32>
  %x = ptrain.embedding %w, %ids : tensor<10x4xf32>, tensor<2x3xi64>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<10x4xf32> -> tensor<4x10xf32>
  %y = ptrain.matmul %x, %wt {ptrain.linear = {layer = 0 : i64, role = "lm_head"}} : tensor<2x3x4xf32>, tensor<4x10xf32>
  return %y : tensor<2x3x10xf32>
}
