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
