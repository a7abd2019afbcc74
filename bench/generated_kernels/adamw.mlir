// The AdamW updates of adamw_bench.py: one bucket of 2^22 f32 elements (16 MiB per tensor, p, g, m and v 64 MiB
// together: beyond the caches), betas (0.9, 0.95), epsilon 1e-8; without clipping and with the global-norm
// clipping's mul by a rank-0 scale. --ptrain-outline-adamw generates ptrain_adamw_kernel_0 (7 arguments) and
// ptrain_adamw_kernel_1 (8: the scale folded in) in this order.
module {
  func.func @plain(%p: tensor<4194304xf32>, %g: tensor<4194304xf32>, %m: tensor<4194304xf32>, %v: tensor<4194304xf32>,
                   %t: tensor<i64>) -> (tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>) {
    %p1, %m1, %v1 = ptrain.adamw %p, %g, %m, %v, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 10, total = 1000, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<4194304xf32>, tensor<i64>
    return %p1, %m1, %v1 : tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>
  }
  func.func @clipped(%p: tensor<4194304xf32>, %g: tensor<4194304xf32>, %m: tensor<4194304xf32>, %v: tensor<4194304xf32>,
                     %s: tensor<f32>, %t: tensor<i64>) -> (tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>) {
    %gs = ptrain.binary mul %g, %s : tensor<4194304xf32>, tensor<f32>
    %p1, %m1, %v1 = ptrain.adamw %p, %gs, %m, %v, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 10, total = 1000, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<4194304xf32>, tensor<i64>
    return %p1, %m1, %v1 : tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>
  }
}
