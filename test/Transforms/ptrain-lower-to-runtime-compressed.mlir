// RUN: ptrain-opt %s --split-input-file --ptrain-lower-to-runtime="eval=false" | FileCheck %s

// --ptrain-lower-to-runtime materializes the ptrain.compression record of --ptrain-compress (written by hand
// here, as the pass writes it) on the stub stages of ptrain-lower-to-runtime.mlir: pp = 2, 1F1B, 2 micro-batches
// of 2 x 4 tokens, hidden size 8.

// CB on FB1's gradient (the link 1 -> 0) with PowerSGD rank 2 and LEP's residual: the link's residual and
// warm-start Q become keyed states; stage 1 compresses with error feedback, writes both states back and sends
// P and Q (tag 2i + 1 = 3, then 3 + 2 M = 7); stage 0 receives both and decompresses before B1. FB0's
// gradient (tag 1) travels uncompressed.
// CHECK-LABEL: module @cb
// CHECK-DAG: ptrain.state @pp1to0_warm_start_q key "pp1->0/warm_start_q" kind codec_warm_start : tensor<8x2xf32>
// CHECK-DAG: ptrain.state @pp1to0_residual key "pp1->0/residual" kind codec_residual : tensor<2x4x8xf32>
// CHECK-LABEL: func.func @stage0_train_step(
// CHECK: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<2x4x8xf32>>
// CHECK: %[[RP:.*]] = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 3 : i64} : !ptrain.request<tensor<8x2xf32>>
// CHECK-NEXT: %[[P:.*]] = ptrain.wait %[[RP]]
// CHECK-NEXT: %[[RQ:.*]] = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 7 : i64} : !ptrain.request<tensor<8x2xf32>>
// CHECK-NEXT: %[[Q:.*]] = ptrain.wait %[[RQ]]
// CHECK-NEXT: %[[D:.*]] = ptrain.decompress %[[P]], %[[Q]] {codec = #ptrain.powersgd<rank = 2>} : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<2x4x8xf32>
// CHECK: call @stage0_backward(%{{.*}}, %[[D]])
// CHECK-LABEL: func.func @stage1_train_step(
// CHECK: ptrain.send_start %{{.*}} to @grid axis pp offset -1 {ptrain.tag = 1 : i64} : tensor<2x4x8xf32>
// CHECK: %[[FB1:.*]]:2 = call @stage1_forward_backward(
// CHECK: %[[E:.*]] = ptrain.state_read @pp1to0_residual : tensor<2x4x8xf32>
// CHECK-NEXT: %[[Q0:.*]] = ptrain.state_read @pp1to0_warm_start_q : tensor<8x2xf32>
// CHECK-NEXT: %[[CODES:.*]]:2, %[[NEW:.*]]:2 = ptrain.compress %[[FB1]]#1 state(%[[E]], %[[Q0]]) {codec = #ptrain.powersgd<rank = 2>, error_feedback}
// CHECK-NEXT: ptrain.state_write %[[NEW]]#0 to @pp1to0_residual
// CHECK-NEXT: ptrain.state_write %[[NEW]]#1 to @pp1to0_warm_start_q
// CHECK-NEXT: ptrain.send_start %[[CODES]]#0 to @grid axis pp offset -1 {ptrain.tag = 3 : i64} : tensor<8x2xf32>
// CHECK-NEXT: ptrain.send_start %[[CODES]]#1 to @grid axis pp offset -1 {ptrain.tag = 7 : i64} : tensor<8x2xf32>
module @cb attributes {ptrain.compression = #ptrain.compression<policy = "optimus-cc", backward_sends = [[false, false], [false, true]], backward_codec = #ptrain.powersgd<rank = 2>, forward_sends = [[false, false], [false, false]], dp_all_reduce = [false, false]>, ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
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

// MCBench: every forward send of stage 0 with 8-bit quantization and error feedback (one residual for the link
// 0 -> 1): packed bytes and per-row scales, tags 2i and 2i + 2 M; stage 1 decodes before its forward-backward.
// CHECK-LABEL: module @forward_quant
// CHECK: ptrain.state @pp0to1_residual key "pp0->1/residual" kind codec_residual : tensor<2x4x8xf32>
// CHECK-NOT: ptrain.state @pp1to0
// CHECK-LABEL: func.func @stage0_train_step(
// CHECK: %[[Y0:.*]] = call @forward_stage0(
// CHECK-NEXT: %[[E:.*]] = ptrain.state_read @pp0to1_residual
// CHECK-NEXT: %[[C:.*]]:2, %[[N:.*]] = ptrain.compress %[[Y0]] state(%[[E]]) {codec = #ptrain.quant<bits = 8>, error_feedback} : tensor<2x4x8xf32> state(tensor<2x4x8xf32>) -> (tensor<64xi8>, tensor<8xf32>) state(tensor<2x4x8xf32>)
// CHECK-NEXT: ptrain.state_write %[[N]] to @pp0to1_residual
// CHECK-NEXT: ptrain.send_start %[[C]]#0 to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<64xi8>
// CHECK-NEXT: ptrain.send_start %[[C]]#1 to @grid axis pp offset 1 {ptrain.tag = 4 : i64} : tensor<8xf32>
// CHECK: call @forward_stage0(
// CHECK: ptrain.send_start %{{.*}} {ptrain.tag = 2 : i64} : tensor<64xi8>
// CHECK-NEXT: ptrain.send_start %{{.*}} {ptrain.tag = 6 : i64} : tensor<8xf32>
// Gradients come back uncompressed.
// CHECK: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<2x4x8xf32>>
// CHECK-LABEL: func.func @stage1_train_step(
// CHECK: %[[R0:.*]] = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<64xi8>>
// CHECK-NEXT: %[[B0:.*]] = ptrain.wait %[[R0]]
// CHECK-NEXT: %[[R1:.*]] = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 4 : i64} : !ptrain.request<tensor<8xf32>>
// CHECK-NEXT: %[[S0:.*]] = ptrain.wait %[[R1]]
// CHECK-NEXT: %[[X0:.*]] = ptrain.decompress %[[B0]], %[[S0]] {codec = #ptrain.quant<bits = 8>} : (tensor<64xi8>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: call @stage1_forward_backward(%[[X0]],
// CHECK-NOT: ptrain.compress
module @forward_quant attributes {ptrain.compression = #ptrain.compression<policy = "mcbench", backward_sends = [[false, false], [false, false]], forward_sends = [[true, true], [false, false]], forward_codec = #ptrain.quant<bits = 8>, forward_error_feedback = true, dp_all_reduce = [false, false]>, ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
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

// fp16's loss scaler with error feedback (docs/MixedPrecision.md, "Error feedback under fp16"): the optimizer
// steps return the skip flag (--ptrain-build-training-step precision=fp16), and each stage's training step reads
// every codec state it writes (the residual and PowerSGD's warm-start Q of the link 1 -> 0, written by stage 1's
// compress) at its start and writes it back after the optimizer step through ptrain.select on the flag: a skipped
// step leaves them bit-unchanged. Stage 0 writes no codec state and keeps nothing.
// CHECK-LABEL: module @cb_fp16
// CHECK-LABEL: func.func @stage0_train_step(
// CHECK-NOT: ptrain.select
// CHECK: call @stage0_optimizer_step() : () -> tensor<f32>
// CHECK-NOT: ptrain.select
// CHECK: return
// CHECK-LABEL: func.func @stage1_train_step(
// CHECK-NEXT: %[[E0:.*]] = ptrain.state_read @pp1to0_residual : tensor<2x4x8xf32>
// CHECK-NEXT: %[[Q0:.*]] = ptrain.state_read @pp1to0_warm_start_q : tensor<8x2xf32>
// CHECK: ptrain.compress %{{.*}} state(%{{.*}}, %{{.*}}) {codec = #ptrain.powersgd<rank = 2>, error_feedback}
// CHECK: %[[FLAG:.*]] = call @stage1_optimizer_step() : () -> tensor<f32>
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[SKIP:.*]] = ptrain.compare gt %[[FLAG]], %[[ZERO]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[E1:.*]] = ptrain.state_read @pp1to0_residual : tensor<2x4x8xf32>
// CHECK-NEXT: %[[E2:.*]] = ptrain.select %[[SKIP]], %[[E0]], %[[E1]]
// CHECK-NEXT: ptrain.state_write %[[E2]] to @pp1to0_residual
// CHECK-NEXT: %[[Q1:.*]] = ptrain.state_read @pp1to0_warm_start_q : tensor<8x2xf32>
// CHECK-NEXT: %[[Q2:.*]] = ptrain.select %[[SKIP]], %[[Q0]], %[[Q1]]
// CHECK-NEXT: ptrain.state_write %[[Q2]] to @pp1to0_warm_start_q
module @cb_fp16 attributes {ptrain.compression = #ptrain.compression<policy = "optimus-cc", backward_sends = [[false, false], [false, true]], backward_codec = #ptrain.powersgd<rank = 2>, forward_sends = [[false, false], [false, false]], dp_all_reduce = [false, false]>, ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  ptrain.state @loss_scaler key "loss_scaler" kind step_counter : tensor<3xf32>
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %h = arith.constant dense<1.0> : tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @stage0_optimizer_step() -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %flag = arith.constant dense<0.0> : tensor<f32>
    return %flag : tensor<f32>
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    %logits = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %logits : tensor<2x4x16xf32>
  }
  func.func @stage1_forward_backward(%h: tensor<2x4x8xf32>, %tokens: tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<1>} {
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss, %h : tensor<f32>, tensor<2x4x8xf32>
  }
  func.func @stage1_optimizer_step() -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<1>} {
    %flag = arith.constant dense<0.0> : tensor<f32>
    return %flag : tensor<f32>
  }
}

