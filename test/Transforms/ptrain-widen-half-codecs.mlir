// RUN: ptrain-opt %s --split-input-file --ptrain-widen-half-codecs | FileCheck %s

// --ptrain-widen-half-codecs (docs/Compression.md, "Codecs on 16-bit traffic"): each codec op on a bf16 or f16
// tensor becomes the f32 op on the exactly widened tensor; the codes the codec keeps 16-bit are rounded after the
// encode (top-k, rand-k: ptrain-lower-to-runtime-precision-codecs.mlir), the others are the f32 codes as they are.

// Quantization with error feedback: the f32 encode of the widened input; its codes and residual are the op's.
// CHECK-LABEL: func.func @quant_ef(
// CHECK-SAME: %[[G:.*]]: tensor<8x64xbf16>, %[[E:.*]]: tensor<8x64xf32>
// CHECK-NEXT: %[[X:.*]] = ptrain.cast %[[G]] : tensor<8x64xbf16> -> tensor<8x64xf32>
// CHECK-NEXT: %[[C:.*]]:2, %[[E1:.*]] = ptrain.compress %[[X]] state(%[[E]]) {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 32>, error_feedback} : tensor<8x64xf32> state(tensor<8x64xf32>) -> (tensor<256xi8>, tensor<16xf32>) state(tensor<8x64xf32>)
// CHECK-NEXT: return %[[C]]#0, %[[C]]#1, %[[E1]]
func.func @quant_ef(%g: tensor<8x64xbf16>, %e: tensor<8x64xf32>) -> (tensor<256xi8>, tensor<16xf32>, tensor<8x64xf32>) {
  %c, %s, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 32>, error_feedback}
      : tensor<8x64xbf16> state(tensor<8x64xf32>) -> (tensor<256xi8>, tensor<16xf32>) state(tensor<8x64xf32>)
  return %c, %s, %e1 : tensor<256xi8>, tensor<16xf32>, tensor<8x64xf32>
}

// -----

