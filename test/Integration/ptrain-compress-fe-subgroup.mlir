// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=4 dp=2" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="cb=false sc=false" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=DP2PP4
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="cb=false sc=false" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=PP4
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="cb=false sc=false fe=false" --ptrain-lower-to-runtime | FileCheck %s --check-prefix=NOFE
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="cb=false sc=false" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=PP2

// FE (Optimus-CC section 4.3) over the sub-group {first, last} x dp: the tied wte.weight is held by stages 0
// and 3 of pp = 4. Its gradient leaves the holders' dp buckets and is reduced once over [dp, pp] restricted
// to pp = [0, 3], then divided by dp; the middle stages post no tied sync at all (no zeros sent).
// DP2PP4: fused_embedding = true
// DP2PP4-LABEL: func.func @stage0_optimizer_step(
// DP2PP4-NOT: axes [pp] reduction
// DP2PP4: ptrain.state_write %{{.*}} to @wte.weight.grad
// DP2PP4-NEXT: %[[G:.*]] = ptrain.state_read @wte.weight.grad : tensor<256x128xf32>
// DP2PP4-NEXT: %[[R:.*]] = ptrain.all_reduce_start %[[G]] on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<256x128xf32>
// DP2PP4-NEXT: %[[S:.*]] = ptrain.wait %[[R]]
// DP2PP4-NEXT: %[[DP:.*]] = arith.constant dense<2.000000e+00> : tensor<f32>
// DP2PP4-NEXT: %[[A:.*]] = ptrain.binary div %[[S]], %[[DP]]
// DP2PP4-NEXT: ptrain.state_write %[[A]] to @wte.weight.grad
// DP2PP4-LABEL: func.func @stage1_optimizer_step(
// DP2PP4-NOT: pp]
// DP2PP4-LABEL: func.func @stage2_optimizer_step(
// DP2PP4-NOT: pp]
// DP2PP4-LABEL: func.func @stage3_optimizer_step(
// DP2PP4-NOT: axes [pp] reduction
// DP2PP4: ptrain.all_reduce_start %{{.*}} on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<256x128xf32>

// Without data parallelism (dp = 1, pp = 4) FE is the sync over the holders alone: [pp] with pp = [0, 3],
// not divided; the middle stages post nothing.
// PP4: fused_embedding = true
// PP4-LABEL: func.func @stage0_optimizer_step(
// PP4: %[[G:.*]] = ptrain.state_read @wte.weight.grad : tensor<256x128xf32>
// PP4-NEXT: %[[R:.*]] = ptrain.all_reduce_start %[[G]] on @grid axes [pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<256x128xf32>
// PP4-NEXT: %[[S:.*]] = ptrain.wait %[[R]]
// PP4-NEXT: ptrain.state_write %[[S]] to @wte.weight.grad
// PP4-LABEL: func.func @stage1_optimizer_step(
// PP4-NOT: ptrain.all_reduce_start
// PP4-LABEL: func.func @stage2_optimizer_step(
// PP4-NOT: ptrain.all_reduce_start
// PP4-LABEL: func.func @stage3_optimizer_step(
// PP4: ptrain.all_reduce_start %{{.*}} on @grid axes [pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<256x128xf32>

// fe=false: the two-step sync, where the middle stages join the [pp] sum with zeros.
// NOFE: ptrain.compression = #ptrain.compression<
// NOFE-NOT: fused_embedding
// NOFE-LABEL: func.func @stage1_optimizer_step(
// NOFE: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<256x128xf32>
// NOFE-NEXT: ptrain.all_reduce_start %[[Z]] on @grid axes [pp] reduction = sum : tensor<256x128xf32>

// pp = 2: both stages hold the embedding, so the group is the whole axis: no subgroup.
// PP2: fused_embedding = true
// PP2-LABEL: func.func @stage0_optimizer_step(
// PP2-NOT: ptrain.subgroup
// PP2: ptrain.all_reduce_start %{{.*}} on @grid axes [dp, pp] reduction = sum : tensor<256x128xf32>
// PP2-NOT: ptrain.subgroup
