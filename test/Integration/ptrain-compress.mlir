// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" -o %t.pp2.mlir
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="policy=optimus-cc" | FileCheck %s --check-prefix=PP2
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="cb-sends=all" | FileCheck %s --check-prefix=ALL
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="cb=false" | FileCheck %s --check-prefix=NOCB
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="cb-sends=critical" | FileCheck %s --check-prefix=CRIT
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=LOWERED
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="lep=false" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=NOLEP --implicit-check-not="pp1->0/residual"
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=8" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress | FileCheck %s --check-prefix=PP4
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2 bucket-bytes=100000" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="sc-all=true sc-rank=4" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=SC
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2 bucket-bytes=100000" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" -o %t.dp2.mlir
// RUN: ptrain-opt %t.dp2.mlir --ptrain-compress="sc=false" | FileCheck %s --check-prefix=NOSC
// RUN: ptrain-opt %t.dp2.mlir --ptrain-compress="cb=false sc=false" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=FE
// RUN: ptrain-opt %t.dp2.mlir --ptrain-compress="cb=false sc=false fe=false" | FileCheck %s --check-prefix=NOFE
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="policy=none" | FileCheck %s --check-prefix=NONE
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="policy=mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1" | FileCheck %s --check-prefix=MC
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="policy=mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1 error-feedback=true" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=MCLOW
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="policy=mcbench fwd-codec=tahquant bwd-codec=tahquant:tile=32,low-bits=2,high-ratio=0.5" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=MCTAH
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="policy=mcbench fwd-codec=bf16 bwd-codec=#ptrain.randk<k=64,seed=5>" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=MCRANDK
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="policy=mcbench fwd-codec=fp16 bwd-codec=powersgd:rank=8 skip-stages=2" | FileCheck %s --check-prefix=MCSKIP
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="policy=none overrides=%S/Inputs/compress-overrides.json" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=OVERRIDE
// RUN: ptrain-opt %t.dp2.mlir --ptrain-compress="policy=none overrides=%S/Inputs/compress-overrides-dp.json" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=OVERRIDEDP

// pp = 2, 4 micro-batches, 1F1B: stage 0 has 1 warm-up forward, so its cool-down is its last backward B3;
// the send that feeds it, FB3 of stage 1 on the link 1 -> 0, is compressed with PowerSGD rank 16.
// PP2: ptrain.compression = #ptrain.compression<policy = "optimus-cc",
// PP2-SAME: backward_sends = {{\[\[}}false, false, false, false], [false, false, false, true]], backward_codec = #ptrain.powersgd<rank = 16>,
// PP2-SAME: forward_sends = {{\[\[}}false, false, false, false], [false, false, false, false]], dp_all_reduce = [false, false]>
// ALL: backward_sends = {{\[\[}}false, false, false, false], [true, true, true, true]]
// NOCB: backward_sends = {{\[\[}}false, false, false, false], [false, false, false, false]]
// NOCB-NOT: backward_codec
// CRIT: backward_sends = {{\[\[}}false, false, false, false], [{{(true|false), (true|false), (true|false), (true|false)}}]]

// pp = 4, 8 micro-batches: on the link s -> s-1 the last 4 - s micro-batches.
// PP4: backward_sends = {{\[\[}}false, false, false, false, false, false, false, false],
// PP4-SAME: [false, false, false, false, false, true, true, true],
// PP4-SAME: [false, false, false, false, false, false, true, true],
// PP4-SAME: [false, false, false, false, false, false, false, true]]

