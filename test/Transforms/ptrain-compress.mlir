// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" -o %t.pp2.mlir
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="policy=optimus-cc" | FileCheck %s --check-prefix=PP2
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="cb-sends=all" | FileCheck %s --check-prefix=ALL
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="cb=false" | FileCheck %s --check-prefix=NOCB
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="cb-sends=critical" | FileCheck %s --check-prefix=CRIT
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=LOWERED
// RUN: ptrain-opt %t.pp2.mlir --ptrain-compress="lep=false" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=NOLEP --implicit-check-not="cb/pp1->0/residual"
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=8" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress | FileCheck %s --check-prefix=PP4
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2 bucket-bytes=100000" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="sc-all=true sc-rank=4" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=SC
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2 bucket-bytes=100000" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="sc=false" | FileCheck %s --check-prefix=NOSC

// pp = 2, 4 micro-batches, 1F1B: stage 0 has 1 warm-up forward, so its cool-down is its last backward B3;
// the send that feeds it, FB3 of stage 1 on the link 1 -> 0, is compressed with PowerSGD rank 16.
// PP2: ptrain.compression = {backward_sends = {{\[\[}}false, false, false, false], [false, false, false, true]],
// PP2-SAME: cb_codec = #ptrain.powersgd<rank = 16>, dp_all_reduce = [false, false], lep = true, policy = "optimus-cc", sc_error_feedback = true, sc_rank = 128 : i64}
// ALL: backward_sends = {{\[\[}}false, false, false, false], [true, true, true, true]]
// NOCB: backward_sends = {{\[\[}}false, false, false, false], [false, false, false, false]]
// NOCB-NOT: cb_codec
// CRIT: backward_sends = {{\[\[}}false, false, false, false], [{{(true|false), (true|false), (true|false), (true|false)}}]]

// pp = 4, 8 micro-batches: on the link s -> s-1 the last 4 - s micro-batches.
// PP4: backward_sends = {{\[\[}}false, false, false, false, false, false, false, false],
// PP4-SAME: [false, false, false, false, false, true, true, true],
// PP4-SAME: [false, false, false, false, false, false, true, true],
// PP4-SAME: [false, false, false, false, false, false, false, true]]

// Lowered: the link's residual and warm-start Q are keyed states; stage 1 compresses the gradient of FB3
// with error feedback, writes the new states and sends P and Q (tags 7 and 7 + 2 M = 15); stage 0 receives
// both and decompresses. The other micro-batches travel uncompressed.
// LOWERED-DAG: ptrain.state @cb_pp1_residual key "cb/pp1->0/residual" kind codec_residual : tensor<4x64x128xf32>
// LOWERED-DAG: ptrain.state @cb_pp1_warm_start_q key "cb/pp1->0/warm_start_q" kind codec_warm_start : tensor<128x16xf32>
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
// LOWERED: %[[E:.*]] = ptrain.state_read @cb_pp1_residual : tensor<4x64x128xf32>
// LOWERED-NEXT: %[[Q0:.*]] = ptrain.state_read @cb_pp1_warm_start_q : tensor<128x16xf32>
// LOWERED-NEXT: %[[CODES:.*]]:2, %[[NEW:.*]]:2 = ptrain.compress %{{.*}} state(%[[E]], %[[Q0]]) {codec = #ptrain.powersgd<rank = 16>, error_feedback}
// LOWERED-NEXT: ptrain.state_write %[[NEW]]#0 to @cb_pp1_residual
// LOWERED-NEXT: ptrain.state_write %[[NEW]]#1 to @cb_pp1_warm_start_q
// LOWERED-NEXT: ptrain.send_start %[[CODES]]#0 to @grid axis pp offset -1 {ptrain.tag = 7 : i64} : tensor<256x16xf32>
// LOWERED-NEXT: ptrain.send_start %[[CODES]]#1 to @grid axis pp offset -1 {ptrain.tag = 15 : i64} : tensor<128x16xf32>
// LOWERED-LABEL: func.func @stage1_eval_step(
// LOWERED-NOT: ptrain.compress

// lep=false: no residual state, no error feedback; the warm-start Q stays.
// NOLEP: ptrain.state @cb_pp1_warm_start_q key "cb/pp1->0/warm_start_q"
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
