// Tied parameters held by stages other than the first and the last, in two overlapping groups: @wa is read
// by layers 0-2 (stages {0, 1, 2} at pp = 4), @wb by layers 1-3 (stages {1, 2, 3}). The training step sums
// each among its holders only (point-to-point along pp, tags 16384 + i; Passes.td,
// --ptrain-build-training-step), not over the whole pp axis.
// RUN: split-file %s %t
// RUN: ptrain-opt %t/model.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=2" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan -o %t/pp4.mlir
// RUN: FileCheck %s --input-file=%t/pp4.mlir --check-prefix=STEP
// RUN: ptrain-opt %t/model.mlir --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=2" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime -o %t/pp1.mlir
// RUN: ptrain-interpret %t/pp1.mlir --multi-rank --random-tokens 1 --steps 2 --weights %S/Inputs/tied-groups.onnx > %t/run.txt
// RUN: ptrain-interpret %t/pp4.mlir --multi-rank --random-tokens 1 --steps 2 --weights %S/Inputs/tied-groups.onnx --print-states >> %t/run.txt
// RUN: FileCheck %s --input-file=%t/run.txt --check-prefix=LOSS
// Two tied-weight groups posted in different orders on stages 1 and 2 (hand-written, issue 6's small case):
// accepted when every transfer is posted before the first wait, and the sums agree on every holder;
// rejected (a deadlock) when each stage waits on its first group before posting the second.
// RUN: ptrain-opt %t/orders.mlir --ptrain-verify-plan -o /dev/null
// RUN: ptrain-interpret %t/orders.mlir --multi-rank --random-tokens 1 --weights %S/Inputs/tied-groups.onnx --print-states | FileCheck %s --check-prefix=ORDERS
// RUN: not ptrain-opt %t/blocking.mlir --ptrain-verify-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=BLOCKING

// Stage 0 holds @wa only: it exchanges with stages 1 and 2 (offsets 1, 2) and never joins a pp all-reduce;
// stage 3 holds @wb only (offsets -2, -1).
// STEP-LABEL: func.func @stage0_optimizer_step()
// STEP-NOT: axes [pp]
// STEP: ptrain.send_start {{.*}} axis pp offset 1 {ptrain.tag = 1638{{[45]}} : i64}
// STEP: ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1638{{[45]}} : i64}
// STEP: ptrain.send_start {{.*}} axis pp offset 2 {ptrain.tag = 1638{{[45]}} : i64}
// STEP: ptrain.recv_start from @grid axis pp offset 2
// STEP-NOT: axes [pp]
// STEP: ptrain.adamw
// STEP-LABEL: func.func @stage1_optimizer_step()
// STEP-COUNT-4: ptrain.send_start
// STEP-NOT: axes [pp]
// STEP-LABEL: func.func @stage3_optimizer_step()
// STEP-NOT: axes [pp]
// STEP: ptrain.send_start {{.*}} axis pp offset -2
// STEP: ptrain.send_start {{.*}} axis pp offset -1
// STEP-NOT: axes [pp]
// STEP: ptrain.adamw

// The pp = 4 step gives the one-stage losses (2 steps), and the holders' copies stay bit-equal.
// LOSS: step 1: loss [[L1:[0-9.]+]] on all 1 rank(s)
// LOSS: step 2: loss [[L2:[0-9.]+]] on all 1 rank(s)
// LOSS: step 1: loss [[L1]] on all 4 rank(s)
// LOSS: step 2: loss [[L2]] on all 4 rank(s)
// LOSS: rank 0 'wa' tensor<4x4xf32> max|x| = {{.*}} fnv1a = [[WA:[0-9a-f]+]]
// LOSS: rank 1 'wa' tensor<4x4xf32> max|x| = {{.*}} fnv1a = [[WA]]
// LOSS: rank 1 'wb' tensor<4x4xf32> max|x| = {{.*}} fnv1a = [[WB:[0-9a-f]+]]
// LOSS: rank 2 'wa' tensor<4x4xf32> max|x| = {{.*}} fnv1a = [[WA]]
// LOSS: rank 2 'wb' tensor<4x4xf32> max|x| = {{.*}} fnv1a = [[WB]]
// LOSS: rank 3 'wb' tensor<4x4xf32> max|x| = {{.*}} fnv1a = [[WB]]

