// RUN: ptrain-opt %s --split-input-file --ptrain-compress="cb-rank=2" | FileCheck %s
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="cb-rank=2 cb-sends=all" | FileCheck %s --check-prefix=ALL
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="cb-rank=2 cb-sends=critical" | FileCheck %s --check-prefix=CRIT
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="cb=false" | FileCheck %s --check-prefix=NOCB
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="cb-rank=2 lep=false" | FileCheck %s --check-prefix=NOLEP
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="cb-rank=2 sc=false fe=false" | FileCheck %s --check-prefix=NOSC
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="cb-rank=2 sc-all=true sc-rank=2" | FileCheck %s --check-prefix=SCALL
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="policy=none" | FileCheck %s --check-prefix=NONE
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.25" | FileCheck %s --check-prefix=MC
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench fwd-codec=bf16 error-feedback=true" | FileCheck %s --check-prefix=MCEF
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=bogus" 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="fwd-codec=bf16" 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="cb-sends=bogus" 2>&1 | FileCheck %s --check-prefix=SENDS
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="cb-rank=0" 2>&1 | FileCheck %s --check-prefix=RANK0
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress 2>&1 | FileCheck %s --check-prefix=RANK16
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench bwd-codec=quant:bits=3" 2>&1 | FileCheck %s --check-prefix=BITS
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench bwd-codec=topk:k=1000" 2>&1 | FileCheck %s --check-prefix=TOPK
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench fwd-codec=fp16 skip-stages=1" 2>&1 | FileCheck %s --check-prefix=SKIP

// --ptrain-compress decides from the schedule record alone: the table, the critical-path flags of
// --ptrain-critical-path (written by hand here: send_critical differs from the cool-down on purpose), the grid,
// the sent tensors' types (the stage functions' signatures) and the dp buckets of the optimizer steps. It only
// records its decisions in ptrain.compression; --ptrain-lower-to-runtime materializes them.

