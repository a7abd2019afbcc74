// RUN: ptrain-opt %s --canonicalize --cse | FileCheck %s

// Communication has side effects (DESIGN decision 3): DCE keeps an unused send and all-reduce, CSE keeps two
// identical all-reduces apart; codecs are pure: an unused compress is deleted and identical ones merge.

ptrain.grid @grid(dp = 2, pp = 2)
ptrain.state @w key "w" kind parameter : tensor<8x16xf32>

// CHECK-LABEL: func.func @communication_is_kept
func.func @communication_is_kept(%x: tensor<8x16xf32>) {
  // CHECK: ptrain.send_start
  %s = ptrain.send_start %x to @grid axis pp offset 1 : tensor<8x16xf32>
  // CHECK-COUNT-2: ptrain.all_reduce_start
  %a = ptrain.all_reduce_start %x on @grid axes [dp] reduction = sum : tensor<8x16xf32>
  %b = ptrain.all_reduce_start %x on @grid axes [dp] reduction = sum : tensor<8x16xf32>
  // CHECK-COUNT-3: ptrain.wait
  ptrain.wait %s : !ptrain.request
  %0 = ptrain.wait %a : !ptrain.request<tensor<8x16xf32>>
  %1 = ptrain.wait %b : !ptrain.request<tensor<8x16xf32>>
  return
}

// CHECK-LABEL: func.func @codecs_are_pure
func.func @codecs_are_pure(%x: tensor<8x16xf32>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>) {
  // CHECK-COUNT-1: ptrain.compress
  // CHECK-NOT: ptrain.compress
  %unused:2 = ptrain.compress %x {codec = #ptrain.topk<k = 4>} : tensor<8x16xf32> -> (tensor<4xf32>, tensor<4xi32>)
  %c = ptrain.compress %x {codec = #ptrain.cast<bf16>} : tensor<8x16xf32> -> (tensor<8x16xbf16>)
  %d = ptrain.compress %x {codec = #ptrain.cast<bf16>} : tensor<8x16xf32> -> (tensor<8x16xbf16>)
  return %c, %d : tensor<8x16xbf16>, tensor<8x16xbf16>
}

// CHECK-LABEL: func.func @state_writes_are_kept
func.func @state_writes_are_kept(%x: tensor<8x16xf32>) {
  // An unused read goes; the write stays.
  // CHECK-NOT: ptrain.state_read
  // CHECK: ptrain.state_write
  %unused = ptrain.state_read @w : tensor<8x16xf32>
  ptrain.state_write %x to @w : tensor<8x16xf32>
  return
}
