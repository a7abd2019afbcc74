// Padding and class weights in the step's own loss (--ptrain-build-training-step="ignore-index=N
// class-weights=...", docs/TrainingStep.md "Padding and class weights").
// One stage: the next-token cross-entropy carries the ignore_index and a [V] weight constant; the mean is
// PyTorch's weighted mean over the counted positions.
// RUN: ptrain-opt %s --ptrain-build-training-step="optimizer=none ignore-index=0 class-weights=1,2,1,1,1,1,1,1,1,1,1,1,1,1,1,3" | FileCheck %s
// Bad values name the option.
// RUN: not ptrain-opt %s --ptrain-build-training-step="ignore-index=pad" 2>&1 | FileCheck %s --check-prefix=BADINDEX
// RUN: not ptrain-opt %s --ptrain-build-training-step="class-weights=1,2,3" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not ptrain-opt %s --ptrain-build-training-step="class-weights=1,-2" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not ptrain-opt %s --ptrain-build-training-step="class-weights=0,0" 2>&1 | FileCheck %s --check-prefix=ZERO

// CHECK-LABEL: func.func @train_step
// CHECK: %[[W:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, {{.*}}, 3.000000e+00]> : tensor<16xf32>
// CHECK: %[[LOSS:.*]] = ptrain.cross_entropy %{{.*}}, %{{.*}} weight %[[W]] {ignore_index = 0 : i64} : tensor<2x4x16xf32>, tensor<2x4xi64>, tensor<16xf32>
// CHECK: ptrain.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} weight %[[W]] {ignore_index = 0 : i64}
// CHECK: return %[[LOSS]]

// BADINDEX: error: --ptrain-build-training-step: ignore-index must be an integer (e.g. -100), got 'pad'
// COUNT: error: --ptrain-build-training-step: class-weights has 3 entries; the logits have 16 classes
// NEG: error: --ptrain-build-training-step: class-weights[1] must be finite and >= 0, got -2
// ZERO: error: --ptrain-build-training-step: class-weights are all 0 (the mean would be 0 / 0)

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %x, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}
