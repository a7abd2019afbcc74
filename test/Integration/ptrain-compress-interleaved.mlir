// --ptrain-compress under the interleaved schedule (virtual stages; docs/Compression.md, "Interleaved schedules").
// The bundled GPT (4 layers) at pp = 2 x V = 2 and llama_tiny_8l (8 layers) at pp = 4 x V = 2, one layer per
// virtual stage, 4 and 8 micro-batches.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2 virtual-stages=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule="schedule=interleaved" --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" -o %t.i2.mlir
// RUN: ptrain-opt %t.i2.mlir --ptrain-print-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=TABLE
// RUN: ptrain-opt %t.i2.mlir --ptrain-compress="policy=optimus-cc" | FileCheck %s --check-prefix=CB
// RUN: ptrain-opt %t.i2.mlir --ptrain-compress="policy=optimus-cc" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=LOWERED
// RUN: ptrain-opt %t.i2.mlir --ptrain-compress="lep=false" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=NOLEP --implicit-check-not=codec_residual
// RUN: ptrain-opt %t.i2.mlir --ptrain-compress="policy=mcbench fwd-codec=bf16 bwd-codec=topk:ratio=0.1 error-feedback=true" | FileCheck %s --check-prefix=MC
// RUN: ptrain-opt %t.i2.mlir --ptrain-compress="policy=mcbench fwd-codec=bf16 bwd-codec=topk:ratio=0.1 error-feedback=true" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=MCLOW
// RUN: ptrain-opt %t.i2.mlir --ptrain-compress="policy=mcbench fwd-codec=fp16 skip-stages=2" | FileCheck %s --check-prefix=MCSKIP
// RUN: ptrain-opt %t.i2.mlir --ptrain-compress="policy=none" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=NONE --implicit-check-not="ptrain.compress %" --implicit-check-not=ptrain.decompress --implicit-check-not="ptrain.state @pp"
// RUN: ptrain-opt %t.i2.mlir --ptrain-compress="policy=optimus-cc" --ptrain-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2 virtual-stages=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule="schedule=interleaved" --ptrain-critical-path="cluster=%S/../Transforms/Inputs/h200-slow-link.json" --ptrain-compress="policy=auto auto-backward-codecs=none auto-forward-codecs=none auto-quality-budget=inf" --ptrain-lower-to-runtime --ptrain-verify-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2 virtual-stages=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule="schedule=interleaved" --ptrain-critical-path="cluster=%S/../Transforms/Inputs/h200-slow-link.json" --ptrain-compress="policy=auto" --ptrain-lower-to-runtime --ptrain-verify-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTODEFAULT
// RUN: ptrain-translate --import-onnx %S/../Import/ONNX/opset18+/Inputs/llama_tiny_8l.onnx --signature auto -o %t.llama.mlir
// RUN: ptrain-opt %t.llama.mlir --ptrain-split-stages="pp=4 virtual-stages=2" --ptrain-build-training-step="micro-batches=8" --ptrain-schedule="schedule=interleaved" --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" -o %t.i4.mlir
// RUN: ptrain-opt %t.i4.mlir --ptrain-print-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=TABLE4
// RUN: ptrain-opt %t.i4.mlir --ptrain-compress="policy=optimus-cc" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=CB4
// RUN: ptrain-opt %t.i4.mlir --ptrain-compress="policy=optimus-cc lep=false" | FileCheck %s --check-prefix=NOLEP4
// RUN: ptrain-opt %t.i4.mlir --ptrain-compress="policy=mcbench fwd-codec=quant:bits=8 bwd-codec=powersgd:rank=4" --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=MC4
// RUN: ptrain-opt %t.i4.mlir --ptrain-compress="policy=none" | FileCheck %s --check-prefix=NONE4

// The table: rank s runs chunk k = virtual stage 2 k + s; F<i>.1 / B<i>.1 are chunk 1's steps.
// TABLE: stage 0: F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3 O
// TABLE: stage 1: F0 F1 FB0.1 FB1.1 F2 B0 F3 B1 FB2.1 FB3.1 B2 B3 O

