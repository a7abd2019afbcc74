// RUN: ptrain-opt %s --split-input-file --ptrain-outline-elementwise --mlir-print-local-scope | FileCheck %s

// The attention scores' scale and mask: a scalar and a broadcast mask, one kernel of one loop nest.
// CHECK-LABEL: func.func @scale_mask
// CHECK: ptrain.binary mul {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 0 : i64
// CHECK: ptrain.binary add {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 1 : i64
// CHECK: ptrain.softmax
// CHECK-NOT: ptrain.kernel
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_kernel_0(%[[X:.*]]: memref<2x4x4xf32>, %[[S:.*]]: memref<f32>, %[[M:.*]]: memref<4x4xf32>, %[[OUT:.*]]: memref<2x4x4xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[S]], %[[M]] : {{.*}}) outs(%[[OUT]] : {{.*}})
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK: %[[Q:.*]] = arith.addf %[[P]], %[[C]] : f32
// CHECK: linalg.yield %[[Q]] : f32
func.func @scale_mask(%x: tensor<2x4x4xf32>, %mask: tensor<4x4xf32>) -> tensor<2x4x4xf32> {
  %scale = arith.constant dense<0.5> : tensor<f32>
  %0 = ptrain.binary mul %x, %scale : tensor<2x4x4xf32>, tensor<f32>
  %1 = ptrain.binary add %0, %mask : tensor<2x4x4xf32>, tensor<4x4xf32>
  %2 = ptrain.softmax %1 {axis = -1 : i64} : tensor<2x4x4xf32>
  return %2 : tensor<2x4x4xf32>
}

// -----

// An intermediate read after the chain is a second output; a size-1 dimension is read at index 0.
// CHECK-LABEL: func.func @two_outputs
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_kernel_0(%{{.*}}: memref<3x5xf32>, %{{.*}}: memref<1x5xf32>, %{{.*}}: memref<3x5xf32>, %{{.*}}: memref<3x5xf32>, %{{.*}}: memref<3x5xf32>)
// CHECK-NEXT: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>,
// CHECK: arith.subf
// CHECK: arith.divf
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, f32
func.func @two_outputs(%a: tensor<3x5xf32>, %b: tensor<1x5xf32>, %c: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = ptrain.binary sub %a, %b : tensor<3x5xf32>, tensor<1x5xf32>
  %1 = ptrain.binary div %0, %c : tensor<3x5xf32>, tensor<3x5xf32>
  return %0, %1 : tensor<3x5xf32>, tensor<3x5xf32>
}

// -----

// Two residual adds of the same computation share one kernel; a lone op and a pow are not chains.
// CHECK-LABEL: func.func @shared_kernel
// CHECK-COUNT-2: ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 0
// CHECK: ptrain.binary pow
// CHECK-NOT: ptrain.kernel_op
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_kernel_0
// CHECK-NOT: func.func @ptrain_kernel_1
func.func @shared_kernel(%x: tensor<8xf32>, %r: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = ptrain.binary add %x, %b : tensor<8xf32>, tensor<8xf32>
  %1 = ptrain.binary add %r, %0 : tensor<8xf32>, tensor<8xf32>
  %2 = ptrain.gelu %1 : tensor<8xf32>
  %3 = ptrain.binary add %2, %b : tensor<8xf32>, tensor<8xf32>
  %4 = ptrain.binary add %r, %3 : tensor<8xf32>, tensor<8xf32>
  %5 = ptrain.binary pow %4, %x : tensor<8xf32>, tensor<8xf32>
  %6 = ptrain.binary mul %5, %5 : tensor<8xf32>, tensor<8xf32>
  return %6 : tensor<8xf32>
}

// -----

// Two different chains: two kernels, numbered in order.
// CHECK-LABEL: func.func @two_kernels
// CHECK: ptrain.binary add {{.*}}@ptrain_kernels::@ptrain_kernel_0
// CHECK: ptrain.binary mul {{.*}}@ptrain_kernels::@ptrain_kernel_0
// CHECK: ptrain.binary sub {{.*}}@ptrain_kernels::@ptrain_kernel_1
// CHECK: ptrain.binary div {{.*}}@ptrain_kernels::@ptrain_kernel_1
// CHECK: func.func @ptrain_kernel_0
// CHECK: func.func @ptrain_kernel_1
func.func @two_kernels(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %0 = ptrain.binary add %x, %y : tensor<8xf32>, tensor<8xf32>
  %1 = ptrain.binary mul %0, %y : tensor<8xf32>, tensor<8xf32>
  %2 = ptrain.gelu %1 : tensor<8xf32>
  %3 = ptrain.binary sub %2, %y : tensor<8xf32>, tensor<8xf32>
  %4 = ptrain.binary div %3, %x : tensor<8xf32>, tensor<8xf32>
  return %4 : tensor<8xf32>
}