// PowerSGD's decode into bf16: the f32 decode of the f32 factors, rounded once.
// CHECK-LABEL: func.func @powersgd_decode(
// CHECK-NEXT: %[[D:.*]] = ptrain.decompress %{{.*}}, %{{.*}} {codec = #ptrain.powersgd<rank = 2>} : (tensor<8x2xf32>, tensor<64x2xf32>) -> tensor<8x64xf32>
// CHECK-NEXT: %[[H:.*]] = ptrain.cast %[[D]] : tensor<8x64xf32> -> tensor<8x64xbf16>
// CHECK-NEXT: return %[[H]]
func.func @powersgd_decode(%p: tensor<8x2xf32>, %q: tensor<64x2xf32>) -> tensor<8x64xbf16> {
  %d = ptrain.decompress %p, %q {codec = #ptrain.powersgd<rank = 2>} : (tensor<8x2xf32>, tensor<64x2xf32>) -> tensor<8x64xbf16>
  return %d : tensor<8x64xbf16>
}

// -----

// Top-k without error feedback on an f16 input: the values rounded (exact here: they are f16 values), no fix-up.
// CHECK-LABEL: func.func @topk_no_ef(
// CHECK-NEXT: %[[X:.*]] = ptrain.cast %{{.*}} : tensor<8x64xf16> -> tensor<8x64xf32>
// CHECK-NEXT: %[[C:.*]]:2 = ptrain.compress %[[X]] {codec = #ptrain.topk<k = 32>} : tensor<8x64xf32> -> (tensor<32xf32>, tensor<32xi32>)
// CHECK-NEXT: %[[V:.*]] = ptrain.cast %[[C]]#0 : tensor<32xf32> -> tensor<32xf16>
// CHECK-NEXT: return %[[V]], %[[C]]#1
func.func @topk_no_ef(%g: tensor<8x64xf16>) -> (tensor<32xf16>, tensor<32xi32>) {
  %v, %i = ptrain.compress %g {codec = #ptrain.topk<k = 32>} : tensor<8x64xf16> -> (tensor<32xf16>, tensor<32xi32>)
  return %v, %i : tensor<32xf16>, tensor<32xi32>
}

// -----

// A 16-bit TP site: the f32 compressed all-reduce of the widened value with the f32 residual; its wait rounded.
// CHECK-LABEL: func.func @tp_site(
// CHECK-NEXT: %[[X:.*]] = ptrain.cast %{{.*}} : tensor<4x8x64xbf16> -> tensor<4x8x64xf32>
// CHECK-NEXT: %[[R:.*]], %[[E1:.*]] = ptrain.compressed_all_reduce_start %[[X]] state(%{{.*}}) on @grid axes [tp] reduction = sum {codec = #ptrain.quant<bits = 8>, error_feedback} : tensor<4x8x64xf32> state(tensor<4x8x64xf32>) -> state(tensor<4x8x64xf32>)
// CHECK-NEXT: %[[S:.*]] = ptrain.wait %[[R]] : !ptrain.request<tensor<4x8x64xf32>>
// CHECK-NEXT: %[[H:.*]] = ptrain.cast %[[S]] : tensor<4x8x64xf32> -> tensor<4x8x64xbf16>
// CHECK-NEXT: return %[[H]], %[[E1]]
module {
  ptrain.grid @grid(tp = 2)
  func.func @tp_site(%g: tensor<4x8x64xbf16>, %e: tensor<4x8x64xf32>) -> (tensor<4x8x64xbf16>, tensor<4x8x64xf32>) {
    %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [tp] reduction = sum
        {codec = #ptrain.quant<bits = 8>, error_feedback} : tensor<4x8x64xbf16> state(tensor<4x8x64xf32>) -> state(tensor<4x8x64xf32>)
    %s = ptrain.wait %r : !ptrain.request<tensor<4x8x64xbf16>>
    return %s, %e1 : tensor<4x8x64xbf16>, tensor<4x8x64xf32>
  }
}

// -----

// A 16-bit top-k / rand-k TP site: the f32 compressed all-reduce with value_type, so the runtimes and the executor send
// the kept values as 16 bits (and keep their rounding in the residual); quantization's codes stay f32 (no value_type).
// CHECK-LABEL: func.func @tp_site_sparse(
// CHECK-NEXT: %[[X:.*]] = ptrain.cast %{{.*}} : tensor<4x8x64xbf16> -> tensor<4x8x64xf32>
// CHECK-NEXT: %[[R:.*]], %[[E1:.*]] = ptrain.compressed_all_reduce_start %[[X]] state(%{{.*}}) on @grid axes [tp] reduction = sum {codec = #ptrain.topk<k = 64>, error_feedback, value_type = bf16} : tensor<4x8x64xf32>
// CHECK: %[[Y:.*]] = ptrain.cast %{{.*}} : tensor<4x8x64xf16> -> tensor<4x8x64xf32>
// CHECK-NEXT: ptrain.compressed_all_reduce_start %[[Y]] state(%{{.*}}) on @grid axes [tp] reduction = sum {codec = #ptrain.randk<k = 32, seed = 3>, value_type = f16} : tensor<4x8x64xf32> state(tensor<i64>)
module {
  ptrain.grid @grid(tp = 2)
  func.func @tp_site_sparse(%g: tensor<4x8x64xbf16>, %e: tensor<4x8x64xf32>, %h: tensor<4x8x64xf16>, %n: tensor<i64>)
      -> (tensor<4x8x64xbf16>, tensor<4x8x64xf32>, tensor<4x8x64xf16>, tensor<i64>) {
    %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [tp] reduction = sum
        {codec = #ptrain.topk<k = 64>, error_feedback} : tensor<4x8x64xbf16> state(tensor<4x8x64xf32>) -> state(tensor<4x8x64xf32>)
    %s = ptrain.wait %r : !ptrain.request<tensor<4x8x64xbf16>>
    %q, %n1 = ptrain.compressed_all_reduce_start %h state(%n) on @grid axes [tp] reduction = sum
        {codec = #ptrain.randk<k = 32, seed = 3>} : tensor<4x8x64xf16> state(tensor<i64>) -> state(tensor<i64>)
    %t = ptrain.wait %q : !ptrain.request<tensor<4x8x64xf16>>
    return %s, %e1, %t, %n1 : tensor<4x8x64xbf16>, tensor<4x8x64xf32>, tensor<4x8x64xf16>, tensor<i64>
  }
}

// -----

// TAH-Quant on a bf16 activation (its entropy-guided bits, rotation and f32 scales from the widened tile values):
// the f32 encoder's four codes as they are, nothing rounded.
// CHECK-LABEL: func.func @tahquant(
// CHECK-NEXT: %[[X:.*]] = ptrain.cast %{{.*}} : tensor<4x64x128xbf16> -> tensor<4x64x128xf32>
// CHECK-NEXT: %[[C:.*]]:4 = ptrain.compress %[[X]] {codec = #ptrain.tahquant<>} : tensor<4x64x128xf32> -> (tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>)
// CHECK-NEXT: return %[[C]]#0, %[[C]]#1, %[[C]]#2, %[[C]]#3
func.func @tahquant(%g: tensor<4x64x128xbf16>) -> (tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>) {
  %p, %s, %z, %f = ptrain.compress %g {codec = #ptrain.tahquant<tile_size = 64>}
      : tensor<4x64x128xbf16> -> (tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>)
  return %p, %s, %z, %f : tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>
}

// -----

// f32 codec ops are left as they are.
// CHECK-LABEL: func.func @f32(
// CHECK-NOT: ptrain.cast
// CHECK: ptrain.compress %{{.*}} {codec = #ptrain.topk<k = 32>} : tensor<8x64xf32>
func.func @f32(%g: tensor<8x64xf32>) -> (tensor<32xf32>, tensor<32xi32>) {
  %v, %i = ptrain.compress %g {codec = #ptrain.topk<k = 32>} : tensor<8x64xf32> -> (tensor<32xf32>, tensor<32xi32>)
  return %v, %i : tensor<32xf32>, tensor<32xi32>
}
