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

// fp16 dynamic loss scaling: the scale, an unscaled gradient with its flag, the scaler's update.
// CHECK-LABEL: func.func @loss_scaler
func.func @loss_scaler(%s: tensor<3xf32>, %g: tensor<4x8xf32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<3xf32>) {
  // CHECK: ptrain.loss_scale %{{.*}} {initial_scale = 6.553600e+04 : f64} : tensor<3xf32> -> tensor<f32>
  %scale = ptrain.loss_scale %s {initial_scale = 65536.0 : f64} : tensor<3xf32> -> tensor<f32>
  // CHECK: ptrain.grad_unscale %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
  %u, %found = ptrain.grad_unscale %g, %scale : tensor<4x8xf32>, tensor<f32>
  // CHECK: ptrain.grad_scaler_update %{{.*}}, %{{.*}} {backoff_factor = 5.000000e-01 : f64
  // CHECK-SAME: growth_interval = 1000 : i64, hysteresis = 2 : i64
  // CHECK-SAME: : tensor<3xf32>, tensor<f32>
  %next = ptrain.grad_scaler_update %s, %found {initial_scale = 65536.0 : f64, growth_factor = 2.0 : f64,
      backoff_factor = 0.5 : f64, growth_interval = 1000 : i64, hysteresis = 2 : i64, min_scale = 1.0 : f64}
      : tensor<3xf32>, tensor<f32>
  return %found, %u, %next : tensor<f32>, tensor<4x8xf32>, tensor<3xf32>
}
