// RUN: split-file %s %t
// RUN: ptrain-translate --emit-cpp %t/tp2.mlir -o %t/tp2.cpp
// RUN: FileCheck %s --input-file %t/tp2.cpp
// RUN: c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I%S/../../../include %t/tp2.cpp
// RUN: not ptrain-translate --emit-cpp %t/no-axis.mlir 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not ptrain-translate --emit-cpp %t/no-grid.mlir 2>&1 | FileCheck %s --check-prefix=NOGRID
// RUN: not ptrain-translate --emit-cpp %t/misfit.mlir 2>&1 | FileCheck %s --check-prefix=MISFIT
// RUN: not ptrain-translate --emit-cpp %t/i64.mlir 2>&1 | FileCheck %s --check-prefix=I64

// Megatron's f/g pair on a grid (tp = 2) around a column-parallel linear whose weight --ptrain-shard-tp sliced
// (torch's [out, in] weight: dimension 0 of the global 8x4 initializer in 2 groups, as Q|K of a fused
// projection): f is an alias (no call), g an all-reduce (sum) on the tp communicator waited at once, and
// ptrain_step_init loads the weight at its global shape and cuts this rank's part (initStates).
// CHECK: #include <vector>
// CHECK: const int64_t tp_slice_0_global[2] = {8, 4};
// CHECK: const TPSlice kTPSlices[] = {
// CHECK-NEXT: {&state_0_w, kStateDims + 0, tp_slice_0_global, 32, 2, 0, 2, 0, 2, 8},
// CHECK: ptrain_status_t initStates(const char *path) {
// CHECK: PTRAIN_STEP_CALL(ptrain_state_init_onnx(descs.data(), num_active_states, path));
// CHECK: const int64_t c = gridCoordinate(ptrain_rank, s.axis);
// CHECK: PTRAIN_STEP_CALL(ptrain_slice(globals[j].data(), 4, s.rank, s.global_dims, offsets, piece_dims, piece.data()));
// CHECK: PTRAIN_STEP_CALL(ptrain_insert_slice(piece.data(), 4, s.rank, piece_dims, at, s.local_dims, *s.local));
// CHECK-LABEL: ptrain_status_t ptrain_step_init(
// CHECK: PTRAIN_STEP_CALL(createGroup(in_group, &comm_grid_tp));
// CHECK: PTRAIN_STEP_CALL(initStates(path));
// CHECK-LABEL: ptrain_status_t ptrain_step_f(const float *arg0, float *out_0) {
// CHECK: // ptrain.tp_copy
// CHECK-NEXT: const float *[[X:v[0-9]+]] = arg0;
// CHECK: ptrain_gemm_f32({{.*}}[[X]],
// CHECK: // ptrain.tp_all_reduce
// CHECK: ptrain_request_t tp_request = nullptr;
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_all_reduce_start(comm_grid_tp, [[P:v[0-9]+]], [[S:v[0-9]+]], 12, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &tp_request));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_wait(tp_request));
// CHECK: ptrain_copy_bytes([[S]], 48, out_0)
//--- tp2.mlir
ptrain.grid @grid(tp = 2)
ptrain.state @w key "w" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 2, shape = [8, 4]>} : tensor<4x4xf32>
func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %c = ptrain.tp_copy %x on @grid axis tp : tensor<3x4xf32>
  %w = ptrain.state_read @w : tensor<4x4xf32>
  %y = ptrain.matmul %c, %w : tensor<3x4xf32>, tensor<4x4xf32>
  %s = ptrain.tp_all_reduce %y on @grid axis tp : tensor<3x4xf32>
  return %s : tensor<3x4xf32>
}

// A tp_slice over an axis the grid does not have.
//--- no-axis.mlir
ptrain.grid @grid(tp = 2)
ptrain.state @w key "w" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "mp", dim = 0, groups = 1, shape = [8, 4]>} : tensor<4x4xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = ptrain.tp_all_reduce %x on @grid axis tp : tensor<4xf32>
  return %s : tensor<4xf32>
}
// AXIS: error: --emit-cpp: the grid @grid has no axis "mp" for the parameter's ptrain.tp_slice

// A sliced parameter in a module without collectives (no grid to take the rank's coordinate from).
//--- no-grid.mlir
ptrain.state @w key "w" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [8, 4]>} : tensor<4x4xf32>
func.func @f() -> tensor<4x4xf32> {
  %w = ptrain.state_read @w : tensor<4x4xf32>
  return %w : tensor<4x4xf32>
}
// NOGRID: error: --emit-cpp: a parameter sliced over axis "tp" needs a ptrain.grid with that axis and a collective on it

// A global shape that is not tp times the local one along dim (a slice for tp = 4 on a grid of tp = 2; a
// slice that does not fit the state's type at all is the verifier's, test/Dialect/PTrain/plan-attrs-invalid.mlir).
//--- misfit.mlir
ptrain.grid @grid(tp = 2)
ptrain.state @w key "w" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [8, 4]>} : tensor<2x4xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = ptrain.tp_all_reduce %x on @grid axis tp : tensor<4xf32>
  return %s : tensor<4xf32>
}
// MISFIT: error: --emit-cpp: ptrain.tp_slice {{.*}} does not fit the f32 state type 'tensor<2x4xf32>' on 2 ranks of axis "tp"

// The runtime's tensor-parallel all-reduce sums f32.
//--- i64.mlir
ptrain.grid @grid(tp = 2)
func.func @f(%x: tensor<4xi64>) -> tensor<4xi64> {
  %s = ptrain.tp_all_reduce %x on @grid axis tp : tensor<4xi64>
  return %s : tensor<4xi64>
}
// I64: error: --emit-cpp: a tensor-parallel all-reduce of a non-f32 tensor without accumulate = f32 is not supported
