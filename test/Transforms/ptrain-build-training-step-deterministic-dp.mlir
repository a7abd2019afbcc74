// deterministic-dp (DeterministicSum.h): the micro-batch gradients and losses are added as a pairwise tree and the
// dp reduction is an all-gather in replica order whose parts are added pairwise; the seed is 1 / G.
// RUN: ptrain-opt %s --ptrain-pipeline="dp=2 micro-batches=2 lr=0.001 deterministic-dp=true" | FileCheck %s
// RUN: ptrain-opt %s --ptrain-pipeline="dp=4 micro-batches=4 lr=0.001 deterministic-dp=true" | FileCheck %s --check-prefix=TREE
// RUN: not ptrain-opt %s --ptrain-pipeline="dp=3 micro-batches=2 lr=0.001 deterministic-dp=true" 2>&1 | FileCheck %s --check-prefix=POW2
// RUN: not ptrain-opt %s --ptrain-pipeline="dp=2 micro-batches=6 lr=0.001 deterministic-dp=true" 2>&1 | FileCheck %s --check-prefix=POW2MB
// RUN: ptrain-opt %s --ptrain-pipeline="dp=2 micro-batches=2 lr=0.001 ignore-index=3 deterministic-dp=true" | FileCheck %s --check-prefix=WEIGHTED
// RUN: not ptrain-opt %s --ptrain-pipeline="dp=2 micro-batches=2 lr=0.001 deterministic-dp=true policy=optimus-cc" 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not ptrain-opt %s --ptrain-pipeline="lr=0.001 deterministic-dp=true" 2>&1 | FileCheck %s --check-prefix=ONERANK

// The backward writes its micro-batch's gradient (no accumulation there), seeded with 1 / (2 x 2).
// CHECK-LABEL: func.func @stage0_forward_backward(
// CHECK: arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NOT: ptrain.state_read @wte.grad
// CHECK: ptrain.state_write %{{.*}} to @wte.grad

// The dp sum: the replicas' gradients gathered in replica order, added (left: replica 0), not averaged.
// CHECK-LABEL: func.func @stage0_optimizer_step(
// CHECK: %[[G:.*]] = ptrain.state_read @wte.grad : tensor<16x8xf32>
// CHECK: %[[FLAT:.*]] = ptrain.reshape %[[G]] : tensor<16x8xf32> -> tensor<128xf32>
// CHECK: %[[REQ:.*]] = ptrain.all_gather_start %[[FLAT]] on @grid axes [dp] gather_dim = 0 : tensor<128xf32> -> !ptrain.request<tensor<256xf32>>
// CHECK: %[[ALL:.*]] = ptrain.wait %[[REQ]]
// CHECK: %[[P0:.*]] = ptrain.slice %[[ALL]] {offsets = array<i64: 0>, sizes = array<i64: 128>}
// CHECK: %[[P1:.*]] = ptrain.slice %[[ALL]] {offsets = array<i64: 128>, sizes = array<i64: 128>}
// CHECK: %[[SUM:.*]] = ptrain.binary add %[[P0]], %[[P1]]
// CHECK: %[[BACK:.*]] = ptrain.reshape %[[SUM]] : tensor<128xf32> -> tensor<16x8xf32>
// CHECK: ptrain.state_write %[[BACK]] to @wte.grad
// CHECK-NOT: reduction = avg

// The step: micro-batch 0's gradient read after its call, added to micro-batch 1's after the next call; the
// losses likewise, gathered over dp, added and divided by G = 4.
// CHECK-LABEL: func.func @stage0_train_step(
// CHECK: %[[L0:.*]] = call @stage0_forward_backward(
// CHECK-NEXT: %[[G0:.*]] = ptrain.state_read @wte.grad
// CHECK: %[[L1:.*]] = call @stage0_forward_backward(
// CHECK-NEXT: %[[G1:.*]] = ptrain.state_read @wte.grad
// CHECK-NEXT: %[[T:.*]] = ptrain.binary add %[[G0]], %[[G1]]
// CHECK-NEXT: ptrain.state_write %[[T]] to @wte.grad
// CHECK-NEXT: %[[L:.*]] = ptrain.binary add %[[L0]], %[[L1]]
// CHECK-NEXT: call @stage0_optimizer_step()
// CHECK: ptrain.all_gather_start %{{.*}} on @grid axes [dp] gather_dim = 0 : tensor<1xf32> -> !ptrain.request<tensor<2xf32>>
// CHECK: %[[LS:.*]] = ptrain.binary add
// CHECK: %[[G:.*]] = arith.constant dense<4.000000e+00>
// CHECK-NEXT: %[[MEAN:.*]] = ptrain.binary div %[[LS]], %[[G]]
// CHECK-NEXT: ptrain.all_reduce_start %[[MEAN]] on @grid axes [pp] reduction = sum

