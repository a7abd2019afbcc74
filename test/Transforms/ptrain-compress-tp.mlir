// RUN: ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench tp-fwd-codec=quant:bits=8 tp-bwd-codec=bf16" | FileCheck %s
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench tp-fwd-codec=fp16 tp-bwd-codec=fp16 tp-skip-layers=1" 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench tp-bwd-codec=bf16 tp-error-feedback=false" | FileCheck %s --check-prefix=NOEF
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench tp-fwd-codec=randk:ratio=0.5" 2>&1 | FileCheck %s --check-prefix=STATEFUL

// Bad configurations, each an error naming the option and the site (on every module of the file).
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench tp-fwd-codec=powersgd:rank=4" 2>&1 | FileCheck %s --check-prefix=WARM
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench tp-bwd-codec=#ptrain.linear_ae<dim=16>" 2>&1 | FileCheck %s --check-prefix=AE
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench tp-bwd-codec=topk:k=100" 2>&1 | FileCheck %s --check-prefix=TOPK
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench tp-fwd-codec=quant:bits=3" 2>&1 | FileCheck %s --check-prefix=BITS
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=mcbench tp-fwd-codec=fp16 tp-skip-layers=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not ptrain-opt %s --split-input-file --ptrain-compress="policy=optimus-cc tp-error-feedback=false" 2>&1 | FileCheck %s --check-prefix=EFPOLICY
// A warm-started PowerSGD keeps its Q between steps: not on a forward site.
// WARM: error: --ptrain-compress: tp-fwd-codec #ptrain.powersgd<rank = 4> on the forward tp all-reduce attn_out of layer 0 keeps codec state
// The linear autoencoder would need parameters on the site.
// AE: error: --ptrain-compress: codec #ptrain.linear_ae<dim = 16> on the backward tp all-reduce attn_in of layer 0: the linear autoencoder needs trainable parameters, which --ptrain-compress does not add on tensor-parallel all-reduces
// The codec's own check against the site's tensor (64 elements).
// TOPK: error: --ptrain-compress: codec #ptrain.topk<k = 100> cannot serve the backward tp all-reduce attn_in of layer 0: top-k k = 100 exceeds the 64 elements of 'tensor<2x4x8xf32>'
// BITS: error: --ptrain-compress: tp-fwd-codec: quantization bits must be 2, 4 or 8, got 3
// NEG: error: --ptrain-compress: tp-skip-layers must be >= 0, got -1
// EFPOLICY: error: --ptrain-compress: policy=optimus-cc does not take tp-error-feedback (policy=mcbench or auto)

// mcbench's TP site (docs/Compression.md, "The TP site"): --ptrain-compress finds the tensor-parallel
// all-reduces of each stage function by the ptrain.linear marks of --ptrain-raise (a forward site follows a
// row-parallel linear, attn_out or mlp_down; a backward site reduces f's gradient, dy W^T of a column-parallel
// linear's weight, attn_in before Q|K|V or mlp_in) and records one #ptrain.tp_site per site in
// ptrain.compression; --ptrain-lower-to-runtime materializes them. The critical-path flags are written by hand.