// Stage s contributes (s + 1) times the parameter: sum_a = (1 + 2 + 3) wa, sum_b = (2 + 3 + 4) wb, the same
// bits on every holder (test/Transforms/Inputs/make_tied_groups.py's values: max 4.568856, 8.481081).
// ORDERS: step 1: loss {{.*}} on all 4 rank(s)
// ORDERS: rank 0 'sum_a' tensor<4x4xf32> max|x| = 4.568856e+00 fnv1a = [[SA:[0-9a-f]+]]
// ORDERS: rank 1 'sum_a' tensor<4x4xf32> max|x| = 4.568856e+00 fnv1a = [[SA]]
// ORDERS: rank 1 'sum_b' tensor<4x4xf32> max|x| = 8.481081e+00 fnv1a = [[SB:[0-9a-f]+]]
// ORDERS: rank 2 'sum_a' tensor<4x4xf32> max|x| = 4.568856e+00 fnv1a = [[SA]]
// ORDERS: rank 2 'sum_b' tensor<4x4xf32> max|x| = 8.481081e+00 fnv1a = [[SB]]
// ORDERS: rank 3 'sum_b' tensor<4x4xf32> max|x| = 8.481081e+00 fnv1a = [[SB]]

// BLOCKING: error: --ptrain-verify-plan: train step: deadlock: no rank can progress
// BLOCKING: rank 1 (pp=1) waits at 'ptrain.wait' {{.*}} for 'ptrain.recv_start' (tag 16384) {{.*}}, a receive from rank 2 (pp=2) that has not posted the matching send
// BLOCKING: rank 2 (pp=2) waits at 'ptrain.wait' {{.*}} for 'ptrain.recv_start' (tag 16385) {{.*}}, a receive from rank 1 (pp=1) that has not posted the matching send

//--- model.mlir
ptrain.state @wte key "wte" kind parameter : tensor<8x4xf32>
ptrain.state @w0 key "w0" kind parameter : tensor<4x4xf32>
ptrain.state @wa key "wa" kind parameter : tensor<4x4xf32>
ptrain.state @wb key "wb" kind parameter : tensor<4x4xf32>
ptrain.state @head key "head" kind parameter : tensor<4x8xf32>
func.func @forward(%tokens: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %wte = ptrain.state_read @wte : tensor<8x4xf32>
  %h0 = ptrain.embedding %wte, %tokens : tensor<8x4xf32>, tensor<2x4xi64>
  %wa = ptrain.state_read @wa : tensor<4x4xf32>
  %wb = ptrain.state_read @wb : tensor<4x4xf32>
  %w0 = ptrain.state_read @w0 : tensor<4x4xf32>
  %s0 = ptrain.matmul %h0, %wa : tensor<2x4x4xf32>, tensor<4x4xf32>
  %p0 = ptrain.softmax %s0 {axis = -1 : i64} : tensor<2x4x4xf32>
  %h1 = ptrain.binary add %h0, %p0 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %s1a = ptrain.matmul %h1, %wa : tensor<2x4x4xf32>, tensor<4x4xf32>
  %s1 = ptrain.matmul %s1a, %wb : tensor<2x4x4xf32>, tensor<4x4xf32>
  %p1 = ptrain.softmax %s1 {axis = -1 : i64} : tensor<2x4x4xf32>
  %h2 = ptrain.binary add %h1, %p1 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %s2a = ptrain.matmul %h2, %wb : tensor<2x4x4xf32>, tensor<4x4xf32>
  %s2 = ptrain.matmul %s2a, %wa : tensor<2x4x4xf32>, tensor<4x4xf32>
  %p2 = ptrain.softmax %s2 {axis = -1 : i64} : tensor<2x4x4xf32>
  %h3 = ptrain.binary add %h2, %p2 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %s3a = ptrain.matmul %h3, %wb : tensor<2x4x4xf32>, tensor<4x4xf32>
  %s3 = ptrain.matmul %s3a, %w0 : tensor<2x4x4xf32>, tensor<4x4xf32>
  %p3 = ptrain.softmax %s3 {axis = -1 : i64} : tensor<2x4x4xf32>
  %h4 = ptrain.binary add %h3, %p3 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %head = ptrain.state_read @head : tensor<4x8xf32>
  %logits = ptrain.matmul %h4, %head : tensor<2x4x4xf32>, tensor<4x8xf32>
  return %logits : tensor<2x4x8xf32>
}

