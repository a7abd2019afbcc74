// RUN: not ptrain-opt %s --ptrain-outline-adamw 2>&1 | FileCheck %s

// A kernel module that already has the name the pass would give (a module outlined elsewhere, its updates
// unmarked) is an error at the update, not a second function of that name.
// CHECK: error: --ptrain-outline-adamw: @ptrain_kernels already has @ptrain_adamw_kernel_0; the pass runs once
module {
  func.func @taken(%p: tensor<8xf32>, %t: tensor<i64>) -> tensor<8xf32> {
    %p1, %m1, %v1 = ptrain.adamw %p, %p, %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 10, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64>
    return %p1 : tensor<8xf32>
  }
  module @ptrain_kernels {
    func.func @ptrain_adamw_kernel_0() {
      return
    }
  }
}