// CB's cool-down rule per rank's row: the backward steps from the row's last forward on. Rank 0 (last forward
// F3.1): B1, B2, B3 are virtual stage 0's (no send), B2.1 and B3.1 send on 2 -> 1; rank 1 (last forward FB3.1):
// FB3.1 on 3 -> 2, B2 and B3 on 1 -> 0. A row holds chunk 0's micro-batches 0..3, then chunk 1's.
// CB: ptrain.compression = #ptrain.compression<policy = "optimus-cc",
// CB-SAME: backward_sends = {{\[\[}}false, false, false, false, false, false, true, true], [false, false, true, true, false, false, false, true]],
// CB-SAME: backward_codec = #ptrain.powersgd<rank = 16>,
// CB-SAME: forward_sends = {{\[\[}}false, false, false, false, false, false, false, false], [false, false, false, false, false, false, false, false]],

// Lowered: one residual and warm start per chunk boundary and direction, "pp<s>-><t>/c<k>-><k'>/...". Rank 0's
// chunk 1 compresses B2.1 and B3.1 to rank 1's chunk 0 (tags 2 (2 i + 0) + 1 = 9, 13; Q at + 2 M V = 16), and
// decompresses rank 1's FB3.1 (tag 2 (3 * 2 + 1) + 1 = 15, Q 31). Evaluation steps are uncompressed.
// LOWERED-DAG: ptrain.state @pp1to0_c0to0_residual key "pp1->0/c0->0/residual" kind codec_residual : tensor<4x64x128xf32>
// LOWERED-DAG: ptrain.state @pp1to0_c0to0_warm_start_q key "pp1->0/c0->0/warm_start_q" kind codec_warm_start : tensor<128x16xf32>
// LOWERED-DAG: ptrain.state @pp1to0_c1to1_residual key "pp1->0/c1->1/residual" kind codec_residual : tensor<4x64x128xf32>
// LOWERED-DAG: ptrain.state @pp1to0_c1to1_warm_start_q key "pp1->0/c1->1/warm_start_q" kind codec_warm_start : tensor<128x16xf32>
// LOWERED-DAG: ptrain.state @pp0to1_c1to0_residual key "pp0->1/c1->0/residual" kind codec_residual : tensor<4x64x128xf32>
// LOWERED-DAG: ptrain.state @pp0to1_c1to0_warm_start_q key "pp0->1/c1->0/warm_start_q" kind codec_warm_start : tensor<128x16xf32>
// LOWERED-LABEL: func.func @stage0_train_step(
// LOWERED: %[[E:.*]] = ptrain.state_read @pp0to1_c1to0_residual : tensor<4x64x128xf32>
// LOWERED-NEXT: %[[Q0:.*]] = ptrain.state_read @pp0to1_c1to0_warm_start_q : tensor<128x16xf32>
// LOWERED-NEXT: %[[CODES:.*]]:2, %[[NEW:.*]]:2 = ptrain.compress %{{.*}} state(%[[E]], %[[Q0]]) {codec = #ptrain.powersgd<rank = 16>, error_feedback}
// LOWERED-NEXT: ptrain.state_write %[[NEW]]#0 to @pp0to1_c1to0_residual
// LOWERED-NEXT: ptrain.state_write %[[NEW]]#1 to @pp0to1_c1to0_warm_start_q
// LOWERED-NEXT: ptrain.send_start %[[CODES]]#0 to @grid axis pp offset 1 {ptrain.tag = 9 : i64} : tensor<256x16xf32>
// LOWERED-NEXT: ptrain.send_start %[[CODES]]#1 to @grid axis pp offset 1 {ptrain.tag = 25 : i64} : tensor<128x16xf32>
// LOWERED: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 15 : i64} : !ptrain.request<tensor<256x16xf32>>
// LOWERED: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 31 : i64} : !ptrain.request<tensor<128x16xf32>>
// LOWERED: ptrain.decompress {{.*}} {codec = #ptrain.powersgd<rank = 16>}
// LOWERED: ptrain.send_start {{.*}} {ptrain.tag = 13 : i64} : tensor<256x16xf32>
// LOWERED-LABEL: func.func @stage0_eval_step(
// LOWERED-NOT: ptrain.decompress
// LOWERED-LABEL: func.func @stage1_train_step(
// LOWERED: ptrain.state_read @pp1to0_c1to1_residual
// LOWERED: ptrain.state_read @pp1to0_c0to0_residual
// LOWERED-LABEL: func.func @stage1_eval_step(

