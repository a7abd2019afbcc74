// RUN: not ptrain-translate --emit-cpp %s --split-input-file --emit-cpp-kernels=%t.o 2>&1 | FileCheck %s

// A `ptrain.adamw_kernel` mark naming no AdamW kernel of the update (here the kernel the pass generated for an
// update of another size; the pass keeps an existing mark) is the emitter's error at the op, not a call that
// would update the wrong number of elements.
// CHECK: error: --emit-cpp: 'ptrain.adamw_kernel' names @ptrain_kernels::@ptrain_adamw_kernel_0, which is not an AdamW kernel of this update
module {
  func.func @wrong_size(%p: tensor<8xf32>, %q: tensor<16xf32>, %t: tensor<i64>) -> (tensor<8xf32>, tensor<16xf32>) {
    %p1, %m1, %v1 = ptrain.adamw %p, %p, %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64>
    %q1, %n1, %w1 = ptrain.adamw %q, %q, %q, %q, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64, ptrain.adamw_kernel = @ptrain_kernels::@ptrain_adamw_kernel_0} : tensor<16xf32>, tensor<i64>
    return %p1, %q1 : tensor<8xf32>, tensor<16xf32>
  }
}

// -----

// A kernel that takes a clip scale (8 arguments, generated for the clipped update) named by an update whose
// gradient is no clip scale's mul.
// CHECK: error: --emit-cpp: 'ptrain.adamw_kernel' names @ptrain_kernels::@ptrain_adamw_kernel_0, which takes a clip scale, but the gradient is no clip scale's mul
module {
  func.func @unclipped(%p: tensor<8xf32>, %s: tensor<f32>, %t: tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>) {
    %ps = ptrain.binary mul %p, %s : tensor<8xf32>, tensor<f32>
    %p1, %m1, %v1 = ptrain.adamw %p, %ps, %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64>
    %q1, %n1, %w1 = ptrain.adamw %p, %p, %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64, ptrain.adamw_kernel = @ptrain_kernels::@ptrain_adamw_kernel_0} : tensor<8xf32>, tensor<i64>
    return %p1, %q1 : tensor<8xf32>, tensor<8xf32>
  }
}