// tp = 2, one layer: the forward site (attn_out) gets tp-fwd-codec, the backward one (attn_in) tp-bwd-codec
// with error feedback (the default); the stage's recomputed forward in its backward is the same site.
// CHECK-LABEL: module @layer0
// CHECK-SAME: policy = "mcbench"
// CHECK-SAME: tp_all_reduces = [#ptrain.tp_site<layer = 0, role = "attn_out", direction = "forward", codec = #ptrain.quant<bits = 8>>,
// CHECK-SAME: #ptrain.tp_site<layer = 0, role = "attn_in", direction = "backward", codec = #ptrain.cast<bf16>, error_feedback = true>]>
// tp-error-feedback=false: the backward site without a residual.
// NOEF-LABEL: module @layer0
// NOEF-SAME: tp_all_reduces = [#ptrain.tp_site<layer = 0, role = "attn_in", direction = "backward", codec = #ptrain.cast<bf16>>]>
// A forward site takes stateless codecs only: the backward recomputes the forward and must decode the same value.
// STATEFUL: error: --ptrain-compress: tp-fwd-codec #ptrain.randk<ratio = 5.000000e-01 : f64, seed = 0> on the forward tp all-reduce attn_out of layer 0 keeps codec state
// tp-skip-layers=1 skips this module's only layer with a site: an error.
// SKIP: error: --ptrain-compress: tp-skip-layers = 1 skips every layer with a tp all-reduce (there are 1)
module @layer0 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 2>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["FB0", "FB1", "O"]], critical = [[true, true, true]], send_critical = [[false, false, false]]>} {
  ptrain.grid @grid(tp = 2, pp = 1)
  ptrain.state @wqkv key "wqkv" kind parameter : tensor<8x8xf32>
  ptrain.state @wo key "wo" kind parameter : tensor<8x8xf32>
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x4x8xf32>
    %wqkv = ptrain.state_read @wqkv : tensor<8x8xf32>
    %q = ptrain.matmul %x, %wqkv {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %wo = ptrain.state_read @wo : tensor<8x8xf32>
    %o = ptrain.matmul %q, %wo {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %h = ptrain.tp_all_reduce %o on @grid axis tp : tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @stage0_forward_backward(%tokens: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x4x8xf32>
    %wqkv = ptrain.state_read @wqkv : tensor<8x8xf32>
    %q = ptrain.matmul %x, %wqkv {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %wo = ptrain.state_read @wo : tensor<8x8xf32>
    %o = ptrain.matmul %q, %wo {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %h = ptrain.tp_all_reduce %o on @grid axis tp : tensor<2x4x8xf32>
    %wt = ptrain.transpose %wqkv {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %dx = ptrain.matmul %h, %wt : tensor<2x4x8xf32>, tensor<8x8xf32>
    %g = ptrain.tp_all_reduce %dx on @grid axis tp : tensor<2x4x8xf32>
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
}

// -----

// Two layers, tp-skip-layers=1: layer 0's sites stay exact; layer 1's forward site after the MLP down
// projection (mlp_down) and backward site before the MLP up projection (mlp_in) are compressed.
// SKIP-LABEL: module @layers01
// SKIP-SAME: tp_all_reduces = [#ptrain.tp_site<layer = 1, role = "mlp_down", direction = "forward", codec = #ptrain.cast<f16>>,
// SKIP-SAME: #ptrain.tp_site<layer = 1, role = "mlp_in", direction = "backward", codec = #ptrain.cast<f16>, error_feedback = true>],
// SKIP-SAME: tp_skip_layers = 1>
module @layers01 attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>, ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]], critical = [[true, true]], send_critical = [[false, false]]>} {
  ptrain.grid @grid(tp = 2, pp = 1)
  ptrain.state @wqkv key "wqkv" kind parameter : tensor<8x8xf32>
  ptrain.state @wo key "wo" kind parameter : tensor<8x8xf32>
  ptrain.state @wup key "wup" kind parameter : tensor<8x8xf32>
  ptrain.state @wdown key "wdown" kind parameter : tensor<8x8xf32>
  func.func @forward_stage0(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x4x8xf32>
    %wqkv = ptrain.state_read @wqkv : tensor<8x8xf32>
    %q = ptrain.matmul %x, %wqkv {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %wo = ptrain.state_read @wo : tensor<8x8xf32>
    %o = ptrain.matmul %q, %wo {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %h = ptrain.tp_all_reduce %o on @grid axis tp : tensor<2x4x8xf32>
    %wup = ptrain.state_read @wup : tensor<8x8xf32>
    %u = ptrain.matmul %h, %wup {ptrain.linear = {layer = 1 : i64, role = "mlp_up"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %wdown = ptrain.state_read @wdown : tensor<8x8xf32>
    %d = ptrain.matmul %u, %wdown {ptrain.linear = {layer = 1 : i64, role = "mlp_down"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %y = ptrain.tp_all_reduce %d on @grid axis tp : tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
  func.func @stage0_forward_backward(%tokens: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<2x4x8xf32>
    %wqkv = ptrain.state_read @wqkv : tensor<8x8xf32>
    %q = ptrain.matmul %x, %wqkv {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %wup = ptrain.state_read @wup : tensor<8x8xf32>
    %u = ptrain.matmul %q, %wup {ptrain.linear = {layer = 1 : i64, role = "mlp_up"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
    %wupt = ptrain.transpose %wup {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %du = ptrain.matmul %u, %wupt : tensor<2x4x8xf32>, tensor<8x8xf32>
    %g1 = ptrain.tp_all_reduce %du on @grid axis tp : tensor<2x4x8xf32>
    %wqkvt = ptrain.transpose %wqkv {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %dx = ptrain.matmul %g1, %wqkvt : tensor<2x4x8xf32>, tensor<8x8xf32>
    %g0 = ptrain.tp_all_reduce %dx on @grid axis tp : tensor<2x4x8xf32>
    %loss = arith.constant dense<2.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    return
  }
}