// CB without LEP: the same sends, warm starts only (no residual state anywhere).
// NOLEP-DAG: ptrain.state @pp1to0_c0to0_warm_start_q key "pp1->0/c0->0/warm_start_q" kind codec_warm_start
// NOLEP-DAG: ptrain.state @pp1to0_c1to1_warm_start_q key "pp1->0/c1->1/warm_start_q" kind codec_warm_start
// NOLEP-DAG: ptrain.state @pp0to1_c1to0_warm_start_q key "pp0->1/c1->0/warm_start_q" kind codec_warm_start
// NOLEP: ptrain.compress {{.*}} {codec = #ptrain.powersgd<rank = 16>} :

// mcbench: every virtual boundary; forward sends from virtual stages 0, 1, 2 (rank 1's chunk 1 is the last),
// backward sends from 1, 2, 3 (rank 0's chunk 0 is the first). With error feedback, one residual per
// boundary and direction: at pp = 2 the pair 0 -> 1 carries rank 0's activations of both chunks (c0->0, c1->1)
// and its chunk-1 gradient (c1->0).
// MC: backward_sends = {{\[\[}}false, false, false, false, true, true, true, true], [true, true, true, true, true, true, true, true]]
// MC-SAME: backward_codec = #ptrain.topk<ratio = 1.000000e-01 : f64>,
// MC-SAME: forward_sends = {{\[\[}}true, true, true, true, true, true, true, true], [true, true, true, true, false, false, false, false]]
// MC-SAME: forward_codec = #ptrain.cast<bf16>, forward_error_feedback = true,
// MCLOW-DAG: key "pp0->1/c0->0/residual"
// MCLOW-DAG: key "pp0->1/c1->1/residual"
// MCLOW-DAG: key "pp0->1/c1->0/residual"
// MCLOW-DAG: key "pp1->0/c0->1/residual"
// MCLOW-DAG: key "pp1->0/c0->0/residual"
// MCLOW-DAG: key "pp1->0/c1->1/residual"
// skip-stages counts virtual boundaries: with 2 skipped only virtual stage 2 (rank 0's chunk 1) sends fp16.
// MCSKIP: forward_sends = {{\[\[}}false, false, false, false, true, true, true, true], [false, false, false, false, false, false, false, false]]
// MCSKIP-SAME: skip_stages = 2

// policy=none: rows of 2 x 4 entries, nothing compressed, no codec state.
// NONE: backward_sends = {{\[\[}}false, false, false, false, false, false, false, false], [false, false, false, false, false, false, false, false]], backward_error_feedback = false
// NONE: func.func @stage0_train_step(

// The report prices each compressed send on its virtual stage: 5 compressed backward sends.
// REPORT: compression (policy optimus-cc): iteration time {{[0-9.]+}} ms uncompressed, {{[0-9.]+}} ms compressed
// REPORT: gradients 1->0                    1.00 MiB        712.00 KiB
// REPORT: gradients 0->1                  512.00 KiB        304.00 KiB
// REPORT: compressed edges (5)
// REPORT-NEXT: send B2.1 0->1: #ptrain.powersgd<rank = 16>, 128.00 KiB -> 24.00 KiB
// REPORT-NEXT: send B3.1 0->1: #ptrain.powersgd<rank = 16>
// REPORT-NEXT: send B3.1 1->0: #ptrain.powersgd<rank = 16>
// REPORT-NEXT: send B2 1->0: #ptrain.powersgd<rank = 16>
// REPORT-NEXT: send B3 1->0: #ptrain.powersgd<rank = 16>

// policy=auto times the interleaved plan per virtual link: without a quality budget, on the slow link CB on
// every backward send is the best seed, and the search lowers every send to rank 4; the plan lowers and
// verifies.
// AUTO: seeds none {{[0-9.]+}} ms, optimus-cc {{[0-9.]+}} ms quality {{[0-9.]+}}%, optimus-cc cb-sends=critical {{[0-9.]+}} ms quality {{[0-9.]+}}%, optimus-cc cb-sends=all {{[0-9.]+}} ms quality {{[0-9.]+}}%, mcbench {{.*}} (not expressible with the candidates); starting from optimus-cc cb-sends=all
// AUTO: move 1: every backward send -> #ptrain.powersgd<rank = 4> (clamped per link)
// AUTO: 1 moves, modelled iteration {{[0-9.]+}} ms uncompressed, {{[0-9.]+}} ms with auto
// With the default candidates the mcbench seed (8-bit forward, top-k 10% backward on every virtual link) is
// the fastest but ruled out (top-k on gradients without error feedback: QualityModel.h), and optimus-cc's
// PowerSGD seeds are predicted over the 2% budget; auto starts from none and the mixed plan lowers and
// verifies.
// AUTODEFAULT: mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1 {{[0-9.]+}} ms quality ruled out by the literature (QualityModel.h) (over the budget); starting from none
// AUTODEFAULT: predicted quality cost {{[0-9.]+}}% (budget 2.000%)