// pp = 2, 1F1B, 2 micro-batches. Optimus-CC's CB compresses the backward sends of the receiver's cool-down:
// on the link 1 -> 0, the last min(P - s, M) = 1 micro-batch (FB1), with PowerSGD and LEP's residual.
// CHECK-LABEL: module @pp2
// CHECK-SAME: ptrain.compression = #ptrain.compression<policy = "optimus-cc",
// CHECK-SAME: backward_sends = {{\[\[}}false, false], [false, true]], backward_codec = #ptrain.powersgd<rank = 2>,
// CHECK-SAME: forward_sends = {{\[\[}}false, false], [false, false]], dp_all_reduce = [false, false]>
// cb-sends=all: every backward send; cb-sends=critical: the sends marked in send_critical (FB0 here).
// ALL-LABEL: module @pp2
// ALL-SAME: backward_sends = {{\[\[}}false, false], [true, true]]
// CRIT-LABEL: module @pp2
// CRIT-SAME: backward_sends = {{\[\[}}false, false], [true, false]]
// cb=false: nothing compressed and no codec recorded.
// NOCB-LABEL: module @pp2
// NOCB-NOT: backward_codec
// NOCB-SAME: backward_sends = {{\[\[}}false, false], [false, false]]
// lep=false: CB without the residual (the LEP ablation).
// NOLEP-LABEL: module @pp2
// NOLEP-SAME: backward_sends = {{\[\[}}false, false], [false, true]], backward_codec = #ptrain.powersgd<rank = 2>, backward_error_feedback = false
// policy=none: the record says nothing is compressed.
// NONE-LABEL: module @pp2
// NONE-SAME: ptrain.compression = #ptrain.compression<policy = "none", backward_sends = {{\[\[}}false, false], [false, false]], backward_error_feedback = false, forward_sends = {{\[\[}}false, false], [false, false]], dp_all_reduce = [false, false]>
// MCBench: every forward send (stage 0's) with fwd-codec and every backward send (stage 1's) with bwd-codec.
// MC-LABEL: module @pp2
// MC-SAME: policy = "mcbench", backward_sends = {{\[\[}}false, false], [true, true]],
// MC-SAME: backward_codec = #ptrain.topk<ratio = 2.500000e-01 : f64>, backward_error_feedback = false,
// MC-SAME: forward_sends = {{\[\[}}true, true], [false, false]], forward_codec = #ptrain.quant<bits = 8>, dp_all_reduce = [false, false]>
// error-feedback=true: a residual per link and direction; no bwd-codec, no backward send compressed.
// MCEF-LABEL: module @pp2
// MCEF-NOT: backward_codec
// MCEF-SAME: backward_sends = {{\[\[}}false, false], [false, false]], forward_sends = {{\[\[}}true, true], [false, false]],
// MCEF-SAME: forward_codec = #ptrain.cast<bf16>, forward_error_feedback = true
module @pp2 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]], critical = [[true, false, false, true, true], [true, true, false]], send_critical = [[true, true, false, false, false], [true, false, false]]>} {
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

// dp = 2 x pp = 2 with the embedding tied across both stages (its gradient in each stage's dp bucket, then
// summed over pp). SC compresses the dp all-reduce of the stages whose all-reduce the critical path marks
// (dp_all_reduce_critical: stage 0); FE fuses the tied sync into one reduction over [dp, pp].
// CHECK-LABEL: module @dp2_pp2
// CHECK-SAME: backward_sends = {{\[\[}}false, false], [false, true]], {{.*}}dp_all_reduce = [true, false],
// CHECK-SAME: fused_embedding = true
// ALL-LABEL: module @dp2_pp2
// CRIT-LABEL: module @dp2_pp2
// NOCB-LABEL: module @dp2_pp2
// NOLEP-LABEL: module @dp2_pp2
// sc=false fe=false: the dp all-reduces and the tied sync stay as they are.
// NOSC-LABEL: module @pp2
// NOSC-LABEL: module @dp2_pp2
// NOSC-SAME: dp_all_reduce = [false, false]>
// sc-all: every stage's dp all-reduce, at the given rank.
// SCALL-LABEL: module @pp2
// SCALL-LABEL: module @dp2_pp2
// SCALL-SAME: dp_all_reduce = [true, true], sc_rank = 2
// NONE-LABEL: module @dp2_pp2
// NONE-SAME: policy = "none", {{.*}}dp_all_reduce = [false, false]>
// MC-LABEL: module @dp2_pp2
// MCEF-LABEL: module @dp2_pp2
module @dp2_pp2 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]], critical = [[true, false, false, true, true], [true, true, false]], send_critical = [[true, true, false, false, false], [true, false, false]], dp_all_reduce_critical = [true, false]>} {
  ptrain.grid @grid(dp = 2, pp = 2)
  ptrain.state @wte.grad key "wte/grad" kind gradient : tensor<16x8xf32>
  ptrain.state @w0.grad key "blocks.0.w/grad" kind gradient : tensor<8x8xf32>
  ptrain.state @w1.grad key "blocks.1.w/grad" kind gradient : tensor<8x8xf32>
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %h = arith.constant dense<1.0> : tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    %g = ptrain.state_read @w0.grad : tensor<8x8xf32>
    %gf = ptrain.reshape %g : tensor<8x8xf32> -> tensor<64xf32>
    %e = ptrain.state_read @wte.grad : tensor<16x8xf32>
    %ef = ptrain.reshape %e : tensor<16x8xf32> -> tensor<128xf32>
    %b = ptrain.concat %gf, %ef {axis = 0 : i64} : tensor<64xf32>, tensor<128xf32> -> tensor<192xf32>
    %r = ptrain.all_reduce_start %b on @grid axes [dp] reduction = avg : tensor<192xf32>
    %a = ptrain.wait %r : !ptrain.request<tensor<192xf32>>
    %parts:2 = ptrain.split %a {axis = 0 : i64, sizes = array<i64: 64, 128>} : tensor<192xf32> -> tensor<64xf32>, tensor<128xf32>
    %g2 = ptrain.reshape %parts#0 : tensor<64xf32> -> tensor<8x8xf32>
    ptrain.state_write %g2 to @w0.grad : tensor<8x8xf32>
    %e2 = ptrain.reshape %parts#1 : tensor<128xf32> -> tensor<16x8xf32>
    ptrain.state_write %e2 to @wte.grad : tensor<16x8xf32>
    %e3 = ptrain.state_read @wte.grad : tensor<16x8xf32>
    %rt = ptrain.all_reduce_start %e3 on @grid axes [pp] reduction = sum : tensor<16x8xf32>
    %e4 = ptrain.wait %rt : !ptrain.request<tensor<16x8xf32>>
    ptrain.state_write %e4 to @wte.grad : tensor<16x8xf32>
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
    %g = ptrain.state_read @w1.grad : tensor<8x8xf32>
    %gf = ptrain.reshape %g : tensor<8x8xf32> -> tensor<64xf32>
    %e = ptrain.state_read @wte.grad : tensor<16x8xf32>
    %ef = ptrain.reshape %e : tensor<16x8xf32> -> tensor<128xf32>
    %b = ptrain.concat %gf, %ef {axis = 0 : i64} : tensor<64xf32>, tensor<128xf32> -> tensor<192xf32>
    %r = ptrain.all_reduce_start %b on @grid axes [dp] reduction = avg : tensor<192xf32>
    %a = ptrain.wait %r : !ptrain.request<tensor<192xf32>>
    %parts:2 = ptrain.split %a {axis = 0 : i64, sizes = array<i64: 64, 128>} : tensor<192xf32> -> tensor<64xf32>, tensor<128xf32>
    %g2 = ptrain.reshape %parts#0 : tensor<64xf32> -> tensor<8x8xf32>
    ptrain.state_write %g2 to @w1.grad : tensor<8x8xf32>
    %e2 = ptrain.reshape %parts#1 : tensor<128xf32> -> tensor<16x8xf32>
    ptrain.state_write %e2 to @wte.grad : tensor<16x8xf32>
    %e3 = ptrain.state_read @wte.grad : tensor<16x8xf32>
    %rt = ptrain.all_reduce_start %e3 on @grid axes [pp] reduction = sum : tensor<16x8xf32>
    %e4 = ptrain.wait %rt : !ptrain.request<tensor<16x8xf32>>
    ptrain.state_write %e4 to @wte.grad : tensor<16x8xf32>
    return
  }
}