// Lowered: the link's residual and warm-start Q are keyed states; stage 1 compresses the gradient of FB3
// with error feedback, writes the new states and sends P and Q (tags 7 and 7 + 2 M = 15); stage 0 receives
// both and decompresses. The other micro-batches travel uncompressed.
// LOWERED-DAG: ptrain.state @pp1to0_residual key "pp1->0/residual" kind codec_residual : tensor<4x64x128xf32>
// LOWERED-DAG: ptrain.state @pp1to0_warm_start_q key "pp1->0/warm_start_q" kind codec_warm_start : tensor<128x16xf32>
// LOWERED-LABEL: func.func @stage0_train_step(
// LOWERED: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 5 : i64} : !ptrain.request<tensor<4x64x128xf32>>
// LOWERED: %[[RP:.*]] = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 7 : i64} : !ptrain.request<tensor<256x16xf32>>
// LOWERED-NEXT: %[[P:.*]] = ptrain.wait %[[RP]]
// LOWERED-NEXT: %[[RQ:.*]] = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 15 : i64} : !ptrain.request<tensor<128x16xf32>>
// LOWERED-NEXT: %[[Q:.*]] = ptrain.wait %[[RQ]]
// LOWERED-NEXT: %[[D:.*]] = ptrain.decompress %[[P]], %[[Q]] {codec = #ptrain.powersgd<rank = 16>} : (tensor<256x16xf32>, tensor<128x16xf32>) -> tensor<4x64x128xf32>
// LOWERED: call @stage0_backward({{.*}}, %[[D]])
// LOWERED-LABEL: func.func @stage0_eval_step(
// LOWERED-NOT: ptrain.decompress
// LOWERED-LABEL: func.func @stage1_train_step(
// LOWERED: ptrain.send_start {{.*}} {ptrain.tag = 5 : i64} : tensor<4x64x128xf32>
// LOWERED: %[[E:.*]] = ptrain.state_read @pp1to0_residual : tensor<4x64x128xf32>
// LOWERED-NEXT: %[[Q0:.*]] = ptrain.state_read @pp1to0_warm_start_q : tensor<128x16xf32>
// LOWERED-NEXT: %[[CODES:.*]]:2, %[[NEW:.*]]:2 = ptrain.compress %{{.*}} state(%[[E]], %[[Q0]]) {codec = #ptrain.powersgd<rank = 16>, error_feedback}
// LOWERED-NEXT: ptrain.state_write %[[NEW]]#0 to @pp1to0_residual
// LOWERED-NEXT: ptrain.state_write %[[NEW]]#1 to @pp1to0_warm_start_q
// LOWERED-NEXT: ptrain.send_start %[[CODES]]#0 to @grid axis pp offset -1 {ptrain.tag = 7 : i64} : tensor<256x16xf32>
// LOWERED-NEXT: ptrain.send_start %[[CODES]]#1 to @grid axis pp offset -1 {ptrain.tag = 15 : i64} : tensor<128x16xf32>
// LOWERED-LABEL: func.func @stage1_eval_step(
// LOWERED-NOT: ptrain.compress

// lep=false: no residual state, no error feedback; the warm-start Q stays.
// NOLEP: ptrain.state @pp1to0_warm_start_q key "pp1->0/warm_start_q"
// NOLEP: ptrain.compress %{{.*}} state(%{{.*}}) {codec = #ptrain.powersgd<rank = 16>} :

// SC on both stages of dp = 2 x pp = 2 (sc-all): every dp bucket becomes per-parameter compressed
// all-reduces with a residual and a warm-start Q per gradient; a 1-D gradient gets rank 1 (the exact path).
// SC: dp_all_reduce = [true, true]
// SC-DAG: ptrain.state @sc_residual{{.*}} key "sc/{{.*}}/residual" kind codec_residual
// SC-DAG: ptrain.state @sc_warm_start_q{{.*}} key "sc/{{.*}}/warm_start_q" kind codec_warm_start
// SC-LABEL: func.func @stage0_optimizer_step(
// SC-NOT: ptrain.all_reduce_start {{.*}} axes [dp]
// SC: ptrain.compressed_all_reduce_start {{.*}} on @grid axes [dp] reduction = avg {codec = #ptrain.powersgd<rank = 4>, error_feedback}
// SC: ptrain.compressed_all_reduce_start {{.*}} {codec = #ptrain.powersgd<rank = 1>, error_feedback} : tensor<128xf32>
// SC-LABEL: func.func @stage1_optimizer_step(
// SC: ptrain.compressed_all_reduce_start
// NOSC: dp_all_reduce = [false, false]

// FE (dp = 2 x pp = 2, the tied wte.weight on both stages): its gradient leaves the dp buckets and is reduced
// once over [dp, pp] (sum), then divided by dp = 2; no [pp]-only sync remains.
// FE: fused_embedding = true
// FE-LABEL: func.func @stage0_optimizer_step(
// FE-NOT: axes [pp] reduction
// FE: ptrain.state_write %{{.*}} to @wte.weight.grad
// FE-NEXT: %[[G:.*]] = ptrain.state_read @wte.weight.grad : tensor<256x128xf32>
// FE-NEXT: %[[R:.*]] = ptrain.all_reduce_start %[[G]] on @grid axes [dp, pp] reduction = sum : tensor<256x128xf32>
// FE-NEXT: %[[S:.*]] = ptrain.wait %[[R]]
// FE-NEXT: %[[DP:.*]] = arith.constant dense<2.000000e+00> : tensor<f32>
// FE-NEXT: %[[A:.*]] = ptrain.binary div %[[S]], %[[DP]]
// FE-NEXT: ptrain.state_write %[[A]] to @wte.weight.grad
// FE-LABEL: func.func @stage1_optimizer_step(
// FE-NOT: axes [pp] reduction
// FE: ptrain.all_reduce_start %{{.*}} on @grid axes [dp, pp] reduction = sum : tensor<256x128xf32>
// NOFE: ptrain.compression = #ptrain.compression<
// NOFE-NOT: fused_embedding

