// RUN: split-file %s %t
// RUN: ptrain-translate --emit-cpp %t/zero.mlir -o %t/zero.cpp
// RUN: FileCheck %s --input-file %t/zero.cpp
// RUN: c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I%S/../../../include %t/zero.cpp
// RUN: not ptrain-translate --emit-cpp %t/dim1.mlir 2>&1 | FileCheck %s --check-prefix=DIM
// RUN: not ptrain-translate --emit-cpp %t/max.mlir 2>&1 | FileCheck %s --check-prefix=MAX
// RUN: not ptrain-translate --emit-cpp %t/gather-dim1.mlir 2>&1 | FileCheck %s --check-prefix=GDIM

// ZeRO-1's collectives (--ptrain-build-training-step zero=1, docs/DistributedOptimizer.md) on the dp
// communicator: the reduce-scatter's count is the elements each rank keeps, the all-gather's the elements each
// rank sends; the rank's shard of a replicated tensor is a slice at gridCoordinate(rank, dp) * 4.
// CHECK-LABEL: ptrain_status_t ptrain_step_zero(const float *arg0, const float *arg1, float *out_0) {
// CHECK: // ptrain.reduce_scatter_start
// CHECK: PTRAIN_STEP_CALL(ptrain_reduce_scatter_start(comm_grid_dp, arg0, [[RS:v[0-9]+]], 4, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_AVG, &[[RS]]_request));
// CHECK: ptrain_request_t request = [[RS]]_request;
// CHECK: PTRAIN_STEP_CALL(ptrain_wait(request));
// CHECK: // ptrain.tp_split
// CHECK: const int64_t offsets[1] = {gridCoordinate(ptrain_rank, 0) * 4};
// CHECK: // ptrain.all_gather_start
// CHECK: PTRAIN_STEP_CALL(ptrain_all_gather_start(comm_grid_dp, [[U:v[0-9]+]], [[AG:v[0-9]+]], 4, PTRAIN_DTYPE_F32, &[[AG]]_request));
// CHECK: ptrain_request_t request = [[AG]]_request;
// CHECK: PTRAIN_STEP_CALL(ptrain_wait(request));

//--- zero.mlir
ptrain.grid @grid(dp = 2)
func.func @zero(%g: tensor<8xf32>, %p: tensor<8xf32>) -> tensor<8xf32> {
  %r = ptrain.reduce_scatter_start %g on @grid axes [dp] scatter_dim = 0 reduction = avg : tensor<8xf32> -> !ptrain.request<tensor<4xf32>>
  %s = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  %mine = ptrain.tp_split %p on @grid axis dp dim 0 : tensor<8xf32> -> tensor<4xf32>
  %u = ptrain.binary sub %mine, %s : tensor<4xf32>, tensor<4xf32>
  %a = ptrain.all_gather_start %u on @grid axes [dp] gather_dim = 0 : tensor<4xf32> -> !ptrain.request<tensor<8xf32>>
  %full = ptrain.wait %a : !ptrain.request<tensor<8xf32>>
  return %full : tensor<8xf32>
}

// Only dimension 0 (MPI_Ireduce_scatter_block's contiguous blocks) is emitted.
//--- dim1.mlir
ptrain.grid @grid(dp = 2)
func.func @f(%g: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %r = ptrain.reduce_scatter_start %g on @grid axes [dp] scatter_dim = 1 reduction = sum : tensor<2x8xf32> -> !ptrain.request<tensor<2x4xf32>>
  %s = ptrain.wait %r : !ptrain.request<tensor<2x4xf32>>
  return %s : tensor<2x4xf32>
}
// DIM: error: --emit-cpp: only f32 reduce-scatters along dimension 0 are supported

// Sum and avg only.
//--- max.mlir
ptrain.grid @grid(dp = 2)
func.func @f(%g: tensor<8xf32>) -> tensor<4xf32> {
  %r = ptrain.reduce_scatter_start %g on @grid axes [dp] scatter_dim = 0 reduction = max : tensor<8xf32> -> !ptrain.request<tensor<4xf32>>
  %s = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return %s : tensor<4xf32>
}
// MAX: error: --emit-cpp: only sum and avg reduce-scatters are supported

//--- gather-dim1.mlir
ptrain.grid @grid(dp = 2)
func.func @f(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %r = ptrain.all_gather_start %x on @grid axes [dp] gather_dim = 1 : tensor<2x4xf32> -> !ptrain.request<tensor<2x8xf32>>
  %s = ptrain.wait %r : !ptrain.request<tensor<2x8xf32>>
  return %s : tensor<2x8xf32>
}
// GDIM: error: --emit-cpp: only f32 all-gathers along dimension 0 are supported
