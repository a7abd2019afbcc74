// RUN: split-file %s %t
// RUN: not ptrain-translate --emit-cpp %t/linear-ae.mlir -o %t/a.cpp 2>&1 | FileCheck %s --check-prefix=AE
// RUN: not test -e %t/a.cpp
// RUN: not ptrain-translate --emit-cpp %t/view.mlir 2>&1 | FileCheck %s --check-prefix=VIEW
// RUN: not ptrain-translate --emit-cpp %t/state-use.mlir 2>&1 | FileCheck %s --check-prefix=USE
// RUN: not ptrain-translate --emit-cpp %t/in-flight.mlir 2>&1 | FileCheck %s --check-prefix=FLIGHT
// RUN: not ptrain-translate --emit-cpp %t/no-wait.mlir 2>&1 | FileCheck %s --check-prefix=NOWAIT

// A codec without a runtime kernel: an error at the op's location naming the codec; no output file.
//--- linear-ae.mlir
func.func @f(%g: tensor<8x16xf32>, %we: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %c = ptrain.compress %g params(%we) {codec = #ptrain.linear_ae<dim = 4>}
      : tensor<8x16xf32> params(tensor<16x4xf32>) -> (tensor<8x4xf32>) loc("/blocks.1/send")
  return %c : tensor<8x4xf32>
}
// AE: error: loc("/blocks.1/send"): --emit-cpp: the codec #ptrain.linear_ae<dim = 4> has no runtime kernel

// A matrix view that reorders dimensions is not the row-major n x m matrix the kernels read.
//--- view.mlir
func.func @f(%g: tensor<4x8x16xf32>) -> (tensor<16x2xf32>, tensor<32x2xf32>) {
  %c:2 = ptrain.compress %g {codec = #ptrain.powersgd<rank = 2, warm_start = false, view = #ptrain.matrix_view<rows = [2], cols = [0, 1]>>}
      : tensor<4x8x16xf32> -> (tensor<16x2xf32>, tensor<32x2xf32>) loc("/cb")
  return %c#0, %c#1 : tensor<16x2xf32>, tensor<32x2xf32>
}
// VIEW: error: loc("/cb"): --emit-cpp: the matrix view #ptrain.matrix_view<rows = [2], cols = [0, 1]> of 'tensor<4x8x16xf32>' is not a split of the dimensions in order

// A compressed all-reduce's new state is complete only at its wait: no other use.
//--- state-use.mlir
ptrain.grid @grid(dp = 2)
ptrain.state @e key "sc/w/residual" kind codec_residual : tensor<8x16xf32>
func.func @f(%g: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = ptrain.state_read @e : tensor<8x16xf32>
  %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = sum
      {codec = #ptrain.cast<bf16>, error_feedback} : tensor<8x16xf32> state(tensor<8x16xf32>) -> state(tensor<8x16xf32>) loc("/sc")
  %y = ptrain.wait %r : !ptrain.request<tensor<8x16xf32>>
  %z = ptrain.binary add %y, %e1 : tensor<8x16xf32>, tensor<8x16xf32>
  return %z : tensor<8x16xf32>
}
// USE: error: loc("/sc"): --emit-cpp: the new codec state of a compressed all-reduce is complete only at its wait; it may only be written to a state (ptrain.state_write), not used by 'ptrain.binary'

// Reading the state while the all-reduce that updates it is in flight would see the old value.
//--- in-flight.mlir
ptrain.grid @grid(dp = 2)
ptrain.state @e key "sc/w/residual" kind codec_residual : tensor<8x16xf32>
func.func @f(%g: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = ptrain.state_read @e : tensor<8x16xf32>
  %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = sum
      {codec = #ptrain.cast<bf16>, error_feedback} : tensor<8x16xf32> state(tensor<8x16xf32>) -> state(tensor<8x16xf32>)
  ptrain.state_write %e1 to @e : tensor<8x16xf32>
  %again = ptrain.state_read @e : tensor<8x16xf32> loc("/read_again")
  %y = ptrain.wait %r : !ptrain.request<tensor<8x16xf32>>
  %z = ptrain.binary add %y, %again : tensor<8x16xf32>, tensor<8x16xf32>
  return %z : tensor<8x16xf32>
}
// FLIGHT: error: loc("/read_again"): --emit-cpp: the state @e is accessed while the compressed all-reduce that updates it is in flight

// The codec state is written back after the request's wait: a request without one is an error.
//--- no-wait.mlir
ptrain.grid @grid(dp = 2)
ptrain.state @e key "sc/w/residual" kind codec_residual : tensor<8x16xf32>
func.func @f(%g: tensor<8x16xf32>) {
  %e = ptrain.state_read @e : tensor<8x16xf32>
  %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = sum
      {codec = #ptrain.cast<bf16>, error_feedback} : tensor<8x16xf32> state(tensor<8x16xf32>) -> state(tensor<8x16xf32>) loc("/sc")
  ptrain.state_write %e1 to @e : tensor<8x16xf32>
  return
}
// NOWAIT: error: loc("/sc"): --emit-cpp: a compressed all-reduce with codec state needs exactly one ptrain.wait of its request in the same function
