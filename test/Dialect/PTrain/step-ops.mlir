// RUN: ptrain-opt %s | ptrain-opt | FileCheck %s
// RUN: ptrain-opt %s --mlir-print-op-generic | ptrain-opt | FileCheck %s

// Global-norm clipping: the squared norm of each gradient, their sum, the scale, the clipped gradient.
// CHECK-LABEL: func.func @clip
func.func @clip(%g: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: ptrain.sum_squares %{{.*}} : tensor<4x8xf32> -> tensor<f32>
  %sg = ptrain.sum_squares %g : tensor<4x8xf32> -> tensor<f32>
  %sb = ptrain.sum_squares %b : tensor<8xf32> -> tensor<f32>
  %s = ptrain.binary add %sg, %sb : tensor<f32>, tensor<f32>
  // CHECK: ptrain.clip_scale %{{.*}} {max_norm = 1.000000e+00 : f64} : tensor<f32>
  %scale = ptrain.clip_scale %s {max_norm = 1.0 : f64} : tensor<f32>
  %c = ptrain.binary mul %g, %scale : tensor<4x8xf32>, tensor<f32>
  return %c : tensor<4x8xf32>
}

// SGD without momentum (no buffer) and with momentum (buffer in, buffer out).
// CHECK-LABEL: func.func @sgd
func.func @sgd(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %buf: tensor<4x8xf32>, %t: tensor<i64>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: ptrain.sgd %{{.*}}, %{{.*}}, %{{.*}} {momentum = 0.000000e+00 : f64
  // CHECK-SAME: : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  %p1 = ptrain.sgd %p, %g, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-01 : f64, warmup = 0, total = 10,
      min_ratio = 0.0 : f64>, momentum = 0.0 : f64, weight_decay = 0.0 : f64}
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  // CHECK: ptrain.sgd %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {momentum = 9.000000e-01 : f64
  // CHECK-SAME: -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p2, %buf2 = ptrain.sgd %p, %g, %t, %buf {schedule = #ptrain.lr_schedule<peak = 1.0e-01 : f64, warmup = 0,
      total = 10, min_ratio = 0.0 : f64>, momentum = 0.9 : f64, weight_decay = 1.0e-02 : f64}
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %p1, %p2, %buf2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