// llama_tiny_8l at pp = 4 x V = 2, 8 micro-batches: rank s runs virtual stages s and s + 4.
// TABLE4: stage 0: F0 F1 F2 F3 F0.1 F1.1 F2.1 F3.1 F4 F5 F6 B0.1 F7 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0 F7.1 B1 B2 B3 B4.1 B5.1 B6.1 B7.1 B4 B5 B6 B7 O
// TABLE4: stage 1: F0 F1 F2 F3 F0.1 F1.1 F2.1 F3.1 F4 B0.1 F5 B1.1 F6 B2.1 F7 B3.1 F4.1 B0 F5.1 B1 F6.1 B2 F7.1 B3 B4.1 B5.1 B6.1 B7.1 B4 B5 B6 B7 O
// TABLE4: stage 2: F0 F1 F2 F3 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4 B2.1 F5 B3.1 F6 B0 F7 B1 F4.1 B2 F5.1 B3 F6.1 B4.1 F7.1 B5.1 B6.1 B7.1 B4 B5 B6 B7 O
// TABLE4: stage 3: F0 F1 F2 F3 FB0.1 FB1.1 FB2.1 FB3.1 F4 B0 F5 B1 F6 B2 F7 B3 FB4.1 FB5.1 FB6.1 FB7.1 B4 B5 B6 B7 O
// The rule per row: rank 0 after F7.1: B4.1 .. B7.1 (its chunk 0 sends nothing); rank 1 after F7.1: B3, B4 .. B7
// and B4.1 .. B7.1; rank 2 after F7.1: B4 .. B7 and B5.1 .. B7.1; rank 3 after FB7.1: FB7.1 and B4 .. B7.
// The lowered plan has a residual and warm start on each of the 7 virtual links, the wrap-around 4 -> 3
// (rank 0's chunk 1 to rank 3's chunk 0) included.
// CB4: backward_sends = {{\[\[}}false, false, false, false, false, false, false, false, false, false, false, false, true, true, true, true],
// CB4-SAME: [false, false, false, true, true, true, true, true, false, false, false, false, true, true, true, true],
// CB4-SAME: [false, false, false, false, true, true, true, true, false, false, false, false, false, true, true, true],
// CB4-SAME: [false, false, false, false, true, true, true, true, false, false, false, false, false, false, false, true]]
// CB4-DAG: key "pp3->2/c0->0/residual"
// CB4-DAG: key "pp3->2/c1->1/residual"
// CB4-DAG: key "pp2->1/c0->0/residual"
// CB4-DAG: key "pp2->1/c1->1/residual"
// CB4-DAG: key "pp1->0/c0->0/residual"
// CB4-DAG: key "pp1->0/c1->1/residual"
// CB4-DAG: key "pp0->3/c1->0/residual" kind codec_residual : tensor<2x16x32xf32>
// CB4-DAG: key "pp0->3/c1->0/warm_start_q" kind codec_warm_start : tensor<32x16xf32>
// NOLEP4: backward_sends = {{\[\[}}false, false, false, false, false, false, false, false, false, false, false, false, true, true, true, true],
// NOLEP4-SAME: backward_error_feedback = false

// mcbench at pp = 4 x V = 2: every forward send but the last virtual stage's, every backward send but virtual stage 0's.
// MC4: backward_sends = {{\[\[}}false, false, false, false, false, false, false, false, true, true, true, true, true, true, true, true], [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true], [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true], [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true]]
// MC4-SAME: forward_sends = {{\[\[}}true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true], [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true], [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true], [true, true, true, true, true, true, true, true, false, false, false, false, false, false, false, false]]
// 8-bit quantization is stateless; PowerSGD keeps a warm start on each of the 7 backward virtual links.
// MC4-DAG: key "pp0->3/c1->0/warm_start_q" kind codec_warm_start : tensor<32x4xf32>
// MC4-DAG: key "pp3->2/c1->1/warm_start_q" kind codec_warm_start : tensor<32x4xf32>
// NONE4: backward_sends = {{\[\[}}false, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false], [false, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false], [false, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false], [false, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false]]
