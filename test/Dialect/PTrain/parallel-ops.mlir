// RUN: ptrain-opt %s | ptrain-opt | FileCheck %s
// RUN: ptrain-opt %s --mlir-print-op-generic | ptrain-opt | FileCheck %s

// Grid, pipeline transfers, every collective and waits round-trip in custom and generic form.

// CHECK: ptrain.grid @grid(dp = 2, pp = 4, tp = 8)
ptrain.grid @grid(dp = 2, pp = 4, tp = 8)

// CHECK-LABEL: func.func @pipeline_send_recv
func.func @pipeline_send_recv(%act: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
  // CHECK: %[[S:.*]] = ptrain.send_start %{{.*}} to @grid axis pp offset 1 : tensor<4x64x128xf32>
  %s = ptrain.send_start %act to @grid axis pp offset 1 : tensor<4x64x128xf32>
  // CHECK: %[[R:.*]] = ptrain.recv_start from @grid axis pp offset -1 : !ptrain.request<tensor<4x64x128xf32>>
  %r = ptrain.recv_start from @grid axis pp offset -1 : !ptrain.request<tensor<4x64x128xf32>>
  // CHECK: ptrain.wait %[[S]] : !ptrain.request
  ptrain.wait %s : !ptrain.request
  // CHECK: %{{.*}} = ptrain.wait %[[R]] : !ptrain.request<tensor<4x64x128xf32>>
  %v = ptrain.wait %r : !ptrain.request<tensor<4x64x128xf32>>
  return %v : tensor<4x64x128xf32>
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%g: tensor<512x128xf32>, %x: tensor<64x32xf32>) {
  // CHECK: ptrain.all_reduce_start %{{.*}} on @grid axes [dp, tp] reduction = avg : tensor<512x128xf32>
  %a = ptrain.all_reduce_start %g on @grid axes [dp, tp] reduction = avg : tensor<512x128xf32>
  // CHECK: ptrain.all_gather_start %{{.*}} on @grid axes [tp] gather_dim = 1 : tensor<64x32xf32> -> !ptrain.request<tensor<64x256xf32>>
  %b = ptrain.all_gather_start %x on @grid axes [tp] gather_dim = 1 : tensor<64x32xf32> -> !ptrain.request<tensor<64x256xf32>>
  // CHECK: ptrain.reduce_scatter_start %{{.*}} on @grid axes [dp] scatter_dim = 0 reduction = sum : tensor<512x128xf32> -> !ptrain.request<tensor<256x128xf32>>
  %c = ptrain.reduce_scatter_start %g on @grid axes [dp] scatter_dim = 0 reduction = sum : tensor<512x128xf32> -> !ptrain.request<tensor<256x128xf32>>
  // CHECK: ptrain.broadcast_start %{{.*}} on @grid axes [dp, pp] root = 7 : tensor<64x32xf32>
  %d = ptrain.broadcast_start %x on @grid axes [dp, pp] root = 7 : tensor<64x32xf32>
  // CHECK: ptrain.all_reduce_start %{{.*}} reduction = max
  %e = ptrain.all_reduce_start %x on @grid axes [pp] reduction = max : tensor<64x32xf32>
  %0 = ptrain.wait %a : !ptrain.request<tensor<512x128xf32>>
  %1 = ptrain.wait %b : !ptrain.request<tensor<64x256xf32>>
  %2 = ptrain.wait %c : !ptrain.request<tensor<256x128xf32>>
  %3 = ptrain.wait %d : !ptrain.request<tensor<64x32xf32>>
  %4 = ptrain.wait %e : !ptrain.request<tensor<64x32xf32>>
  return
}

// A subgroup all-reduce: {first, last} x dp of one TP rank (Optimus-CC's fused embedding sync), in a stage
// function of a member stage.
// CHECK-LABEL: func.func @subgroup_all_reduce
func.func @subgroup_all_reduce(%w: tensor<64x32xf32>) attributes {ptrain.stage = #ptrain.stage<3>} {
  // CHECK: ptrain.all_reduce_start %{{.*}} on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<64x32xf32>
  %r = ptrain.all_reduce_start %w on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<64x32xf32>
  %0 = ptrain.wait %r : !ptrain.request<tensor<64x32xf32>>
  return
}

// CHECK-LABEL: func.func @distribute
func.func @distribute(%w: tensor<128x512xf32>, %emb: tensor<50257x64xf32>) {
  // CHECK: ptrain.distribute %{{.*}} on @grid split {{\[}}[], [tp]] : tensor<128x512xf32> -> tensor<128x64xf32>
  %0 = ptrain.distribute %w on @grid split [[], [tp]] : tensor<128x512xf32> -> tensor<128x64xf32>
  // Two axes on one dimension, outer first; fewer entries than dimensions.
  // CHECK: ptrain.distribute %{{.*}} on @grid split {{\[}}[dp, tp]] : tensor<128x512xf32> -> tensor<8x512xf32>
  %1 = ptrain.distribute %w on @grid split [[dp, tp]] : tensor<128x512xf32> -> tensor<8x512xf32>
  // A vocabulary of 50257 padded to a multiple of tp = 8: ceil(50257 / 8) = 6283 rows per rank.
  // CHECK: ptrain.distribute %{{.*}} on @grid split {{\[}}[tp], []] pad : tensor<50257x64xf32> -> tensor<6283x64xf32>
  %2 = ptrain.distribute %emb on @grid split [[tp], []] pad : tensor<50257x64xf32> -> tensor<6283x64xf32>
  return
}
