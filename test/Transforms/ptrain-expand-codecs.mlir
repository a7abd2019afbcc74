// RUN: ptrain-opt %s --ptrain-expand-codecs | FileCheck %s

// Data-parallel PowerSGD, rank 1 on 4 x 4 (not the exact path: (4 + 4) 1 < 16), averaged over dp = 2, with
// error feedback and a warm start: round 1 (P) where the start was, round 2 (Q) where the wait was; the
// state writes move after the finish; alpha = beta = 1 / 2.
ptrain.grid @grid(dp = 2)
ptrain.state @e key "sc/w/residual" kind codec_residual : tensor<4x4xf32>
ptrain.state @q key "sc/w/warm_start_q" kind codec_warm_start : tensor<4x1xf32>
ptrain.state @eb key "sc/b/residual" kind codec_residual : tensor<8xf32>

// CHECK-LABEL: func.func @sc(
// CHECK: %[[E:.*]] = ptrain.state_read @e
// CHECK: %[[Q0:.*]] = ptrain.state_read @q
// CHECK: %[[M:.*]], %[[P:.*]], %{{.*}} = ptrain.powersgd_phase_p %arg0 residual(%[[E]]) warm_start_q(%[[Q0]]) {codec = #ptrain.powersgd<rank = 1>}
// CHECK-NEXT: %[[RP:.*]] = ptrain.all_reduce_start %[[P]] on @grid axes [dp] reduction = sum : tensor<4x1xf32>
// CHECK-NEXT: %[[X:.*]] = ptrain.unary neg %arg1
// CHECK-NEXT: %[[PS:.*]] = ptrain.wait %[[RP]]
// CHECK-NEXT: %[[PH:.*]], %[[QI:.*]] = ptrain.powersgd_phase_q %[[M]], %[[PS]] {codec = #ptrain.powersgd<rank = 1>}
// CHECK-NEXT: %[[RQ:.*]] = ptrain.all_reduce_start %[[QI]] on @grid axes [dp] reduction = sum : tensor<4x1xf32>
// CHECK-NEXT: %[[QS:.*]] = ptrain.wait %[[RQ]]
// CHECK-NEXT: %[[OUT:.*]], %[[E1:.*]], %[[Q1:.*]] = ptrain.powersgd_finish %[[PH]], %[[QS]], %[[M]] {alpha = 5.000000e-01 : f32, beta = 5.000000e-01 : f32, codec = #ptrain.powersgd<rank = 1>}
// CHECK-NEXT: ptrain.state_write %[[E1]] to @e
// CHECK-NEXT: ptrain.state_write %[[Q1]] to @q
// CHECK-NOT: compressed_all_reduce_start
// CHECK: return %[[OUT]], %[[X]]
func.func @sc(%g: tensor<4x4xf32>, %x: tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  %e = ptrain.state_read @e : tensor<4x4xf32>
  %q = ptrain.state_read @q : tensor<4x1xf32>
  %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q) on @grid axes [dp] reduction = avg
      {codec = #ptrain.powersgd<rank = 1>, error_feedback}
      : tensor<4x4xf32> state(tensor<4x4xf32>, tensor<4x1xf32>) -> state(tensor<4x4xf32>, tensor<4x1xf32>)
  ptrain.state_write %e1 to @e : tensor<4x4xf32>
  ptrain.state_write %q1 to @q : tensor<4x1xf32>
  %y = ptrain.unary neg %x : tensor<4xf32>
  %out = ptrain.wait %r : !ptrain.request<tensor<4x4xf32>>
  return %out, %y : tensor<4x4xf32>, tensor<4xf32>
}