//--- orders.mlir
// Stage 1 posts @wa's group, then @wb's; stage 2 @wb's, then @wa's; all waits after all posts.
module {
  ptrain.grid @grid(pp = 4)
  ptrain.state @wte key "wte" kind parameter : tensor<8x4xf32>
  ptrain.state @wa key "wa" kind parameter : tensor<4x4xf32>
  ptrain.state @wb key "wb" kind parameter : tensor<4x4xf32>
  ptrain.state @sum_a key "sum_a" kind gradient : tensor<4x4xf32>
  ptrain.state @sum_b key "sum_b" kind gradient : tensor<4x4xf32>
  func.func @stage0_train_step(%t: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.entry = "train"} {
    %wte = ptrain.state_read @wte : tensor<8x4xf32>
    %e = ptrain.embedding %wte, %t : tensor<8x4xf32>, tensor<2x4xi64>
    %c = arith.constant dense<1.0> : tensor<4x4xf32>
    %wa = ptrain.state_read @wa : tensor<4x4xf32>
    %la = ptrain.binary mul %wa, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sa1 = ptrain.send_start %la to @grid axis pp offset 1 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra1 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %sa2 = ptrain.send_start %la to @grid axis pp offset 2 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra2 = ptrain.recv_start from @grid axis pp offset 2 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %xa1 = ptrain.wait %ra1 : !ptrain.request<tensor<4x4xf32>>
    %xa2 = ptrain.wait %ra2 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sa1 : !ptrain.request
    ptrain.wait %sa2 : !ptrain.request
    %suma0 = ptrain.binary add %la, %xa1 : tensor<4x4xf32>, tensor<4x4xf32>
    %suma1 = ptrain.binary add %suma0, %xa2 : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %suma1 to @sum_a : tensor<4x4xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @stage1_train_step(%t: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.entry = "train"} {
    %c = arith.constant dense<2.0> : tensor<4x4xf32>
    %wa = ptrain.state_read @wa : tensor<4x4xf32>
    %la = ptrain.binary mul %wa, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sa0 = ptrain.send_start %la to @grid axis pp offset -1 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra0 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %sa2 = ptrain.send_start %la to @grid axis pp offset 1 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra2 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %wb = ptrain.state_read @wb : tensor<4x4xf32>
    %lb = ptrain.binary mul %wb, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sb2 = ptrain.send_start %lb to @grid axis pp offset 1 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb2 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %sb3 = ptrain.send_start %lb to @grid axis pp offset 2 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb3 = ptrain.recv_start from @grid axis pp offset 2 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %xa0 = ptrain.wait %ra0 : !ptrain.request<tensor<4x4xf32>>
    %xa2 = ptrain.wait %ra2 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sa0 : !ptrain.request
    ptrain.wait %sa2 : !ptrain.request
    %suma0 = ptrain.binary add %xa0, %la : tensor<4x4xf32>, tensor<4x4xf32>
    %suma1 = ptrain.binary add %suma0, %xa2 : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %suma1 to @sum_a : tensor<4x4xf32>
    %xb2 = ptrain.wait %rb2 : !ptrain.request<tensor<4x4xf32>>
    %xb3 = ptrain.wait %rb3 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sb2 : !ptrain.request
    ptrain.wait %sb3 : !ptrain.request
    %sumb0 = ptrain.binary add %lb, %xb2 : tensor<4x4xf32>, tensor<4x4xf32>
    %sumb1 = ptrain.binary add %sumb0, %xb3 : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %sumb1 to @sum_b : tensor<4x4xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @stage2_train_step(%t: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<2>, ptrain.entry = "train"} {
    %c = arith.constant dense<3.0> : tensor<4x4xf32>
    %wb = ptrain.state_read @wb : tensor<4x4xf32>
    %lb = ptrain.binary mul %wb, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sb1 = ptrain.send_start %lb to @grid axis pp offset -1 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb1 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %sb3 = ptrain.send_start %lb to @grid axis pp offset 1 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb3 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %wa = ptrain.state_read @wa : tensor<4x4xf32>
    %la = ptrain.binary mul %wa, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sa0 = ptrain.send_start %la to @grid axis pp offset -2 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra0 = ptrain.recv_start from @grid axis pp offset -2 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %sa1 = ptrain.send_start %la to @grid axis pp offset -1 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra1 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %xb1 = ptrain.wait %rb1 : !ptrain.request<tensor<4x4xf32>>
    %xb3 = ptrain.wait %rb3 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sb1 : !ptrain.request
    ptrain.wait %sb3 : !ptrain.request
    %sumb0 = ptrain.binary add %xb1, %lb : tensor<4x4xf32>, tensor<4x4xf32>
    %sumb1 = ptrain.binary add %sumb0, %xb3 : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %sumb1 to @sum_b : tensor<4x4xf32>
    %xa0 = ptrain.wait %ra0 : !ptrain.request<tensor<4x4xf32>>
    %xa1 = ptrain.wait %ra1 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sa0 : !ptrain.request
    ptrain.wait %sa1 : !ptrain.request
    %suma0 = ptrain.binary add %xa0, %xa1 : tensor<4x4xf32>, tensor<4x4xf32>
    %suma1 = ptrain.binary add %suma0, %la : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %suma1 to @sum_a : tensor<4x4xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @stage3_train_step(%t: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<3>, ptrain.entry = "train"} {
    %c = arith.constant dense<4.0> : tensor<4x4xf32>
    %wb = ptrain.state_read @wb : tensor<4x4xf32>
    %lb = ptrain.binary mul %wb, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sb1 = ptrain.send_start %lb to @grid axis pp offset -2 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb1 = ptrain.recv_start from @grid axis pp offset -2 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %sb2 = ptrain.send_start %lb to @grid axis pp offset -1 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb2 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %xb1 = ptrain.wait %rb1 : !ptrain.request<tensor<4x4xf32>>
    %xb2 = ptrain.wait %rb2 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sb1 : !ptrain.request
    ptrain.wait %sb2 : !ptrain.request
    %sumb0 = ptrain.binary add %xb1, %xb2 : tensor<4x4xf32>, tensor<4x4xf32>
    %sumb1 = ptrain.binary add %sumb0, %lb : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %sumb1 to @sum_b : tensor<4x4xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

//--- blocking.mlir
// The same orders, but each group is waited on before the next is posted.
module {
  ptrain.grid @grid(pp = 4)
  ptrain.state @wte key "wte" kind parameter : tensor<8x4xf32>
  ptrain.state @wa key "wa" kind parameter : tensor<4x4xf32>
  ptrain.state @wb key "wb" kind parameter : tensor<4x4xf32>
  ptrain.state @sum_a key "sum_a" kind gradient : tensor<4x4xf32>
  ptrain.state @sum_b key "sum_b" kind gradient : tensor<4x4xf32>
  func.func @stage0_train_step(%t: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.entry = "train"} {
    %wte = ptrain.state_read @wte : tensor<8x4xf32>
    %e = ptrain.embedding %wte, %t : tensor<8x4xf32>, tensor<2x4xi64>
    %c = arith.constant dense<1.0> : tensor<4x4xf32>
    %wa = ptrain.state_read @wa : tensor<4x4xf32>
    %la = ptrain.binary mul %wa, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sa1 = ptrain.send_start %la to @grid axis pp offset 1 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra1 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %sa2 = ptrain.send_start %la to @grid axis pp offset 2 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra2 = ptrain.recv_start from @grid axis pp offset 2 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %xa1 = ptrain.wait %ra1 : !ptrain.request<tensor<4x4xf32>>
    %xa2 = ptrain.wait %ra2 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sa1 : !ptrain.request
    ptrain.wait %sa2 : !ptrain.request
    %suma0 = ptrain.binary add %la, %xa1 : tensor<4x4xf32>, tensor<4x4xf32>
    %suma1 = ptrain.binary add %suma0, %xa2 : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %suma1 to @sum_a : tensor<4x4xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @stage1_train_step(%t: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.entry = "train"} {
    %c = arith.constant dense<2.0> : tensor<4x4xf32>
    %wa = ptrain.state_read @wa : tensor<4x4xf32>
    %la = ptrain.binary mul %wa, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sa0 = ptrain.send_start %la to @grid axis pp offset -1 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra0 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %sa2 = ptrain.send_start %la to @grid axis pp offset 1 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra2 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %xa0 = ptrain.wait %ra0 : !ptrain.request<tensor<4x4xf32>>
    %xa2 = ptrain.wait %ra2 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sa0 : !ptrain.request
    ptrain.wait %sa2 : !ptrain.request
    %suma0 = ptrain.binary add %xa0, %la : tensor<4x4xf32>, tensor<4x4xf32>
    %suma1 = ptrain.binary add %suma0, %xa2 : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %suma1 to @sum_a : tensor<4x4xf32>
    %wb = ptrain.state_read @wb : tensor<4x4xf32>
    %lb = ptrain.binary mul %wb, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sb2 = ptrain.send_start %lb to @grid axis pp offset 1 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb2 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %sb3 = ptrain.send_start %lb to @grid axis pp offset 2 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb3 = ptrain.recv_start from @grid axis pp offset 2 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %xb2 = ptrain.wait %rb2 : !ptrain.request<tensor<4x4xf32>>
    %xb3 = ptrain.wait %rb3 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sb2 : !ptrain.request
    ptrain.wait %sb3 : !ptrain.request
    %sumb0 = ptrain.binary add %lb, %xb2 : tensor<4x4xf32>, tensor<4x4xf32>
    %sumb1 = ptrain.binary add %sumb0, %xb3 : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %sumb1 to @sum_b : tensor<4x4xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @stage2_train_step(%t: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<2>, ptrain.entry = "train"} {
    %c = arith.constant dense<3.0> : tensor<4x4xf32>
    %wb = ptrain.state_read @wb : tensor<4x4xf32>
    %lb = ptrain.binary mul %wb, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sb1 = ptrain.send_start %lb to @grid axis pp offset -1 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb1 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %sb3 = ptrain.send_start %lb to @grid axis pp offset 1 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb3 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %xb1 = ptrain.wait %rb1 : !ptrain.request<tensor<4x4xf32>>
    %xb3 = ptrain.wait %rb3 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sb1 : !ptrain.request
    ptrain.wait %sb3 : !ptrain.request
    %sumb0 = ptrain.binary add %xb1, %lb : tensor<4x4xf32>, tensor<4x4xf32>
    %sumb1 = ptrain.binary add %sumb0, %xb3 : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %sumb1 to @sum_b : tensor<4x4xf32>
    %wa = ptrain.state_read @wa : tensor<4x4xf32>
    %la = ptrain.binary mul %wa, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sa0 = ptrain.send_start %la to @grid axis pp offset -2 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra0 = ptrain.recv_start from @grid axis pp offset -2 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %sa1 = ptrain.send_start %la to @grid axis pp offset -1 {ptrain.tag = 16384} : tensor<4x4xf32>
    %ra1 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 16384} : !ptrain.request<tensor<4x4xf32>>
    %xa0 = ptrain.wait %ra0 : !ptrain.request<tensor<4x4xf32>>
    %xa1 = ptrain.wait %ra1 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sa0 : !ptrain.request
    ptrain.wait %sa1 : !ptrain.request
    %suma0 = ptrain.binary add %xa0, %xa1 : tensor<4x4xf32>, tensor<4x4xf32>
    %suma1 = ptrain.binary add %suma0, %la : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %suma1 to @sum_a : tensor<4x4xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @stage3_train_step(%t: tensor<2x4xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<3>, ptrain.entry = "train"} {
    %c = arith.constant dense<4.0> : tensor<4x4xf32>
    %wb = ptrain.state_read @wb : tensor<4x4xf32>
    %lb = ptrain.binary mul %wb, %c : tensor<4x4xf32>, tensor<4x4xf32>
    %sb1 = ptrain.send_start %lb to @grid axis pp offset -2 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb1 = ptrain.recv_start from @grid axis pp offset -2 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %sb2 = ptrain.send_start %lb to @grid axis pp offset -1 {ptrain.tag = 16385} : tensor<4x4xf32>
    %rb2 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 16385} : !ptrain.request<tensor<4x4xf32>>
    %xb1 = ptrain.wait %rb1 : !ptrain.request<tensor<4x4xf32>>
    %xb2 = ptrain.wait %rb2 : !ptrain.request<tensor<4x4xf32>>
    ptrain.wait %sb1 : !ptrain.request
    ptrain.wait %sb2 : !ptrain.request
    %sumb0 = ptrain.binary add %xb1, %xb2 : tensor<4x4xf32>, tensor<4x4xf32>
    %sumb1 = ptrain.binary add %sumb0, %lb : tensor<4x4xf32>, tensor<4x4xf32>
    ptrain.state_write %sumb1 to @sum_b : tensor<4x4xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}
