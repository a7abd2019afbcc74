// Global-norm clipping in the bundled GPT's pipeline and tensor-parallel steps (the pass on hand-written IR:
// test/Transforms/ptrain-build-training-step-clip.mlir).
// Pipeline stages of the bundled GPT: the tied embedding counts on stage 0 only; the partial sums meet in an
// all-reduce over pp marked ptrain.global_norm, after the tied sync.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 clip-norm=1.0" | FileCheck %s --check-prefix=PP
// Tensor parallelism: sliced parameters count in full, replicated ones with weight 1 / tp; over [pp, tp].
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-raise --ptrain-shard-tp="tp=2" --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 clip-norm=1.0" | FileCheck %s --check-prefix=TP

// PP-LABEL: func.func @stage0_optimizer_step
// PP: ptrain.all_reduce_start %{{.*}} on @grid axes [pp] reduction = sum : tensor<256x128xf32>
// PP: %[[WTE:.*]] = ptrain.state_read @wte.weight.grad
// PP: ptrain.sum_squares %[[WTE]] : tensor<256x128xf32> -> tensor<f32>
// PP: %[[R:.*]] = ptrain.all_reduce_start %{{.*}} on @grid axes [pp] reduction = sum {ptrain.global_norm} : tensor<f32>
// PP: %[[N:.*]] = ptrain.wait %[[R]]
// PP: %[[S0:.*]] = ptrain.clip_scale %[[N]] {max_norm = 1.000000e+00 : f64}
// PP: ptrain.binary mul %{{.*}}, %[[S0]]
// PP: ptrain.adamw
// PP-LABEL: func.func @stage1_optimizer_step
// PP: ptrain.all_reduce_start %{{.*}} on @grid axes [pp] reduction = sum : tensor<256x128xf32>
// The last stage holds the tied embedding too but does not count it: its first sum is another parameter's.
// PP-NOT: ptrain.sum_squares %{{.*}} : tensor<256x128xf32>
// PP: ptrain.all_reduce_start %{{.*}} on @grid axes [pp] reduction = sum {ptrain.global_norm} : tensor<f32>
// PP: ptrain.clip_scale

// TP-LABEL: func.func @stage0_optimizer_step
// TP: arith.constant dense<5.000000e-01> : tensor<f32>
// TP: ptrain.all_reduce_start %{{.*}} on @grid axes [pp, tp] reduction = sum {ptrain.global_norm} : tensor<f32>
// TP: ptrain.clip_scale
