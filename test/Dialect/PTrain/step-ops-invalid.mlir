// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// SumSquares (C1): a ranked f32 input.
func.func @sum_squares_c1(%x: tensor<4xi64>) {
  // expected-error@+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %0 = ptrain.sum_squares %x : tensor<4xi64> -> tensor<f32>
  return
}

// -----

// SumSquares (C2): a rank-0 f32 result.
func.func @sum_squares_c2(%x: tensor<4xf32>) {
  // expected-error@+1 {{result #0 must be 0D tensor of 32-bit float values}}
  %0 = ptrain.sum_squares %x : tensor<4xf32> -> tensor<1xf32>
  return
}

// -----

// ClipScale (C1): max_norm > 0.
func.func @clip_scale_c1_zero(%s: tensor<f32>) {
  // expected-error@+1 {{max_norm must be finite and > 0, got 0}}
  %0 = ptrain.clip_scale %s {max_norm = 0.0 : f64} : tensor<f32>
  return
}

// -----

// ClipScale (C1): a finite max_norm.
func.func @clip_scale_c1_nan(%s: tensor<f32>) {
  // expected-error@+1 {{max_norm must be finite and > 0, got nan}}
  %0 = ptrain.clip_scale %s {max_norm = 0x7FF8000000000000 : f64} : tensor<f32>
  return
}

// -----

// ClipScale (C2): rank-0 f32.
func.func @clip_scale_c2(%s: tensor<2xf32>) {
  // expected-error@+1 {{operand #0 must be 0D tensor of 32-bit float values}}
  %0 = ptrain.clip_scale %s {max_norm = 1.0 : f64} : tensor<2xf32>
  return
}

// -----

