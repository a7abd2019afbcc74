// RUN: ptrain-translate --emit-cuda %s -o %t.cu
// RUN: FileCheck %s --input-file %t.cu
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu

// ZeRO-1's collectives (--ptrain-build-training-step zero=1, docs/DistributedOptimizer.md) on CUDA: the shared
// collective emitter (lib/Target/Common/StepOps.cpp) with the CUDA hook, ncclReduceScatter / ncclAllGather on
// the dp communicator and the compute stream (ptrain_nccl_reduce_scatter / _all_gather); NCCL's counts are the
// CPU's (the elements each rank keeps, the elements each rank sends); each wait is the watchdog over that
// communicator (ptrain_nccl_wait); the rank's shard of a replicated tensor is a slice at gridCoordinate(rank, dp)
// * 4; no MPI call of the CPU target on the dp communicator. The same module's CPU code:
// test/Target/Cpp/emit-cpp-zero.mlir.
// CHECK-LABEL: ptrain_status_t device_zero(const float *d_arg0, const float *d_arg1, float *d_out_0) {
// CHECK: // ptrain.reduce_scatter_start
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_reduce_scatter(comm_grid_dp, d_arg0, [[RS:v[0-9]+]], 4, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_AVG));
// CHECK: // ptrain.wait
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_wait(comm_grid_dp));
// CHECK: // ptrain.tp_split
// CHECK: const int64_t offsets[1] = {gridCoordinate(ptrain_rank, 0) * 4};
// CHECK: // ptrain.all_gather_start
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_all_gather(comm_grid_dp, [[U:v[0-9]+]], [[AG:v[0-9]+]], 4, PTRAIN_DTYPE_F32));
// CHECK: // ptrain.wait
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_wait(comm_grid_dp));
// CHECK-NOT: ptrain_reduce_scatter_start(comm_grid_dp
// CHECK-NOT: ptrain_all_gather_start(comm_grid_dp

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
