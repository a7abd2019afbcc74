// RUN: split-file %s %t
// RUN: ptrain-translate --emit-cpp %t/vp.mlir -o %t/vp.cpp
// RUN: FileCheck %s --input-file %t/vp.cpp
// RUN: c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I%S/../../../include %t/vp.cpp
// RUN: not ptrain-translate --emit-cpp %t/gather-mask.mlir 2>&1 | FileCheck %s --check-prefix=MASK
// RUN: not ptrain-translate --emit-cpp %t/padded-groups.mlir 2>&1 | FileCheck %s --check-prefix=GROUPS

// Megatron's vocabulary-parallel embedding, LM head and loss on a grid (dp = 1, tp = 2) with a vocabulary of 9
// padded to 10 (--ptrain-shard-tp="vocab-parallel=true"): each rank holds 5 rows of the tied table. The
// rank-local kernels get the rank's coordinate on tp (grid axis 1), the logits' gather and the maxima's gather
// are blocking all-gathers along their dimension on the tp communicator, and ptrain_step_init cuts the
// 9-row initializer into rows [5c, 5c + 5) with zero rows past 9 (padded = 10).
// CHECK: const TPSlice kTPSlices[] = {
// CHECK-NEXT: {&state_0_wte, kStateDims + 0, tp_slice_0_global, 36, 2, 0, 1, 1, 2, 10},
// CHECK: if (s.padded != s.global_dims[s.dim]) {
// CHECK: PTRAIN_STEP_CALL(ptrain_zero_bytes(*s.local, s.global_count / real * chunk * 4));
// CHECK-LABEL: ptrain_status_t ptrain_step_f(const int64_t *arg0, const int64_t *arg1, float *out_0, float *out_1, float *out_2, float *out_3) {
// CHECK: // ptrain.vocab_parallel_embedding
// CHECK: ptrain_vocab_parallel_embedding_fwd_f32([[T:v[0-9]+]], arg0, 6, 5, 4, gridCoordinate(ptrain_rank, 1), 2, [[E:v[0-9]+]])
// CHECK: // ptrain.tp_all_gather
// CHECK: static const int64_t dims[3] = {2, 3, 5};
// CHECK-NEXT: ptrain_all_gather_dim(comm_grid_tp, [[L:v[0-9]+]], PTRAIN_DTYPE_F32, 3, dims, 2, {{v[0-9]+}})
// CHECK: // ptrain.tp_all_gather
// CHECK: static const int64_t dims[3] = {1, 2, 3};
// CHECK-NEXT: ptrain_all_gather_dim(comm_grid_tp, {{v[0-9]+}}, PTRAIN_DTYPE_F32, 3, dims, 0, {{v[0-9]+}})
// CHECK: // ptrain.vocab_parallel_cross_entropy_parts
// CHECK: ptrain_vocab_parallel_ce_parts_fwd_f32([[L]], arg1, [[M:v[0-9]+]], 6, 5, 9, gridCoordinate(ptrain_rank, 1), 2, [[S:v[0-9]+]], [[G:v[0-9]+]])
// CHECK: // ptrain.vocab_parallel_cross_entropy_parts_grad
// CHECK: ptrain_vocab_parallel_ce_parts_bwd_f32([[S]], [[G]], [[L]], arg1, [[M]], 6, 5, 9, gridCoordinate(ptrain_rank, 1), 2, {{v[0-9]+}})
// CHECK: // ptrain.vocab_parallel_embedding_grad
// CHECK: ptrain_vocab_parallel_embedding_bwd_f32([[E]], arg0, 6, 5, 4, gridCoordinate(ptrain_rank, 1), 2, {{v[0-9]+}})
//--- vp.mlir
ptrain.grid @grid(dp = 1, tp = 2)
ptrain.state @wte key "wte" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [9, 4], padded = 10>}
    : tensor<5x4xf32>
func.func @f(%ids: tensor<2x3xi64>, %labels: tensor<2x3xi64>)
    -> (tensor<2x3x10xf32>, tensor<2x3x5xf32>, tensor<5x4xf32>, tensor<2x3xf32>) {
  %t = ptrain.state_read @wte : tensor<5x4xf32>
  %e = ptrain.vocab_parallel_embedding %t, %ids on @grid axis tp : tensor<5x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %tt = ptrain.transpose %t {perm = array<i64: 1, 0>} : tensor<5x4xf32> -> tensor<4x5xf32>
  %l = ptrain.matmul %e, %tt : tensor<2x3x4xf32>, tensor<4x5xf32>
  %all = ptrain.tp_all_gather %l on @grid axis tp dim 2 : tensor<2x3x5xf32> -> tensor<2x3x10xf32>
  %lm = ptrain.reduce max %l {axes = array<i64: 2>, keepdims = false} : tensor<2x3x5xf32> -> tensor<2x3xf32>
  %st = ptrain.reshape %lm : tensor<2x3xf32> -> tensor<1x2x3xf32>
  %ms = ptrain.tp_all_gather %st on @grid axis tp dim 0 : tensor<1x2x3xf32> -> tensor<2x2x3xf32>
  %m = ptrain.reduce max %ms {axes = array<i64: 0>, keepdims = false} : tensor<2x2x3xf32> -> tensor<2x3xf32>
  %s, %g = ptrain.vocab_parallel_cross_entropy_parts %l, %labels, %m on @grid axis tp {vocab = 9 : i64}
      : tensor<2x3x5xf32>, tensor<2x3xi64>, tensor<2x3xf32>
  %dl = ptrain.vocab_parallel_cross_entropy_parts_grad %s, %g, %l, %labels, %m on @grid axis tp {vocab = 9 : i64}
      : tensor<2x3xf32>, tensor<2x3x5xf32>, tensor<2x3xi64>
  %dt = ptrain.vocab_parallel_embedding_grad %e, %ids on @grid axis tp : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<5x4xf32>
  return %all, %dl, %dt, %s : tensor<2x3x10xf32>, tensor<2x3x5xf32>, tensor<5x4xf32>, tensor<2x3xf32>
}

// An all-gather of an i1 mask has no kernel: named with its location.
//--- gather-mask.mlir
ptrain.grid @grid(tp = 2)
func.func @f(%x: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<8xf32> {
  %z = arith.constant dense<0.0> : tensor<4xf32>
  %m = ptrain.compare gt %x, %z : tensor<4xf32>, tensor<4xf32>
  %g = ptrain.tp_all_gather %m on @grid axis tp dim 0 : tensor<4xi1> -> tensor<8xi1> loc("/gather")
  %y = ptrain.select %g, %w, %w : tensor<8xi1>, tensor<8xf32>, tensor<8xf32>
  return %y : tensor<8xf32>
}
// MASK: error: loc("/gather"): --emit-cpp: 'ptrain.tp_all_gather' supports f32 and i64 tensors, got 'tensor<4xi1>'

// The padded size must be tp times the local rows (a padded slice of one group is the verifier's C5).
//--- padded-groups.mlir
ptrain.grid @grid(tp = 2)
ptrain.state @w key "w" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [9, 4], padded = 10>}
    : tensor<10x4xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = ptrain.tp_all_reduce %x on @grid axis tp : tensor<4xf32>
  return %s : tensor<4xf32>
}
// GROUPS: error: --emit-cpp: ptrain.tp_slice {{.*}} does not fit the f32 state type 'tensor<10x4xf32>' on 2 ranks of axis "tp"
