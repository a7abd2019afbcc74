// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime | FileCheck %s
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime="eval=false" | FileCheck %s --check-prefix=NOEVAL
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2 virtual-stages=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule="schedule=interleaved" --ptrain-lower-to-runtime="eval=false" | FileCheck %s --check-prefix=IL

// The bundled GPT, pp = 2, 4 micro-batches of [4, 64] tokens, 1F1B. Stage 0's row is F0 F1 B0 F2 B1 F3 B2 B3 O:
// each forward sends its output to stage 1 (tag 2i); each backward receives the gradient (tag 2i+1), then waits
// on its forward's send (the buffer is free again) before the recomputing backward; the optimizer comes last and
// the stage contributes 0 to the loss all-reduce.
// CHECK-LABEL: func.func @stage0_train_step(
// CHECK-SAME: %[[TOK:.*]]: tensor<16x64xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>}
// CHECK: %[[T0:.*]] = ptrain.slice %[[TOK]] {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 64>}
// CHECK-NEXT: %[[Y0:.*]] = call @forward_stage0(%[[T0]])
// CHECK-NEXT: %[[S0:.*]] = ptrain.send_start %[[Y0]] to @grid axis pp offset 1 {ptrain.tag = 0 : i64}
// CHECK: %[[T1:.*]] = ptrain.slice %[[TOK]] {offsets = array<i64: 4, 0>
// CHECK-NEXT: %[[Y1:.*]] = call @forward_stage0(%[[T1]])
// CHECK-NEXT: %[[S1:.*]] = ptrain.send_start %[[Y1]] to @grid axis pp offset 1 {ptrain.tag = 2 : i64}
// CHECK-NEXT: %[[R0:.*]] = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64}
// CHECK-NEXT: %[[G0:.*]] = ptrain.wait %[[R0]]
// CHECK-NEXT: ptrain.wait %[[S0]] : !ptrain.request
// CHECK-NEXT: call @stage0_backward(%[[T0]], %[[G0]])
// CHECK: call @forward_stage0
// CHECK: ptrain.send_start {{.*}} {ptrain.tag = 4 : i64}
// CHECK: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 3 : i64}
// CHECK: ptrain.wait %[[S1]] : !ptrain.request
// CHECK-NEXT: call @stage0_backward(%[[T1]],
// CHECK: call @forward_stage0
// CHECK: call @stage0_backward
// CHECK: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 7 : i64}
// CHECK: call @stage0_backward
// CHECK-NEXT: call @stage0_optimizer_step() : () -> ()
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[AR:.*]] = ptrain.all_reduce_start %[[ZERO]] on @grid axes [pp] reduction = sum
// CHECK-NEXT: %[[LOSS:.*]] = ptrain.wait %[[AR]]
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>

// Stage 0's evaluation: the forwards in order, every send waited at the end.
// CHECK-LABEL: func.func @stage0_eval_step(
// CHECK-SAME: attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<0>}
// CHECK-COUNT-4: call @forward_stage0
// CHECK-NOT: call @stage0_backward
// CHECK-COUNT-4: ptrain.wait %{{.*}} : !ptrain.request
// CHECK-NOT: call @stage0_optimizer_step
// CHECK: return

// Stage 1 (FB0 FB1 FB2 FB3 O): receive, fused forward-backward on the micro-batch's tokens, sum the loss, send
// the input gradient back; all sends waited before the optimizer; the mean loss all-reduced over pp.
// CHECK-LABEL: func.func @stage1_train_step(
// CHECK-SAME: %[[TOK1:.*]]: tensor<16x64xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>}
// CHECK: %[[RH0:.*]] = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4x64x128xf32>>
// CHECK-NEXT: %[[H0:.*]] = ptrain.wait %[[RH0]]
// CHECK-NEXT: %[[L0T:.*]] = ptrain.slice %[[TOK1]] {offsets = array<i64: 0, 0>
// CHECK-NEXT: %[[FB0:.*]]:2 = call @stage1_forward_backward(%[[H0]], %[[L0T]])
// CHECK-NEXT: %[[SB0:.*]] = ptrain.send_start %[[FB0]]#1 to @grid axis pp offset -1 {ptrain.tag = 1 : i64}
// CHECK: call @stage1_forward_backward
// CHECK: ptrain.binary add %[[FB0]]#0,
// CHECK: ptrain.send_start {{.*}} offset -1 {ptrain.tag = 7 : i64}
// CHECK-NEXT: ptrain.wait %[[SB0]] : !ptrain.request
// CHECK-COUNT-3: ptrain.wait %{{.*}} : !ptrain.request
// CHECK-NEXT: call @stage1_optimizer_step() : () -> ()
// CHECK-NEXT: %[[M:.*]] = arith.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[MEAN:.*]] = ptrain.binary div %{{.*}}, %[[M]]
// CHECK-NEXT: ptrain.all_reduce_start %[[MEAN]] on @grid axes [pp] reduction = sum

// Stage 1's evaluation: forward and the next-token loss per micro-batch, no backward.
// CHECK-LABEL: func.func @stage1_eval_step(
// CHECK: call @forward_stage1
// CHECK: ptrain.cross_entropy
// CHECK-NOT: call @stage1_forward_backward
// CHECK-NOT: call @stage1_optimizer_step
// CHECK: return

// NOEVAL-LABEL: func.func @stage0_train_step(
// NOEVAL-NOT: _eval_step

// Interleaved 1F1B (pp = 2, 2 chunks): stage 0 runs virtual stages 0 and 2, so the input of virtual stage 2
// comes from stage 1 (offset +1, wrapping around). The transfer between virtual stages c and c + 1 of
// micro-batch i has tag 2 (i v + c / pp) (+ 1 for the gradient), unique per (source, destination);
// stage 1's last chunk (virtual stage 3) runs the fused forward-backward and sends its input gradient back.
// IL-LABEL: func.func @stage0_train_step
// IL: call @forward_stage0
// IL: ptrain.send_start {{.*}} to @grid axis pp offset 1 {ptrain.tag = 0 : i64}
// IL: call @forward_stage0
// IL: ptrain.send_start {{.*}} to @grid axis pp offset 1 {ptrain.tag = 4 : i64}
// IL: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 0 : i64}
// IL: call @forward_stage2
// IL: ptrain.send_start {{.*}} to @grid axis pp offset 1 {ptrain.tag = 2 : i64}
// IL: call @stage2_backward
// IL: call @stage0_backward
// IL: call @stage0_optimizer_step
// IL-LABEL: func.func @stage1_train_step
// IL: ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64}
// IL: call @forward_stage1
// IL: ptrain.send_start {{.*}} to @grid axis pp offset -1 {ptrain.tag = 0 : i64}
// IL: call @stage3_forward_backward
// IL: call @stage1_backward
// IL: call @stage1_optimizer_step