// Option errors, reported before anything is decided.
// POLICY: error: --ptrain-compress: unknown policy 'bogus' (known: optimus-cc, mcbench, none, auto)
// OTHER: error: --ptrain-compress: policy=optimus-cc does not take fwd-codec, bwd-codec, dp-codec, skip-stages, error-feedback, tp-fwd-codec, tp-bwd-codec or tp-skip-layers (policy=mcbench)
// SENDS: error: --ptrain-compress: unknown cb-sends 'bogus' (known: cooldown, critical, all)
// RANK0: error: --ptrain-compress: cb-rank and sc-rank must be >= 1, got cb-rank = 0, sc-rank = 128
// BITS: error: --ptrain-compress: bwd-codec: quantization bits must be 2, 4 or 8, got 3
// A codec that cannot serve its edge, named with the edge and the type: the default CB rank 16 on an 8 x 8
// matrix view, top-k with more elements than the tensor has.
// RANK16: error: --ptrain-compress: cb-rank: PowerSGD rank 16 exceeds min(n, m) = 8 of the 8x8 matrix view of 'tensor<2x4x8xf32>'
// TOPK: error: --ptrain-compress: codec #ptrain.topk<k = 1000> cannot serve the backward sends of stage 1 (bwd-codec): top-k k = 1000 exceeds the 64 elements of 'tensor<2x4x8xf32>'
// SKIP: error: --ptrain-compress: skip-stages=1 leaves no pipeline boundary to compress: the plan has 2 stages, so skip-stages must be below 1