// The exact path (a 1-D tensor is a 1 x 8 matrix; rank 1: (1 + 8) 1 >= 8): both codes of phase P carry M and travel in the
// first round; no phase Q; a sum (alpha = 1), beta = 1 / 2. Without a warm start there is no Q state.
// CHECK-LABEL: func.func @exact(
// CHECK: %[[M:.*]], %[[P:.*]], %[[Q:.*]] = ptrain.powersgd_phase_p %arg0 residual(%{{.*}}) {codec = #ptrain.powersgd<rank = 1, warm_start = false>}
// CHECK-NEXT: %[[RP:.*]] = ptrain.all_reduce_start %[[P]] on @grid axes [dp] reduction = sum : tensor<1x1xf32>
// CHECK-NEXT: %[[RQ:.*]] = ptrain.all_reduce_start %[[Q]] on @grid axes [dp] reduction = sum : tensor<8x1xf32>
// CHECK-NOT: powersgd_phase_q
// CHECK: %[[PS:.*]] = ptrain.wait %[[RP]]
// CHECK-NEXT: %[[QS:.*]] = ptrain.wait %[[RQ]]
// CHECK-NEXT: %[[OUT:.*]], %[[E1:.*]], %{{.*}} = ptrain.powersgd_finish %[[PS]], %[[QS]], %[[M]] {alpha = 1.000000e+00 : f32, beta = 5.000000e-01 : f32
// CHECK-NEXT: ptrain.state_write %[[E1]] to @eb
// CHECK: return %[[OUT]]
func.func @exact(%g: tensor<8xf32>) -> tensor<8xf32> {
  %e = ptrain.state_read @eb : tensor<8xf32>
  %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = sum
      {codec = #ptrain.powersgd<rank = 1, warm_start = false>, error_feedback}
      : tensor<8xf32> state(tensor<8xf32>) -> state(tensor<8xf32>)
  ptrain.state_write %e1 to @eb : tensor<8xf32>
  %out = ptrain.wait %r : !ptrain.request<tensor<8xf32>>
  return %out : tensor<8xf32>
}

// A gathered codec (top-k: its codes do not add up), averaged, with error feedback: compress at the start (the
// new residual is written there), one all-gather per code (values and indices, 2 x 2 each), and at the wait each
// member's codes sliced, decoded and added in member order, then scaled by 1 / 2.
ptrain.state @et key "sc/t/residual" kind codec_residual : tensor<8xf32>
// CHECK-LABEL: func.func @topk(
// CHECK: %[[E:.*]] = ptrain.state_read @et
// CHECK-NEXT: %[[C:.*]]:2, %[[E1:.*]] = ptrain.compress %arg0 state(%[[E]]) {codec = #ptrain.topk<k = 2>, error_feedback} : tensor<8xf32> state(tensor<8xf32>) -> (tensor<2xf32>, tensor<2xi32>) state(tensor<8xf32>)
// CHECK-NEXT: %[[RV:.*]] = ptrain.all_gather_start %[[C]]#0 on @grid axes [dp] gather_dim = 0 : tensor<2xf32> -> !ptrain.request<tensor<4xf32>>
// CHECK-NEXT: %[[RI:.*]] = ptrain.all_gather_start %[[C]]#1 on @grid axes [dp] gather_dim = 0 : tensor<2xi32> -> !ptrain.request<tensor<4xi32>>
// CHECK-NEXT: ptrain.state_write %[[E1]] to @et
// CHECK-NEXT: %[[AV:.*]] = ptrain.wait %[[RV]]
// CHECK-NEXT: %[[AI:.*]] = ptrain.wait %[[RI]]
// CHECK: %[[V0:.*]] = ptrain.slice %[[AV]] {offsets = array<i64: 0>, sizes = array<i64: 2>}
// CHECK-NEXT: %[[I0:.*]] = ptrain.slice %[[AI]] {offsets = array<i64: 0>, sizes = array<i64: 2>}
// CHECK-NEXT: %[[D0:.*]] = ptrain.decompress %[[V0]], %[[I0]] {codec = #ptrain.topk<k = 2>} : (tensor<2xf32>, tensor<2xi32>) -> tensor<8xf32>
// CHECK-NEXT: %[[V1:.*]] = ptrain.slice %[[AV]] {offsets = array<i64: 2>, sizes = array<i64: 2>}
// CHECK-NEXT: %[[I1:.*]] = ptrain.slice %[[AI]] {offsets = array<i64: 2>, sizes = array<i64: 2>}
// CHECK-NEXT: %[[D1:.*]] = ptrain.decompress %[[V1]], %[[I1]] {codec = #ptrain.topk<k = 2>}
// CHECK-NEXT: %[[SUM:.*]] = ptrain.binary add %[[D0]], %[[D1]]
// CHECK-NEXT: %[[HALF:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[OUT:.*]] = ptrain.binary mul %[[SUM]], %[[HALF]]
// CHECK-NOT: compressed_all_reduce_start
// CHECK: return %[[OUT]]
func.func @topk(%g: tensor<8xf32>) -> tensor<8xf32> {
  %e = ptrain.state_read @et : tensor<8xf32>
  %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = avg
      {codec = #ptrain.topk<k = 2>, error_feedback} : tensor<8xf32> state(tensor<8xf32>) -> state(tensor<8xf32>)
  ptrain.state_write %e1 to @et : tensor<8xf32>
  %out = ptrain.wait %r : !ptrain.request<tensor<8xf32>>
  return %out : tensor<8xf32>
}

// 8-bit quantization per channel on 4 x 8 (32 packed bytes and one fp32 scale per channel, 8), summed: no scaling.
// CHECK-LABEL: func.func @quant(
// CHECK: %[[C:.*]]:2 = ptrain.compress %arg0 {codec = #ptrain.quant<bits = 8>} : tensor<4x8xf32> -> (tensor<32xi8>, tensor<8xf32>)
// CHECK-NEXT: ptrain.all_gather_start %[[C]]#0 on @grid axes [dp] gather_dim = 0 : tensor<32xi8> -> !ptrain.request<tensor<64xi8>>
// CHECK-NEXT: ptrain.all_gather_start %[[C]]#1 on @grid axes [dp] gather_dim = 0 : tensor<8xf32> -> !ptrain.request<tensor<16xf32>>
// CHECK-COUNT-2: ptrain.decompress
// CHECK-NEXT: %[[OUT:.*]] = ptrain.binary add
// CHECK-NOT: ptrain.binary mul
// CHECK: return %[[OUT]]
func.func @quant(%g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [dp] reduction = sum
      {codec = #ptrain.quant<bits = 8, granularity = channel>} : tensor<4x8xf32>
  %out = ptrain.wait %r : !ptrain.request<tensor<4x8xf32>>
  return %out : tensor<4x8xf32>
}

// Rand-k is reduced in compressed form by one collective already (the k values at the shared positions): kept.
// CHECK-LABEL: func.func @randk(
// CHECK: ptrain.compressed_all_reduce_start %arg0 state(%{{.*}}) on @grid axes [dp] reduction = sum {codec = #ptrain.randk<k = 2
func.func @randk(%g: tensor<8xf32>, %c: tensor<i64>) -> tensor<8xf32> {
  %r, %c1 = ptrain.compressed_all_reduce_start %g state(%c) on @grid axes [dp] reduction = sum
      {codec = #ptrain.randk<k = 2, seed = 1>} : tensor<8xf32> state(tensor<i64>) -> state(tensor<i64>)
  %out = ptrain.wait %r : !ptrain.request<tensor<8xf32>>
  return %out : tensor<8xf32>
}