// dp 4 x 4 micro-batches: seed 1 / 16; the tree over the 4 micro-batches ((g0 + g1) + (g2 + g3)), and over the 4
// replicas ((P0 + P1) + (P2 + P3)).
// TREE-LABEL: func.func @stage0_forward_backward(
// TREE: arith.constant dense<6.250000e-02> : tensor<f32>
// TREE-LABEL: func.func @stage0_optimizer_step(
// TREE: %[[ALL:.*]] = ptrain.wait
// TREE-NEXT: %[[P0:.*]] = ptrain.slice %[[ALL]] {offsets = array<i64: 0>
// TREE-NEXT: %[[P1:.*]] = ptrain.slice %[[ALL]] {offsets = array<i64: 128>
// TREE-NEXT: %[[P2:.*]] = ptrain.slice %[[ALL]] {offsets = array<i64: 256>
// TREE-NEXT: %[[P3:.*]] = ptrain.slice %[[ALL]] {offsets = array<i64: 384>
// TREE-NEXT: %[[A:.*]] = ptrain.binary add %[[P0]], %[[P1]]
// TREE-NEXT: %[[B:.*]] = ptrain.binary add %[[P2]], %[[P3]]
// TREE-NEXT: ptrain.binary add %[[A]], %[[B]]
// TREE-LABEL: func.func @stage0_train_step(
// TREE: call @stage0_forward_backward(
// TREE-NEXT: %[[G0:.*]] = ptrain.state_read @wte.grad
// TREE: call @stage0_forward_backward(
// TREE-NEXT: %[[G1:.*]] = ptrain.state_read @wte.grad
// TREE-NEXT: %[[A:.*]] = ptrain.binary add %[[G0]], %[[G1]]
// TREE: call @stage0_forward_backward(
// TREE-NEXT: %[[G2:.*]] = ptrain.state_read @wte.grad
// TREE: call @stage0_forward_backward(
// TREE-NEXT: %[[G3:.*]] = ptrain.state_read @wte.grad
// TREE-NEXT: %[[B:.*]] = ptrain.binary add %[[G2]], %[[G3]]
// TREE-NEXT: %[[T:.*]] = ptrain.binary add %[[A]], %[[B]]
// TREE-NEXT: ptrain.state_write %[[T]] to @wte.grad

// POW2: deterministic-dp: dp = 3 and micro-batches = 2 must be powers of two
// POW2MB: deterministic-dp: dp = 2 and micro-batches = 6 must be powers of two
// A weighted loss (ignore-index): the step's weight sum is the pairwise tree too, each micro-batch's part of the
// mean is seeded with 1 (the dp reduction sums), and the loss is not divided by G again.
// WEIGHTED-LABEL: func.func @stage0_forward_backward(
// WEIGHTED: arith.constant dense<1.000000e+00> : tensor<f32>
// WEIGHTED-LABEL: func.func @stage0_train_step(
// WEIGHTED: %[[W0:.*]] = call @stage0_loss_weight(
// WEIGHTED: %[[W1:.*]] = call @stage0_loss_weight(
// WEIGHTED-NEXT: %[[W:.*]] = ptrain.binary add %[[W0]], %[[W1]]
// WEIGHTED-NEXT: %[[WF:.*]] = ptrain.reshape %[[W]]
// WEIGHTED-NEXT: ptrain.all_gather_start %[[WF]] on @grid axes [dp] gather_dim = 0
// WEIGHTED: %[[NORM:.*]] = ptrain.binary add
// WEIGHTED: call @stage0_forward_backward(%{{.*}}, %{{.*}}, %[[NORM]])
// WEIGHTED: call @stage0_optimizer_step()
// WEIGHTED: ptrain.all_gather_start
// WEIGHTED: %[[LOSS:.*]] = ptrain.binary add
// WEIGHTED-NEXT: ptrain.all_reduce_start %[[LOSS]] on @grid axes [pp] reduction = sum
// POLICY: deterministic-dp with policy = optimus-cc: a codec's error feedback depends on how the micro-batches are split between replicas; use policy = none
// ONERANK: deterministic-dp needs a pipeline or parallel step

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %x, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}
