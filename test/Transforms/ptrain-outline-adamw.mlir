// RUN: ptrain-opt %s --split-input-file --ptrain-outline-adamw --mlir-print-local-scope | FileCheck %s

// Global-norm clipping: the gradient is the mul of the gradient by the rank-0 clip scale, which only the update
// reads, so the kernel takes the unscaled gradient and the scale (8 arguments); the second update of the same
// size and betas shares the kernel though its weight decay differs (an argument: the coefficients).
// CHECK-LABEL: func.func @clipped
// CHECK: ptrain.adamw {{.*}}ptrain.adamw_kernel = @ptrain_kernels::@ptrain_adamw_kernel_0
// CHECK: ptrain.adamw {{.*}}ptrain.adamw_kernel = @ptrain_kernels::@ptrain_adamw_kernel_0
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_adamw_kernel_0(%{{.*}}: memref<1000xf32>, %{{.*}}: memref<1000xf32>, %{{.*}}: memref<1000xf32>, %{{.*}}: memref<1000xf32>, %{{.*}}: memref<1xf32>, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32)
// CHECK: scf.for {{.*}} to %c992 step %c16
// CHECK: vector.load {{.*}} : memref<1000xf32>, vector<16xf32>
// CHECK: math.sqrt {{.*}} : vector<16xf32>
// CHECK: arith.divf {{.*}} : vector<16xf32>
// CHECK: vector.store {{.*}} : memref<1000xf32>, vector<16xf32>
// CHECK: scf.for {{.*}} = %c992{{.*}} to %c1000 step %c1
// CHECK: math.sqrt {{.*}} : f32
// CHECK-NOT: contract
// CHECK-NOT: func.func @ptrain_adamw_kernel_1
func.func @clipped(%p: tensor<1000xf32>, %g: tensor<1000xf32>, %m: tensor<1000xf32>, %v: tensor<1000xf32>,
                   %s: tensor<f32>, %t: tensor<i64>) -> (tensor<1000xf32>, tensor<1000xf32>) {
  %gs = ptrain.binary mul %g, %s : tensor<1000xf32>, tensor<f32>
  %p1, %m1, %v1 = ptrain.adamw %p, %gs, %m, %v, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<1000xf32>, tensor<i64>
  %hs = ptrain.binary mul %s, %g : tensor<f32>, tensor<1000xf32>
  %p2, %m2, %v2 = ptrain.adamw %p1, %hs, %m1, %v1, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<1000xf32>, tensor<i64>
  return %p2, %m2 : tensor<1000xf32>, tensor<1000xf32>
}

// -----

// No clipping, other betas, a size below the vector width, and a mul the update does not alone read: three
// kernels of 7 arguments (the scaled gradient is then the kernel's gradient); an update of dynamic shape keeps
// the runtime's kernel.
// CHECK-LABEL: func.func @unclipped
// CHECK: ptrain.adamw {{.*}}ptrain.adamw_kernel = @ptrain_kernels::@ptrain_adamw_kernel_0
// CHECK: ptrain.adamw {{.*}}ptrain.adamw_kernel = @ptrain_kernels::@ptrain_adamw_kernel_1
// CHECK: ptrain.adamw {{.*}}ptrain.adamw_kernel = @ptrain_kernels::@ptrain_adamw_kernel_2
// CHECK: ptrain.adamw
// CHECK-NOT: ptrain.adamw_kernel
// CHECK: func.func @ptrain_adamw_kernel_0(%{{.*}}: memref<64x{{.*}}, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32) {
// CHECK: func.func @ptrain_adamw_kernel_1(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32) {
// CHECK-NOT: vector.load
// CHECK: func.func @ptrain_adamw_kernel_2(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32) {
func.func @unclipped(%p: tensor<64xf32>, %g: tensor<64xf32>, %q: tensor<8xf32>, %h: tensor<8xf32>, %s: tensor<f32>,
                     %d: tensor<?xf32>, %t: tensor<i64>) -> (tensor<64xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xf32>) {
  %p1, %m1, %v1 = ptrain.adamw %p, %g, %g, %g, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<64xf32>, tensor<i64>
  %q1, %n1, %w1 = ptrain.adamw %q, %h, %h, %h, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.8 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64>
  %hs = ptrain.binary mul %h, %s : tensor<8xf32>, tensor<f32>
  %q2, %n2, %w2 = ptrain.adamw %q, %hs, %h, %h, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64>
  %d1, %e1, %f1 = ptrain.adamw %d, %d, %d, %d, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<?xf32>, tensor<i64>
  return %p1, %q1, %q2, %hs, %d1 : tensor<64xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xf32>
}

// -----

// An update already marked keeps its kernel: running the pass again changes nothing.
// CHECK-LABEL: func.func @marked
// CHECK: ptrain.adamw {{.*}}ptrain.adamw_kernel = @ptrain_kernels::@mine
// CHECK-NOT: module @ptrain_kernels
func.func @marked(%p: tensor<8xf32>, %t: tensor<i64>) -> tensor<8xf32> {
  %p1, %m1, %v1 = ptrain.adamw %p, %p, %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64, ptrain.adamw_kernel = @ptrain_kernels::@mine} : tensor<8xf32>, tensor<i64>
  return %p1 : tensor<8xf32>
}
