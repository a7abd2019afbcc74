// Padding and class weights in the bundled GPT's pipeline step (the pass on hand-written IR:
// test/Transforms/ptrain-build-training-step-loss.mlir).
// Pipeline stages with micro-batches and dp: the last stage sums its micro-batch's weighted losses over the
// step's normalizer (its third argument), seeded with dp = 2; @stage1_loss_weight gives a micro-batch's sum of
// w[y]; the lowering adds them over the micro-batches and all-reduces over dp before the first call.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2 ignore-index=32" --ptrain-schedule --ptrain-lower-to-runtime | FileCheck %s --check-prefix=PP
// The plain loss (no option) keeps the mean per micro-batch seeded with 1 / M.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2" | FileCheck %s --check-prefix=PLAIN
// The vocabulary-parallel loss has no options yet.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-raise --ptrain-shard-tp="tp=2 vocab-parallel=true" --ptrain-split-stages="pp=1" | not ptrain-opt --ptrain-build-training-step="ignore-index=0" 2>&1 | FileCheck %s --check-prefix=VOCAB

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

// VOCAB: error: --ptrain-build-training-step: ignore-index and class-weights are not supported with the vocabulary-parallel loss