// SGD (C1): momentum in [0, 1).
func.func @sgd_c1_momentum(%p: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{needs momentum in [0, 1) and a finite weight_decay >= 0, got momentum 1.000000e+00 and weight_decay 0.000000e+00}}
  %0, %1 = ptrain.sgd %p, %p, %t, %p {schedule = #ptrain.lr_schedule<peak = 1.0e-01 : f64, warmup = 0, total = 10,
      min_ratio = 0.0 : f64>, momentum = 1.0 : f64, weight_decay = 0.0 : f64}
      : (tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// SGD (C1): weight_decay >= 0.
func.func @sgd_c1_decay(%p: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{got momentum 0.000000e+00 and weight_decay -1.000000e+00}}
  %0 = ptrain.sgd %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-01 : f64, warmup = 0, total = 10,
      min_ratio = 0.0 : f64>, momentum = 0.0 : f64, weight_decay = -1.0 : f64}
      : (tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// SGD (C2): momentum > 0 needs the buffer.
func.func @sgd_c2_missing(%p: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{momentum_buf and new_momentum_buf must be given exactly when momentum > 0 (momentum 9.000000e-01)}}
  %0 = ptrain.sgd %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-01 : f64, warmup = 0, total = 10,
      min_ratio = 0.0 : f64>, momentum = 0.9 : f64, weight_decay = 0.0 : f64}
      : (tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// SGD (C2): momentum 0 has no buffer.
func.func @sgd_c2_extra(%p: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{momentum_buf and new_momentum_buf must be given exactly when momentum > 0 (momentum 0.000000e+00)}}
  %0, %1 = ptrain.sgd %p, %p, %t, %p {schedule = #ptrain.lr_schedule<peak = 1.0e-01 : f64, warmup = 0, total = 10,
      min_ratio = 0.0 : f64>, momentum = 0.0 : f64, weight_decay = 0.0 : f64}
      : (tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// SGD (C3): one type.
func.func @sgd_c3(%p: tensor<4xf32>, %g: tensor<2x2xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{param, grad, new_param and the momentum buffers must have one type 'tensor<4xf32>', got 'tensor<2x2xf32>'}}
  %0 = ptrain.sgd %p, %g, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-01 : f64, warmup = 0, total = 10,
      min_ratio = 0.0 : f64>, momentum = 0.0 : f64, weight_decay = 0.0 : f64}
      : (tensor<4xf32>, tensor<2x2xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// LossScale (C1): the scaler state has 3 elements.
func.func @loss_scale_c1(%s: tensor<2xf32>) {
  // expected-error@+1 {{needs a scaler state of 3 elements {scale, growth_tracker, hysteresis_tracker}, got 'tensor<2xf32>'}}
  %0 = ptrain.loss_scale %s {initial_scale = 65536.0 : f64} : tensor<2xf32> -> tensor<f32>
  return
}

// -----

// LossScale (C2): a finite initial_scale > 0 that fp32 holds.
func.func @loss_scale_c2(%s: tensor<3xf32>) {
  // expected-error@+1 {{initial_scale must be a finite f32 value > 0, got 1.000000e+40}}
  %0 = ptrain.loss_scale %s {initial_scale = 1.0e+40 : f64} : tensor<3xf32> -> tensor<f32>
  return
}

// -----

// LossScale (C3): a rank-0 f32 scale.
func.func @loss_scale_c3(%s: tensor<3xf32>) {
  // expected-error@+1 {{result #0 must be 0D tensor of 32-bit float values}}
  %0 = ptrain.loss_scale %s {initial_scale = 1.0 : f64} : tensor<3xf32> -> tensor<1xf32>
  return
}

// -----

// GradUnscale (C1): the gradient and its unscaled value have one f32 type.
func.func @grad_unscale_c1(%g: tensor<4xf16>, %s: tensor<f32>) {
  // expected-error@+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %0, %f = ptrain.grad_unscale %g, %s : tensor<4xf16>, tensor<f32>
  return
}

// -----

// GradUnscale (C2): a rank-0 f32 scale (and flag).
func.func @grad_unscale_c2(%g: tensor<4xf32>, %s: tensor<1xf32>) {
  // expected-error@+1 {{operand #1 must be 0D tensor of 32-bit float values}}
  %0, %f = ptrain.grad_unscale %g, %s : tensor<4xf32>, tensor<1xf32>
  return
}

// -----

// GradScalerUpdate (C1): the scaler state has 3 elements.
func.func @grad_scaler_update_c1(%s: tensor<4xf32>, %f: tensor<f32>) {
  // expected-error@+1 {{needs a scaler state of 3 elements}}
  %0 = ptrain.grad_scaler_update %s, %f {initial_scale = 65536.0 : f64, growth_factor = 2.0 : f64,
      backoff_factor = 0.5 : f64, growth_interval = 1000 : i64, hysteresis = 2 : i64, min_scale = 1.0 : f64}
      : tensor<4xf32>, tensor<f32>
  return
}

// -----

// GradScalerUpdate (C2): backoff_factor in (0, 1).
func.func @grad_scaler_update_c2_backoff(%s: tensor<3xf32>, %f: tensor<f32>) {
  // expected-error@+1 {{needs a finite growth_factor > 1 and a backoff_factor in (0, 1), got growth_factor 2.000000e+00 and backoff_factor 1.000000e+00}}
  %0 = ptrain.grad_scaler_update %s, %f {initial_scale = 65536.0 : f64, growth_factor = 2.0 : f64,
      backoff_factor = 1.0 : f64, growth_interval = 1000 : i64, hysteresis = 2 : i64, min_scale = 1.0 : f64}
      : tensor<3xf32>, tensor<f32>
  return
}

// -----

// GradScalerUpdate (C2): growth_factor > 1.
func.func @grad_scaler_update_c2_growth(%s: tensor<3xf32>, %f: tensor<f32>) {
  // expected-error@+1 {{needs a finite growth_factor > 1}}
  %0 = ptrain.grad_scaler_update %s, %f {initial_scale = 65536.0 : f64, growth_factor = 1.0 : f64,
      backoff_factor = 0.5 : f64, growth_interval = 1000 : i64, hysteresis = 2 : i64, min_scale = 1.0 : f64}
      : tensor<3xf32>, tensor<f32>
  return
}

// -----

// GradScalerUpdate (C3): a growth interval and a hysteresis of at least one step.
func.func @grad_scaler_update_c3(%s: tensor<3xf32>, %f: tensor<f32>) {
  // expected-error@+1 {{growth_interval and hysteresis must be >= 1, got growth_interval 1000 and hysteresis 0}}
  %0 = ptrain.grad_scaler_update %s, %f {initial_scale = 65536.0 : f64, growth_factor = 2.0 : f64,
      backoff_factor = 0.5 : f64, growth_interval = 1000 : i64, hysteresis = 0 : i64, min_scale = 1.0 : f64}
      : tensor<3xf32>, tensor<f32>
  return
}

// -----

// GradScalerUpdate (C4): min_scale <= initial_scale.
func.func @grad_scaler_update_c4(%s: tensor<3xf32>, %f: tensor<f32>) {
  // expected-error@+1 {{needs finite f32 scales with 0 < min_scale <= initial_scale, got min_scale 1.024000e+03 and initial_scale 1.000000e+00}}
  %0 = ptrain.grad_scaler_update %s, %f {initial_scale = 1.0 : f64, growth_factor = 2.0 : f64,
      backoff_factor = 0.5 : f64, growth_interval = 1000 : i64, hysteresis = 2 : i64, min_scale = 1024.0 : f64}
      : tensor<3xf32>, tensor<f32>
  return
}

// -----

// GradScalerUpdate (C5): a rank-0 f32 flag.
func.func @grad_scaler_update_c5(%s: tensor<3xf32>, %f: tensor<1xf32>) {
  // expected-error@+1 {{operand #1 must be 0D tensor of 32-bit float values}}
  %0 = ptrain.grad_scaler_update %s, %f {initial_scale = 65536.0 : f64, growth_factor = 2.0 : f64,
      backoff_factor = 0.5 : f64, growth_interval = 1000 : i64, hysteresis = 2 : i64, min_scale = 1.0 : f64}
      : tensor<3xf32>, tensor<1xf32>
  return
}
