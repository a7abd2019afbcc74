// Global-norm clipping (--ptrain-build-training-step="clip-norm=C", docs/TrainingStep.md): one stage sums the
// squared norm of every gradient, no all-reduce, and scales every gradient before AdamW.
// RUN: ptrain-opt %s --ptrain-build-training-step="clip-norm=0.5" | FileCheck %s
// SGD gets the clipped gradients too.
// RUN: ptrain-opt %s --ptrain-build-training-step="optimizer=sgd momentum=0.9 clip-norm=0.5" | FileCheck %s --check-prefix=SGD
// Default: no clipping.
// RUN: ptrain-opt %s --ptrain-build-training-step | FileCheck %s --check-prefix=OFF
// Bad values name the option.
// RUN: not ptrain-opt %s --ptrain-build-training-step="clip-norm=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not ptrain-opt %s --ptrain-build-training-step="clip-norm=nan" 2>&1 | FileCheck %s --check-prefix=NAN
// RUN: not ptrain-opt %s --ptrain-build-training-step="clip-norm=inf" 2>&1 | FileCheck %s --check-prefix=INF
// RUN: not ptrain-opt %s --ptrain-build-training-step="optimizer=none clip-norm=1" 2>&1 | FileCheck %s --check-prefix=NONE

// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]] = ptrain.embedding_grad
// CHECK: %[[GW:.*]] = ptrain.binary add
// CHECK: %[[SQ:.*]] = ptrain.sum_squares %[[GW]] : tensor<16x8xf32> -> tensor<f32>
// CHECK-NOT: ptrain.all_reduce_start
// CHECK: %[[SCALE:.*]] = ptrain.clip_scale %[[SQ]] {max_norm = 5.000000e-01 : f64} : tensor<f32>
// CHECK: %[[C:.*]] = ptrain.binary mul %[[GW]], %[[SCALE]] : tensor<16x8xf32>, tensor<f32>
// CHECK: ptrain.adamw %{{.*}}, %[[C]],

// SGD: ptrain.clip_scale
// SGD: ptrain.sgd %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {momentum = 9.000000e-01 : f64

// OFF-NOT: ptrain.clip_scale

// NEG: error: --ptrain-build-training-step: clip-norm must be a finite norm > 0 (or 0 for no clipping), got -1.000000e+00
// NAN: error: --ptrain-build-training-step: clip-norm must be a finite norm > 0 (or 0 for no clipping), got nan
// INF: error: --ptrain-build-training-step: clip-norm must be a finite norm > 0 (or 0 for no clipping), got INF
// NONE: error: --ptrain-build-training-step: clip-norm needs an optimizer (optimizer=none returns the raw gradients)

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %x, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}
