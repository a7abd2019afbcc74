// RUN: ptrain-opt %s | ptrain-opt | FileCheck %s
// RUN: ptrain-opt %s --mlir-print-op-generic | ptrain-opt | FileCheck %s
// RUN: ptrain-opt %s --canonicalize --cse | FileCheck %s --check-prefix=KEPT

// Megatron's f and g round-trip in custom and generic form; as communication they survive DCE and CSE.

ptrain.grid @grid(pp = 2, tp = 4)

// CHECK-LABEL: func.func @f_and_g
// KEPT-LABEL: func.func @f_and_g
func.func @f_and_g(%x: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
  // CHECK: %[[F:.*]] = ptrain.tp_copy %{{.*}} on @grid axis tp : tensor<4x64x128xf32>
  // KEPT-COUNT-2: ptrain.tp_copy
  %f = ptrain.tp_copy %x on @grid axis tp : tensor<4x64x128xf32>
  %unused = ptrain.tp_copy %x on @grid axis tp : tensor<4x64x128xf32>
  // CHECK: ptrain.tp_all_reduce %[[F]] on @grid axis tp : tensor<4x64x128xf32>
  // KEPT-COUNT-2: ptrain.tp_all_reduce
  %g = ptrain.tp_all_reduce %f on @grid axis tp : tensor<4x64x128xf32>
  %twice = ptrain.tp_all_reduce %f on @grid axis tp : tensor<4x64x128xf32>
  return %g : tensor<4x64x128xf32>
}

// A 16-bit all-reduce declares its fp32 sum (C3); the attribute round-trips.
// CHECK-LABEL: func.func @g_bf16
func.func @g_bf16(%x: tensor<4x8xbf16>, %y: tensor<4x8xf16>) -> (tensor<4x8xbf16>, tensor<4x8xf16>) {
  // CHECK: ptrain.tp_all_reduce %{{.*}} on @grid axis tp {accumulate = f32} : tensor<4x8xbf16>
  %g = ptrain.tp_all_reduce %x on @grid axis tp {accumulate = f32} : tensor<4x8xbf16>
  // CHECK: ptrain.tp_all_reduce %{{.*}} on @grid axis tp {accumulate = f32} : tensor<4x8xf16>
  %h = ptrain.tp_all_reduce %y on @grid axis tp {accumulate = f32} : tensor<4x8xf16>
  return %g, %h : tensor<4x8xbf16>, tensor<4x8xf16>
}

// A rank's block of a replicated tensor: no communication, so an unused one is deleted.
// CHECK-LABEL: func.func @slice
// KEPT-LABEL: func.func @slice
func.func @slice(%x: tensor<96x4xf32>) -> tensor<48x4xf32> {
  // CHECK: ptrain.tp_split %{{.*}} on @grid axis tp dim 0 : tensor<96x4xf32> -> tensor<24x4xf32>
  // KEPT-COUNT-1: ptrain.tp_split
  %s = ptrain.tp_split %x on @grid axis tp dim 0 : tensor<96x4xf32> -> tensor<24x4xf32>
  %unused = ptrain.tp_split %x on @grid axis tp dim 1 : tensor<96x4xf32> -> tensor<96x1xf32>
  %c = ptrain.concat %s, %s {axis = 0 : i64} : tensor<24x4xf32>, tensor<24x4xf32> -> tensor<48x4xf32>
  return %c : tensor<48x4xf32>
}
