// RUN: ptrain-opt %s --split-input-file --ptrain-lower-to-runtime | FileCheck %s
// RUN: ptrain-opt %s --split-input-file --ptrain-lower-to-runtime="eval=false" | FileCheck %s --check-prefix=NOEVAL

// The stage functions of --ptrain-build-training-step are stubs here: the pass only calls them, so only their
// signatures matter (stage input, micro-batch tokens, stage output / input gradient, loss).

// pp = 2, 1F1B with 2 micro-batches of 2 x 4 tokens. Stage 0 slices micro-batch i's rows of the step's tokens,
// sends each forward output (tag 2i) and waits on it at B<i>, after the gradient (tag 2i + 1) came back; the
// optimizer step comes last; the loss is 0 on stage 0, all-reduced over pp.
// CHECK-LABEL: func.func @stage0_train_step(
// CHECK-SAME: %[[TOK:.*]]: tensor<4x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>}
// CHECK-NEXT: %[[T0:.*]] = ptrain.slice %[[TOK]] {offsets = array<i64: 0, 0>, sizes = array<i64: 2, 4>}
// CHECK-NEXT: %[[Y0:.*]] = call @forward_stage0(%[[T0]])
// CHECK-NEXT: %[[S0:.*]] = ptrain.send_start %[[Y0]] to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<2x4x8xf32>
// CHECK-NEXT: %[[T1:.*]] = ptrain.slice %[[TOK]] {offsets = array<i64: 2, 0>, sizes = array<i64: 2, 4>}
// CHECK-NEXT: %[[Y1:.*]] = call @forward_stage0(%[[T1]])
// CHECK-NEXT: %[[S1:.*]] = ptrain.send_start %[[Y1]] to @grid axis pp offset 1 {ptrain.tag = 2 : i64}
// CHECK-NEXT: %[[R0:.*]] = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<2x4x8xf32>>
// CHECK-NEXT: %[[G0:.*]] = ptrain.wait %[[R0]]
// CHECK-NEXT: ptrain.wait %[[S0]] : !ptrain.request
// CHECK-NEXT: call @stage0_backward(%[[T0]], %[[G0]])
// CHECK-NEXT: %[[R1:.*]] = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 3 : i64}
// CHECK-NEXT: %[[G1:.*]] = ptrain.wait %[[R1]]
// CHECK-NEXT: ptrain.wait %[[S1]] : !ptrain.request
// CHECK-NEXT: call @stage0_backward(%[[T1]], %[[G1]])
// CHECK-NEXT: call @stage0_optimizer_step()
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[AR:.*]] = ptrain.all_reduce_start %[[ZERO]] on @grid axes [pp] reduction = sum
// CHECK-NEXT: %[[LOSS:.*]] = ptrain.wait %[[AR]]
// CHECK-NEXT: return %[[LOSS]]
// The eval step: the forwards and their sends only.
// CHECK-LABEL: func.func @stage0_eval_step(
// CHECK-SAME: attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<0>}
// CHECK-NOT: call @stage0_backward
// CHECK: return
// The last stage receives each input, runs the fused forward-backward on it and its tokens, sends the input
// gradient back, and returns the summed loss divided by M = 2.
// CHECK-LABEL: func.func @stage1_train_step(
// CHECK-SAME: %[[TOK1:.*]]: tensor<4x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>}
// CHECK-NEXT: %[[RX0:.*]] = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64}
// CHECK-NEXT: %[[X0:.*]] = ptrain.wait %[[RX0]]
// CHECK-NEXT: %[[U0:.*]] = ptrain.slice %[[TOK1]] {offsets = array<i64: 0, 0>
// CHECK-NEXT: %[[FB0:.*]]:2 = call @stage1_forward_backward(%[[X0]], %[[U0]])
// CHECK-NEXT: ptrain.send_start %[[FB0]]#1 to @grid axis pp offset -1 {ptrain.tag = 1 : i64}
// CHECK: %[[FB1:.*]]:2 = call @stage1_forward_backward(
// CHECK-NEXT: %[[SUM:.*]] = ptrain.binary add %[[FB0]]#0, %[[FB1]]#0
// CHECK-NEXT: ptrain.send_start %[[FB1]]#1 to @grid axis pp offset -1 {ptrain.tag = 3 : i64}
// CHECK: call @stage1_optimizer_step()
// CHECK-NEXT: %[[M:.*]] = arith.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[MEAN:.*]] = ptrain.binary div %[[SUM]], %[[M]]
// CHECK-NEXT: ptrain.all_reduce_start %[[MEAN]] on @grid axes [pp] reduction = sum
// The last stage's eval step computes the next-token loss of the forward's logits itself.
// CHECK-LABEL: func.func @stage1_eval_step(
// CHECK: %[[LOGITS:.*]] = call @forward_stage1(
// CHECK: %[[P:.*]] = ptrain.slice %[[LOGITS]] {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 3, 16>}
// CHECK: ptrain.cross_entropy %[[P]], %{{.*}} : tensor<2x3x16xf32>, tensor<2x3xi64>
// NOEVAL-LABEL: func.func @stage0_train_step(
// NOEVAL-NOT: _eval_step
// NOEVAL-LABEL: func.func @stage1_train_step(
// NOEVAL-NOT: _eval_step
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %h = arith.constant dense<1.0> : tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    %logits = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %logits : tensor<2x4x16xf32>
  }
  func.func @stage1_forward_backward(%h: tensor<2x4x8xf32>, %tokens: tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<1>} {
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss, %h : tensor<f32>, tensor<2x4x8xf32>
  }
  func.func @stage1_optimizer_step() attributes {ptrain.stage = #ptrain.stage<1>} {
    return
  }
}

