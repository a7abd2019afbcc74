// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=adamw precision=bf16" | FileCheck %s
// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=adamw precision=fp32" | FileCheck %s --check-prefix=FP32
// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=adamw precision=fp16" | FileCheck %s --check-prefix=F16
// RUN: not ptrain-opt %s --split-input-file --ptrain-build-training-step="precision=fp8" 2>&1 | FileCheck %s --check-prefix=BAD
// fp16's loss-scaler options (Megatron-LM's DynamicGradScaler asserts each): a scale that is not a finite fp32
// value > 0, a minimum above the initial scale, an empty window or hysteresis, and any of them without fp16.
// RUN: not ptrain-opt %s --ptrain-build-training-step="precision=fp16 initial-loss-scale=0" 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not ptrain-opt %s --ptrain-build-training-step="precision=fp16 initial-loss-scale=1e39" 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not ptrain-opt %s --ptrain-build-training-step="precision=fp16 initial-loss-scale=1024 min-loss-scale=2048" 2>&1 | FileCheck %s --check-prefix=MIN
// RUN: not ptrain-opt %s --ptrain-build-training-step="precision=fp16 hysteresis=0" 2>&1 | FileCheck %s --check-prefix=HYST
// RUN: not ptrain-opt %s --ptrain-build-training-step="precision=bf16 loss-scale-window=10" 2>&1 | FileCheck %s --check-prefix=NOSCALER

// precision=bf16 (docs/MixedPrecision.md): every GEMM of the step, forward and backward, reads bf16 operands
// (one ptrain.cast per value) and accumulates in fp32; the parameter, its AdamW moments and update, the
// layer norm, the loss and the weight gradient stay fp32. The forward itself is not changed.

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
ptrain.state @ln key "ln.weight" kind parameter : tensor<8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %g = ptrain.state_read @ln : tensor<8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %h = ptrain.layer_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x5x8xf32>, tensor<8xf32>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %h, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK: ptrain.matmul %{{.*}}, %{{.*}} : tensor<2x5x8xf32>, tensor<8x16xf32>
// CHECK-LABEL: func.func @train_step
// CHECK: %[[W:.*]] = ptrain.state_read @wte : tensor<16x8xf32>
// CHECK: %[[H:.*]] = ptrain.layer_norm {{.*}} : tensor<2x5x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[HB:.*]] = ptrain.cast %[[H]] : tensor<2x5x8xf32> -> tensor<2x5x8xbf16>
// CHECK: %[[WT:.*]] = ptrain.transpose %[[W]] {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[WTB:.*]] = ptrain.cast %[[WT]] : tensor<8x16xf32> -> tensor<8x16xbf16>
// The forward GEMM: bf16 operands, fp32 logits, an fp32 loss.
// CHECK: %[[LOGITS:.*]] = ptrain.matmul %[[HB]], %[[WTB]] {accumulate = f32} : tensor<2x5x8xbf16>, tensor<8x16xbf16>
// CHECK: ptrain.cross_entropy {{.*}} : tensor<2x4x16xf32>, tensor<2x4xi64>
// CHECK: %[[DY:.*]] = ptrain.pad
// CHECK-NEXT: %[[DYB:.*]] = ptrain.cast %[[DY]] : tensor<2x5x16xf32> -> tensor<2x5x16xbf16>
// The backward GEMMs read the forward's casts (one cast per value) and the output gradient's.
// CHECK: ptrain.matmul %[[DYB]], %{{.*}} {accumulate = f32} : tensor<2x5x16xbf16>, tensor<16x8xbf16>
// CHECK: ptrain.matmul %{{.*}}, %[[DYB]] {accumulate = f32} : tensor<2x8x5xbf16>, tensor<2x5x16xbf16>
// The weight gradient is summed and updated in fp32.
// CHECK: ptrain.sum_to %{{.*}} : tensor<2x8x16xf32> -> tensor<8x16xf32>
// CHECK: ptrain.layer_norm_grad
// CHECK: ptrain.adamw {{.*}} : tensor<16x8xf32>, tensor<i64>
// CHECK: ptrain.state_write %{{.*}} to @wte : tensor<16x8xf32>
// CHECK-NOT: bf16
// CHECK: return

// FP32-LABEL: func.func @train_step
// FP32-NOT: ptrain.cast
// FP32-NOT: accumulate
// FP32: return

// precision=fp16: the same placement with IEEE binary16 operands (ptrain_gemm_f16's fp32 accumulation).
// F16-LABEL: func.func @forward
// F16: ptrain.matmul %{{.*}}, %{{.*}} : tensor<2x5x8xf32>, tensor<8x16xf32>
// F16-LABEL: func.func @train_step
// F16: %[[H:.*]] = ptrain.layer_norm {{.*}} : tensor<2x5x8xf32>, tensor<8xf32>
// F16-NEXT: %[[HH:.*]] = ptrain.cast %[[H]] : tensor<2x5x8xf32> -> tensor<2x5x8xf16>
// F16: %[[WT:.*]] = ptrain.transpose %{{.*}} {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
// F16-NEXT: %[[WTH:.*]] = ptrain.cast %[[WT]] : tensor<8x16xf32> -> tensor<8x16xf16>
// F16: ptrain.matmul %[[HH]], %[[WTH]] {accumulate = f32} : tensor<2x5x8xf16>, tensor<8x16xf16>
// F16: %[[DY:.*]] = ptrain.pad
// F16-NEXT: %[[DYH:.*]] = ptrain.cast %[[DY]] : tensor<2x5x16xf32> -> tensor<2x5x16xf16>
// F16: ptrain.matmul %[[DYH]], %{{.*}} {accumulate = f32} : tensor<2x5x16xf16>, tensor<16x8xf16>
// F16: ptrain.matmul %{{.*}}, %[[DYH]] {accumulate = f32} : tensor<2x8x5xf16>, tensor<2x5x16xf16>
// F16: ptrain.adamw {{.*}} : tensor<16x8xf32>, tensor<i64>
// F16-NOT: bf16
// F16-NOT: xf16>
// F16: return

// BAD: --ptrain-build-training-step: precision must be fp32, bf16 or fp16, got 'fp8'
// SCALE: --ptrain-build-training-step: initial-loss-scale and min-loss-scale must be finite fp32 values > 0, got initial-loss-scale =
// MIN: --ptrain-build-training-step: min-loss-scale must not exceed initial-loss-scale, got min-loss-scale = 2.048000e+03 > initial-loss-scale = 1.024000e+03
// HYST: --ptrain-build-training-step: loss-scale-window and hysteresis must be >= 1, got loss-scale-window = 1000, hysteresis = 0
// NOSCALER: --ptrain-build-training-step: initial-loss-scale, min-loss-scale, loss-scale-window and hysteresis configure fp16's loss scaler and need precision=fp16, got precision=bf16