// -----

// Residuals across a scale change (docs/MixedPrecision.md): under precision=fp16 the backward link's residual holds
// loss-scaled gradient values (marked ptrain.loss_scaled; the forward link's, in activation units, is not). After
// the optimizer step, which updates the scaler, the kept residual is multiplied by new scale / old scale (the
// ptrain.loss_scale of the scaler state after the step over the one read at the start), so it is in the next step's
// units; the forward residual is only kept.
// CHECK-LABEL: module @ef_fp16_rescale
// CHECK-DAG: ptrain.state @pp1to0_residual key "{{.*}}" kind codec_residual {ptrain.loss_scaled} : tensor<2x4x8xf32>
// CHECK-DAG: ptrain.state @pp0to1_residual key "{{.*}}" kind codec_residual : tensor<2x4x8xf32>
// CHECK-LABEL: func.func @stage0_train_step(
// CHECK-NOT: ptrain.loss_scale
// CHECK: %[[F0:.*]] = ptrain.state_read @pp0to1_residual
// CHECK: call @stage0_optimizer_step() : () -> tensor<f32>
// CHECK: %[[F1:.*]] = ptrain.state_read @pp0to1_residual
// CHECK-NEXT: %[[F2:.*]] = ptrain.select %{{.*}}, %[[F0]], %[[F1]]
// CHECK-NEXT: ptrain.state_write %[[F2]] to @pp0to1_residual
// CHECK: return
// CHECK-LABEL: func.func @stage1_train_step(
// CHECK-NEXT: %[[S0:.*]] = ptrain.state_read @loss_scaler : tensor<3xf32>
// CHECK-NEXT: %[[OLD:.*]] = ptrain.loss_scale %[[S0]] {initial_scale = 0x41A0000000000000 : f64} : tensor<3xf32> -> tensor<f32>
// CHECK-NEXT: %[[E0:.*]] = ptrain.state_read @pp1to0_residual : tensor<2x4x8xf32>
// CHECK: %[[FLAG:.*]] = call @stage1_optimizer_step() : () -> tensor<f32>
// CHECK: %[[SKIP:.*]] = ptrain.compare gt %[[FLAG]]
// CHECK-NEXT: %[[S1:.*]] = ptrain.state_read @loss_scaler : tensor<3xf32>
// CHECK-NEXT: %[[NEW:.*]] = ptrain.loss_scale %[[S1]] {initial_scale = 0x41A0000000000000 : f64} : tensor<3xf32> -> tensor<f32>
// CHECK-NEXT: %[[RATIO:.*]] = ptrain.binary div %[[NEW]], %[[OLD]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[E1:.*]] = ptrain.state_read @pp1to0_residual : tensor<2x4x8xf32>
// CHECK-NEXT: %[[E2:.*]] = ptrain.select %[[SKIP]], %[[E0]], %[[E1]]
// CHECK-NEXT: %[[E3:.*]] = ptrain.binary mul %[[E2]], %[[RATIO]] : tensor<2x4x8xf32>, tensor<f32>
// CHECK-NEXT: ptrain.state_write %[[E3]] to @pp1to0_residual
module @ef_fp16_rescale attributes {ptrain.precision = #ptrain.precision<fp16>, ptrain.compression = #ptrain.compression<policy = "mcbench", backward_sends = [[false, false], [true, true]], backward_codec = #ptrain.quant<bits = 4>, forward_sends = [[true, true], [false, false]], forward_codec = #ptrain.quant<bits = 8>, forward_error_feedback = true, dp_all_reduce = [false, false]>, ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  ptrain.state @loss_scaler key "loss_scaler" kind step_counter : tensor<3xf32>
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %h = arith.constant dense<1.0> : tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @stage0_optimizer_step() -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %s = ptrain.state_read @loss_scaler : tensor<3xf32>
    %flag = arith.constant dense<0.0> : tensor<f32>
    %next = ptrain.grad_scaler_update %s, %flag {initial_scale = 134217728.0 : f64, growth_factor = 2.0 : f64,
        backoff_factor = 0.5 : f64, growth_interval = 2 : i64, hysteresis = 2 : i64, min_scale = 1.0 : f64}
        : tensor<3xf32>, tensor<f32>
    ptrain.state_write %next to @loss_scaler : tensor<3xf32>
    return %flag : tensor<f32>
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    %logits = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %logits : tensor<2x4x16xf32>
  }
  func.func @stage1_forward_backward(%h: tensor<2x4x8xf32>, %tokens: tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<1>} {
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss, %h : tensor<f32>, tensor<2x4x8xf32>
  }
  func.func @stage1_optimizer_step() -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<1>} {
    %s = ptrain.state_read @loss_scaler : tensor<3xf32>
    %flag = arith.constant dense<0.0> : tensor<f32>
    %next = ptrain.grad_scaler_update %s, %flag {initial_scale = 134217728.0 : f64, growth_factor = 2.0 : f64,
        backoff_factor = 0.5 : f64, growth_interval = 2 : i64, hysteresis = 2 : i64, min_scale = 1.0 : f64}
        : tensor<3xf32>, tensor<f32>
    ptrain.state_write %next to @loss_scaler : tensor<3xf32>
    return %flag : tensor<f32>
  }
}