// -----

// dp = 2 x pp = 2: every replica runs the same step on its rows; the loss is divided by M D = 4 and all-reduced
// over [dp, pp], so each rank returns the mean loss of the global batch.
// CHECK-LABEL: func.func @stage1_train_step(
// CHECK: call @stage1_optimizer_step()
// CHECK-NEXT: %[[MD:.*]] = arith.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[MEAN:.*]] = ptrain.binary div %{{.*}}, %[[MD]]
// CHECK-NEXT: ptrain.all_reduce_start %[[MEAN]] on @grid axes [dp, pp] reduction = sum
// NOEVAL-LABEL: func.func @stage1_train_step(
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(dp = 2, pp = 2)
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %h = arith.constant dense<1.0> : tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    %logits = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %logits : tensor<2x4x16xf32>
  }
  func.func @stage1_forward_backward(%h: tensor<2x4x8xf32>, %tokens: tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<1>} {
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss, %h : tensor<f32>, tensor<2x4x8xf32>
  }
  func.func @stage1_optimizer_step() attributes {ptrain.stage = #ptrain.stage<1>} {
    return
  }
}

// -----

// Interleaved 1F1B, pp = 2 with 2 model chunks: stage 0 runs virtual stages 0 and 2, stage 1 runs 1 and 3.
// The transfer from virtual stage c to c + 1 of micro-batch i has tag 2 (i V + c / P) (+ 1 for its gradient):
// chunk 1's input on stage 0 (from virtual stage 1 on stage 1) is tag 0 for micro-batch 0, 4 for micro-batch 1.
// CHECK-LABEL: func.func @stage0_train_step(
// CHECK: %[[Y0:.*]] = call @forward_stage0(
// CHECK-NEXT: ptrain.send_start %[[Y0]] to @grid axis pp offset 1 {ptrain.tag = 0 : i64}
// CHECK: %[[Y1:.*]] = call @forward_stage0(
// CHECK-NEXT: ptrain.send_start %[[Y1]] to @grid axis pp offset 1 {ptrain.tag = 4 : i64}
// CHECK-NEXT: %[[R:.*]] = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 0 : i64}
// CHECK-NEXT: %[[H:.*]] = ptrain.wait %[[R]]
// CHECK-NEXT: %[[Z:.*]] = call @forward_stage2(%[[H]])
// CHECK-NEXT: ptrain.send_start %[[Z]] to @grid axis pp offset 1 {ptrain.tag = 2 : i64}
// CHECK: call @stage2_backward(%[[H]], %{{.*}})
// CHECK: call @stage0_backward(
// CHECK: call @stage0_optimizer_step()
// CHECK-LABEL: func.func @stage1_train_step(
// CHECK: call @forward_stage1(
// CHECK: call @stage3_forward_backward(
// CHECK: call @stage1_backward(
// CHECK: call @stage1_optimizer_step()
// NOEVAL-LABEL: func.func @stage0_train_step(
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "interleaved", micro_batches = 2, virtual_stages = 2, table = [["F0", "F1", "F0.1", "F1.1", "B0.1", "B1.1", "B0", "B1", "O"], ["F0", "F1", "FB0.1", "FB1.1", "B0", "B1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.virtual_stage = 0 : i64} {
    %h = arith.constant dense<1.0> : tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>, ptrain.virtual_stage = 0 : i64} {
    return
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.virtual_stage = 1 : i64} {
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage1_backward(%h: tensor<2x4x8xf32>, %dh: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.virtual_stage = 1 : i64} {
    return %dh : tensor<2x4x8xf32>
  }
  func.func @forward_stage2(%h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.virtual_stage = 2 : i64} {
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage2_backward(%h: tensor<2x4x8xf32>, %dh: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.virtual_stage = 2 : i64} {
    return %dh : tensor<2x4x8xf32>
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @forward_stage3(%h: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.virtual_stage = 3 : i64} {
    %logits = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %logits : tensor<2x4x16xf32>
  }
  func.func @stage3_forward_backward(%h: tensor<2x4x8xf32>, %tokens: tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<1>, ptrain.virtual_stage = 3 : i64} {
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss, %h : tensor<f32>, tensor<2x4x8xf32>
  }
  func.func @stage1_optimizer_step() attributes {ptrain.stage = #ptrain.stage<1>} {
    return
  }
}
