// Codecs on fp16's loss-scaled gradient traffic (docs/MixedPrecision.md, "Codecs on loss-scaled gradients"): an
// overflowing step makes the gradients inf/NaN by design, and the scaler skips it. Quantization and TAH-Quant
// code a group (block, tile) with an inf or NaN with a NaN scale, so the decode carries the overflow to the
// scaler's check: --ptrain-compress takes them on gradient-carrying sites under fp16 as under fp32 (until branch
// prec7 it refused them). The modules are those of ptrain-compress-auto.mlir with ptrain.precision = fp16 (its dp
// sites: ptrain-compress-zero.mlir).
// RUN: ptrain-opt %s --split-input-file --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" --ptrain-compress="policy=mcbench fwd-codec=quant:bits=8 bwd-codec=quant:bits=4" 2>&1 | FileCheck %s --check-prefix=BWD
// RUN: ptrain-opt %s --split-input-file --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" --ptrain-compress="policy=mcbench bwd-codec=tahquant" 2>&1 | FileCheck %s --check-prefix=TAH
// RUN: not ptrain-opt %s --split-input-file --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" --ptrain-compress="policy=mcbench tp-fwd-codec=quant:bits=8 tp-bwd-codec=quant:bits=8" 2>/dev/null | FileCheck %s --check-prefix=TPBWD
// RUN: ptrain-opt %s --split-input-file --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" --ptrain-compress="policy=auto" -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTO
// An explicit candidate list is taken as given: no warning, quantization on the backward link.
// RUN: ptrain-opt %s --split-input-file --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" --ptrain-compress="policy=auto auto-backward-codecs=quant:bits=4;topk:ratio=0.1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTOLIST

// Both links quantized: the backward link's 4-bit, the forward link's 8-bit, no error.
// BWD-NOT: error
// BWD-LABEL: module @pp2
// BWD-SAME: backward_sends = {{\[\[}}false, false], [true, true]], backward_codec = #ptrain.quant<bits = 4>
// BWD-SAME: forward_sends = {{\[\[}}true, true], [false, false]], forward_codec = #ptrain.quant<bits = 8>
// TAH-NOT: error
// TAH-LABEL: module @pp2
// TAH-SAME: backward_sends = {{\[\[}}false, false], [true, true]], backward_codec = #ptrain.tahquant
// Quantization on the backward TP site, with error feedback (@pp2 has no TP site: the error that makes the run
// fail).
// TPBWD-LABEL: module @tp2
// TPBWD-SAME: tp_all_reduces = [#ptrain.tp_site<layer = 0, role = "attn_out", direction = "forward", codec = #ptrain.quant<bits = 8>>, #ptrain.tp_site<layer = 0, role = "attn_in", direction = "backward", codec = #ptrain.quant<bits = 8>, error_feedback = true>]>
// policy=auto considers quantization on gradient-carrying sites under fp16 as under fp32: on the slow link it
// moves both links to 4-bit quantization, on tp2 both TP sites (ptrain-compress-auto.mlir's fp32 choices).
// AUTO-NOT: warning
// AUTO: remark: --ptrain-compress policy=auto: move {{[0-9]+}}: backward sends of link 1 -> 0 -> #ptrain.quant<bits = 4>
// AUTO: remark: --ptrain-compress policy=auto: {{[0-9]+}} moves
// AUTO: remark: --ptrain-compress policy=auto: backward tp all-reduce attn_in of layer 0: #ptrain.quant<bits = 4>
// AUTOLIST-NOT: warning
// AUTOLIST: backward sends of link 1 -> 0 -> #ptrain.quant<bits = 4>

module @pp2 attributes {ptrain.precision = #ptrain.precision<fp16>, ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  ptrain.state @w key "w" kind parameter : tensor<128x128xf32>
  func.func @forward_stage0(%tokens: tensor<2x64xi64>) -> tensor<2x64x128xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x64x128xf32>
    %w = ptrain.state_read @w : tensor<128x128xf32>
    %h = ptrain.matmul %x, %w : tensor<2x64x128xf32>, tensor<128x128xf32>
    return %h : tensor<2x64x128xf32>
  }
  func.func @stage0_backward(%tokens: tensor<2x64xi64>, %dh: tensor<2x64x128xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    %w = ptrain.state_read @w : tensor<128x128xf32>
    %a = ptrain.matmul %dh, %w : tensor<2x64x128xf32>, tensor<128x128xf32>
    %b = ptrain.matmul %a, %w : tensor<2x64x128xf32>, tensor<128x128xf32>
    return
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
  func.func @forward_stage1(%h: tensor<2x64x128xf32>) -> tensor<2x64x128xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    return %h : tensor<2x64x128xf32>
  }
  func.func @stage1_forward_backward(%h: tensor<2x64x128xf32>, %tokens: tensor<2x64xi64>) -> (tensor<f32>, tensor<2x64x128xf32>) attributes {ptrain.stage = #ptrain.stage<1>} {
    %w = ptrain.state_read @w : tensor<128x128xf32>
    %a = ptrain.matmul %h, %w : tensor<2x64x128xf32>, tensor<128x128xf32>
    %b = ptrain.matmul %a, %w : tensor<2x64x128xf32>, tensor<128x128xf32>
    %dh = ptrain.matmul %b, %w : tensor<2x64x128xf32>, tensor<128x128xf32>
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss, %dh : tensor<f32>, tensor<2x64x128xf32>
  }
  func.func @stage1_optimizer_step() attributes {ptrain.stage = #ptrain.stage<1>} {
    return
  }
}

// -----

module @tp2 attributes {ptrain.precision = #ptrain.precision<fp16>, ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["FB0", "FB1", "O"]], critical = [[true, true, true]], send_critical = [[false, false, false]]>} {
  ptrain.grid @grid(tp = 2, pp = 1)
  ptrain.state @wqkv key "wqkv" kind parameter : tensor<128x128xf32>
  ptrain.state @wo key "wo" kind parameter : tensor<128x128xf32>
  func.func @forward_stage0(%tokens: tensor<2x64xi64>) -> tensor<2x64x128xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x64x128xf32>
    %wqkv = ptrain.state_read @wqkv : tensor<128x128xf32>
    %q = ptrain.matmul %x, %wqkv {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x64x128xf32>, tensor<128x128xf32>
    %wo = ptrain.state_read @wo : tensor<128x128xf32>
    %o = ptrain.matmul %q, %wo {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x64x128xf32>, tensor<128x128xf32>
    %h = ptrain.tp_all_reduce %o on @grid axis tp : tensor<2x64x128xf32>
    return %h : tensor<2x64x128xf32>
  }
  func.func @stage0_forward_backward(%tokens: tensor<2x64xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x64x128xf32>
    %wqkv = ptrain.state_read @wqkv : tensor<128x128xf32>
    %q = ptrain.matmul %x, %wqkv {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x64x128xf32>, tensor<128x128xf32>
    %wo = ptrain.state_read @wo : tensor<128x128xf32>
    %o = ptrain.matmul %q, %wo {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x64x128xf32>, tensor<128x128xf32>
    %h = ptrain.tp_all_reduce %o on @grid axis tp : tensor<2x64x128xf32>
    %wt = ptrain.transpose %wqkv {perm = array<i64: 1, 0>} : tensor<128x128xf32> -> tensor<128x128xf32>
    %dx = ptrain.matmul %h, %wt : tensor<2x64x128xf32>, tensor<128x128xf32>
    %g = ptrain.tp_all_reduce %dx on @grid axis tp : tensor<2x64x128xf32>
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
}
