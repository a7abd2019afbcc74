// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=adamw precision=bf16" | FileCheck %s
// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=adamw precision=fp32" | FileCheck %s --check-prefix=FP32
// RUN: not ptrain-opt %s --split-input-file --ptrain-build-training-step="precision=fp16" 2>&1 | FileCheck %s --check-prefix=BAD

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

// BAD: --ptrain-build-training-step: precision must be fp32 or bf16, got 'fp16'