// policy=none: nothing compressed, the record says so.
// NONE: ptrain.compression = #ptrain.compression<policy = "none", backward_sends = {{\[\[}}false, false, false, false], [false, false, false, false]],
// NONE-SAME: backward_error_feedback = false, forward_sends = {{\[\[}}false, false, false, false], [false, false, false, false]], dp_all_reduce = [false, false]>

// mcbench with TAH-Quant both ways, by spec: the forward sends at the defaults (64-element tiles: 512 tiles of the
// 4 x 64 x 128 activation, 410 at 4 bits), the backward ones at 32-element tiles, 2 / 4 bits, half high.
// MCTAH: ptrain.compress {{.*}} {codec = #ptrain.tahquant<>} : tensor<4x64x128xf32> -> (tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>)
// MCTAH: ptrain.compress {{.*}} {codec = #ptrain.tahquant<tile_size = 32, low_bits = 2, high_ratio = 5.000000e-01 : f64>} : tensor<4x64x128xf32> -> (tensor<12288xi8>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xi8>)

// mcbench: every forward send of stage 0 with 8-bit quantization, every backward send of stage 1 with top-k.
// MC: ptrain.compression = #ptrain.compression<policy = "mcbench",
// MC-SAME: backward_sends = {{\[\[}}false, false, false, false], [true, true, true, true]],
// MC-SAME: backward_codec = #ptrain.topk<ratio = 1.000000e-01 : f64>, backward_error_feedback = false,
// MC-SAME: forward_sends = {{\[\[}}true, true, true, true], [false, false, false, false]], forward_codec = #ptrain.quant<bits = 8>, dp_all_reduce

// Lowered with error feedback: one residual per link and direction; stage 0 compresses each forward output
// and sends packed bytes and scales (tags 2i and 2i + 2 M); stage 1 decodes them; the gradients come back as
// top-k values and indices.
// MCLOW-DAG: ptrain.state @pp1to0_residual key "pp1->0/residual" kind codec_residual : tensor<4x64x128xf32>
// MCLOW-DAG: ptrain.state @pp0to1_residual key "pp0->1/residual" kind codec_residual : tensor<4x64x128xf32>
// MCLOW-LABEL: func.func @stage0_train_step(
// MCLOW: %[[F:.*]] = call @forward_stage0(
// MCLOW-NEXT: %[[E:.*]] = ptrain.state_read @pp0to1_residual
// MCLOW-NEXT: %[[C:.*]]:2, %[[N:.*]] = ptrain.compress %[[F]] state(%[[E]]) {codec = #ptrain.quant<bits = 8>, error_feedback} : tensor<4x64x128xf32> state(tensor<4x64x128xf32>) -> (tensor<32768xi8>, tensor<128xf32>)
// MCLOW-NEXT: ptrain.state_write %[[N]] to @pp0to1_residual
// MCLOW-NEXT: ptrain.send_start %[[C]]#0 to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<32768xi8>
// MCLOW-NEXT: ptrain.send_start %[[C]]#1 to @grid axis pp offset 1 {ptrain.tag = 8 : i64} : tensor<128xf32>
// MCLOW: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<3277xf32>>
// MCLOW: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 9 : i64} : !ptrain.request<tensor<3277xi32>>
// MCLOW: ptrain.decompress {{.*}} {codec = #ptrain.topk<ratio = 1.000000e-01 : f64>} : (tensor<3277xf32>, tensor<3277xi32>) -> tensor<4x64x128xf32>
// MCLOW-LABEL: func.func @stage0_eval_step(
// MCLOW-NOT: ptrain.compress
// MCLOW-LABEL: func.func @stage1_train_step(
// MCLOW: ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<32768xi8>>
// MCLOW: ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 8 : i64} : !ptrain.request<tensor<128xf32>>
// MCLOW: ptrain.decompress {{.*}} {codec = #ptrain.quant<bits = 8>} : (tensor<32768xi8>, tensor<128xf32>) -> tensor<4x64x128xf32>
// MCLOW: ptrain.compress {{.*}} {codec = #ptrain.topk<ratio = 1.000000e-01 : f64>, error_feedback}
// MCLOW-LABEL: func.func @stage1_eval_step(
// MCLOW-NOT: ptrain.decompress

