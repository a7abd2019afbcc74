// Padding and class weights in the step's own loss (--ptrain-build-training-step="ignore-index=N
// class-weights=...", docs/TrainingStep.md "Padding and class weights").
// One stage: the next-token cross-entropy carries the ignore_index and a [V] weight constant; the mean is
// PyTorch's weighted mean over the counted positions.
// RUN: ptrain-opt %s --ptrain-build-training-step="optimizer=none ignore-index=0 class-weights=1,2,1,1,1,1,1,1,1,1,1,1,1,1,1,3" | FileCheck %s
// Pipeline stages with micro-batches and dp: the last stage sums its micro-batch's weighted losses over the
// step's normalizer (its third argument), seeded with dp = 2; @stage1_loss_weight gives a micro-batch's sum of
// w[y]; the lowering adds them over the micro-batches and all-reduces over dp before the first call.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2 ignore-index=32" --ptrain-schedule --ptrain-lower-to-runtime | FileCheck %s --check-prefix=PP
// The plain loss (no option) keeps the mean per micro-batch seeded with 1 / M.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2" | FileCheck %s --check-prefix=PLAIN
// Bad values name the option.
// RUN: not ptrain-opt %s --ptrain-build-training-step="ignore-index=pad" 2>&1 | FileCheck %s --check-prefix=BADINDEX
// RUN: not ptrain-opt %s --ptrain-build-training-step="class-weights=1,2,3" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not ptrain-opt %s --ptrain-build-training-step="class-weights=1,-2" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not ptrain-opt %s --ptrain-build-training-step="class-weights=0,0" 2>&1 | FileCheck %s --check-prefix=ZERO
// The vocabulary-parallel loss has no options yet.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-raise --ptrain-shard-tp="tp=2 vocab-parallel=true" --ptrain-split-stages="pp=1" | not ptrain-opt --ptrain-build-training-step="ignore-index=0" 2>&1 | FileCheck %s --check-prefix=VOCAB

// CHECK-LABEL: func.func @train_step
// CHECK: %[[W:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, {{.*}}, 3.000000e+00]> : tensor<16xf32>
// CHECK: %[[LOSS:.*]] = ptrain.cross_entropy %{{.*}}, %{{.*}} weight %[[W]] {ignore_index = 0 : i64} : tensor<2x4x16xf32>, tensor<2x4xi64>, tensor<16xf32>
// CHECK: ptrain.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} weight %[[W]] {ignore_index = 0 : i64}
// CHECK: return %[[LOSS]]

// PP-LABEL: func.func @stage1_forward_backward
// PP-SAME: (%{{.*}}: tensor<4x64x128xf32>, %[[TOKENS:.*]]: tensor<4x64xi64>, %[[N:.*]]: tensor<f32>)
// PP: %[[SUM:.*]] = ptrain.cross_entropy %{{.*}}, %{{.*}} {ignore_index = 32 : i64, reduction = "sum"} : tensor<4x63x256xf32>, tensor<4x63xi64>
// PP: %[[LOSS:.*]] = ptrain.binary div %[[SUM]], %[[N]]
// PP: arith.constant dense<2.000000e+00> : tensor<f32>
// PP: return %[[LOSS]]
// PP-LABEL: func.func @stage1_loss_weight
// PP-SAME: (%[[T:.*]]: tensor<4x64xi64>) -> tensor<f32>
// PP: %[[Y:.*]] = ptrain.slice %[[T]] {offsets = array<i64: 0, 1>, sizes = array<i64: 4, 63>}
// PP: %[[IGNORED:.*]] = ptrain.compare eq %[[Y]], %{{.*}} : tensor<4x63xi64>, tensor<i64>
// PP: %[[W:.*]] = ptrain.select %[[IGNORED]], %{{.*}}, %{{.*}} : tensor<4x63xi1>, tensor<f32>, tensor<f32>
// PP: ptrain.reduce sum
// PP-LABEL: func.func @stage1_train_step
// PP: %[[W0:.*]] = call @stage1_loss_weight
// PP: %[[W1:.*]] = call @stage1_loss_weight
// PP: %[[WS:.*]] = ptrain.binary add %[[W0]], %[[W1]]
// PP: %[[R:.*]] = ptrain.all_reduce_start %[[WS]] on @grid axes [dp] reduction = sum : tensor<f32>
// PP: %[[NORM:.*]] = ptrain.wait %[[R]]
// PP: call @stage1_forward_backward(%{{.*}}, %{{.*}}, %[[NORM]])
// PP: call @stage1_forward_backward(%{{.*}}, %{{.*}}, %[[NORM]])
// PP-NOT: ptrain.binary div
// PP: ptrain.all_reduce_start %{{.*}} on @grid axes [dp, pp] reduction = sum : tensor<f32>
// PP-LABEL: func.func @stage1_eval_step
// PP: call @stage1_loss_weight
// PP: ptrain.cross_entropy %{{.*}}, %{{.*}} {ignore_index = 32 : i64, reduction = "sum"}
// PP: ptrain.binary div %{{.*}}, %[[ENORM:.*]] :

// PLAIN-LABEL: func.func @stage1_forward_backward
// PLAIN-SAME: (%{{.*}}: tensor<4x64x128xf32>, %{{.*}}: tensor<4x64xi64>) -> (tensor<f32>, tensor<4x64x128xf32>)
// PLAIN: ptrain.cross_entropy %{{.*}}, %{{.*}} : tensor<4x63x256xf32>, tensor<4x63xi64>
// PLAIN: arith.constant dense<5.000000e-01> : tensor<f32>
// PLAIN-NOT: func.func @stage1_loss_weight

// BADINDEX: error: --ptrain-build-training-step: ignore-index must be an integer (e.g. -100), got 'pad'
// COUNT: error: --ptrain-build-training-step: class-weights has 3 entries; the logits have 16 classes
// NEG: error: --ptrain-build-training-step: class-weights[1] must be finite and >= 0, got -2
// ZERO: error: --ptrain-build-training-step: class-weights are all 0 (the mean would be 0 / 0)
// VOCAB: error: --ptrain-build-training-step: ignore-index and class-weights are not supported with the vocabulary-parallel loss

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %x, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}