// Rand-k (given as a codec attribute) keeps a call counter on both sides of the link 1 -> 0, keyed by the link.
// MCRANDK: ptrain.state @pp1to0_counter key "pp1->0/counter" kind codec_seed : tensor<i64>
// MCRANDK-LABEL: func.func @stage0_train_step(
// MCRANDK: %[[C0:.*]] = ptrain.state_read @pp1to0_counter : tensor<i64>
// MCRANDK-NEXT: %{{.*}}, %[[C1:.*]] = ptrain.decompress %{{.*}} state(%[[C0]]) {codec = #ptrain.randk<k = 64, seed = 5>}
// MCRANDK-NEXT: ptrain.state_write %[[C1]] to @pp1to0_counter
// MCRANDK-LABEL: func.func @stage1_train_step(
// MCRANDK: ptrain.decompress %{{.*}} {codec = #ptrain.cast<bf16>} : (tensor<4x64x128xbf16>) -> tensor<4x64x128xf32>
// MCRANDK: ptrain.state_read @pp1to0_counter : tensor<i64>
// MCRANDK-NEXT: ptrain.compress %{{.*}} state(%{{.*}}) {codec = #ptrain.randk<k = 64, seed = 5>} : tensor<4x64x128xf32> state(tensor<i64>) -> (tensor<64xf32>) state(tensor<i64>)

// skip-stages=2 at pp = 4: the boundaries after stages 0 and 1 stay exact; only stage 2 -> 3 (forward) and
// 3 -> 2 (backward) are compressed.
// MCSKIP: backward_sends = {{\[\[}}false, false, false, false], [false, false, false, false], [false, false, false, false], [true, true, true, true]]
// MCSKIP-SAME: forward_sends = {{\[\[}}false, false, false, false], [false, false, false, false], [true, true, true, true], [false, false, false, false]]
// MCSKIP-SAME: skip_stages = 2

// Overrides on policy none (Inputs/compress-overrides.json): every backward send of stage 1 with PowerSGD
// rank 4, but FB3's exact; the link 0 -> 1 with rand-k, but F0 of stage 0 with bf16. Entries apply in order.
// OVERRIDE: backward_sends = {{\[\[}}false, false, false, false], [#ptrain.powersgd<rank = 4>, #ptrain.powersgd<rank = 4>, #ptrain.powersgd<rank = 4>, false]]
// OVERRIDE-SAME: forward_sends = {{\[\[}}#ptrain.cast<bf16>, #ptrain.randk<ratio = 5.000000e-01 : f64, seed = 3>, #ptrain.randk<ratio = 5.000000e-01 : f64, seed = 3>, #ptrain.randk<ratio = 5.000000e-01 : f64, seed = 3>], [false, false, false, false]]
// OVERRIDE-DAG: ptrain.state @pp1to0_warm_start_q key "pp1->0/warm_start_q" kind codec_warm_start : tensor<128x4xf32>
// OVERRIDE-DAG: ptrain.state @pp0to1_counter key "pp0->1/counter" kind codec_seed : tensor<i64>

// Parameter overrides at dp = 2 (Inputs/compress-overrides-dp.json): those gradients leave their buckets for
// compressed all-reduces with per-parameter residuals (and rand-k's counter); wte.weight stays exact.
// OVERRIDEDP: dp_codecs = {"blocks.0.mlp.fc.weight/grad" = #ptrain.quant<bits = 8>, "wpe.weight/grad" = #ptrain.randk<k = 100, seed = 1>, "wte.weight/grad" = false}
// OVERRIDEDP-DAG: ptrain.state @sc_residual{{.*}} key "sc/blocks.0.mlp.fc.weight/grad/residual" kind codec_residual : tensor<512x128xf32>
// OVERRIDEDP-DAG: ptrain.state @sc_counter key "sc/wpe.weight/grad/counter" kind codec_seed : tensor<i64>
// OVERRIDEDP-LABEL: func.func @stage0_optimizer_step(
// OVERRIDEDP-DAG: ptrain.compressed_all_reduce_start {{.*}} on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8>, error_feedback} : tensor<512x128xf32>
// OVERRIDEDP-DAG: ptrain.compressed_all_reduce_start {{.*}} on @grid axes [dp] reduction = avg {codec = #ptrain.randk<k = 100, seed = 1>, error_feedback} : tensor<64x128xf32>
