// RUN: ptrain-opt %s | ptrain-opt | FileCheck %s
// RUN: ptrain-opt %s --mlir-print-op-generic | ptrain-opt | FileCheck %s

// Every codec on compress/decompress and on a compressed all-reduce, with the code, state and parameter
// types the codec derives from the tensor type.

ptrain.grid @grid(dp = 4, pp = 2)

// Optimus-CC compressed backpropagation: PowerSGD rank 4 with error feedback and a warm-started Q.
// CHECK-LABEL: func.func @powersgd_error_feedback
func.func @powersgd_error_feedback(%g: tensor<4x64x128xf32>, %e: tensor<4x64x128xf32>, %q: tensor<128x4xf32>)
    -> (tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<128x4xf32>) {
  // CHECK: %[[C:.*]]:2, %[[S:.*]]:2 = ptrain.compress %{{.*}} state(%{{.*}}, %{{.*}}) {codec = #ptrain.powersgd<rank = 4>, error_feedback} : tensor<4x64x128xf32> state(tensor<4x64x128xf32>, tensor<128x4xf32>) -> (tensor<256x4xf32>, tensor<128x4xf32>) state(tensor<4x64x128xf32>, tensor<128x4xf32>)
  %p, %qn, %e1, %q1 = ptrain.compress %g state(%e, %q) {codec = #ptrain.powersgd<rank = 4>, error_feedback}
      : tensor<4x64x128xf32> state(tensor<4x64x128xf32>, tensor<128x4xf32>)
      -> (tensor<256x4xf32>, tensor<128x4xf32>) state(tensor<4x64x128xf32>, tensor<128x4xf32>)
  // CHECK: ptrain.decompress %[[C]]#0, %[[C]]#1 {codec = #ptrain.powersgd<rank = 4>} : (tensor<256x4xf32>, tensor<128x4xf32>) -> tensor<4x64x128xf32>
  %d = ptrain.decompress %p, %qn {codec = #ptrain.powersgd<rank = 4>}
      : (tensor<256x4xf32>, tensor<128x4xf32>) -> tensor<4x64x128xf32>
  return %d, %e1, %q1 : tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<128x4xf32>
}

// A matrix view other than the default, and no warm start: no codec state.
// CHECK-LABEL: func.func @powersgd_view
func.func @powersgd_view(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
  // CHECK: #ptrain.powersgd<rank = 2, warm_start = false, view = <rows = [0], cols = [1, 2]>>
  %p, %q = ptrain.compress %g {codec = #ptrain.powersgd<rank = 2, warm_start = false, view = #ptrain.matrix_view<rows = [0], cols = [1, 2]>>}
      : tensor<4x64x128xf32> -> (tensor<4x2xf32>, tensor<8192x2xf32>)
  %d = ptrain.decompress %p, %q {codec = #ptrain.powersgd<rank = 2, warm_start = false, view = #ptrain.matrix_view<rows = [0], cols = [1, 2]>>}
      : (tensor<4x2xf32>, tensor<8192x2xf32>) -> tensor<4x64x128xf32>
  return %d : tensor<4x64x128xf32>
}

// Top-k by count and by ratio: values and int32 indices.
// CHECK-LABEL: func.func @topk
func.func @topk(%g: tensor<64x128xf32>) {
  // CHECK: ptrain.compress %{{.*}} {codec = #ptrain.topk<k = 100>} : tensor<64x128xf32> -> (tensor<100xf32>, tensor<100xi32>)
  %v, %i = ptrain.compress %g {codec = #ptrain.topk<k = 100>} : tensor<64x128xf32> -> (tensor<100xf32>, tensor<100xi32>)
  // ceil(0.01 * 8192) = 82 kept values.
  // CHECK: #ptrain.topk<ratio = 1.000000e-02 : f64>} : tensor<64x128xf32> -> (tensor<82xf32>, tensor<82xi32>)
  %v2, %i2 = ptrain.compress %g {codec = #ptrain.topk<ratio = 0.01>} : tensor<64x128xf32> -> (tensor<82xf32>, tensor<82xi32>)
  %d = ptrain.decompress %v, %i {codec = #ptrain.topk<k = 100>} : (tensor<100xf32>, tensor<100xi32>) -> tensor<64x128xf32>
  return
}

// Rand-k with a shared seed: values only; both sides keep a call counter.
// CHECK-LABEL: func.func @randk
func.func @randk(%g: tensor<64x128xf32>, %n: tensor<i64>, %m: tensor<i64>) {
  // CHECK: ptrain.compress %{{.*}} state(%{{.*}}) {codec = #ptrain.randk<k = 512, seed = 7>} : tensor<64x128xf32> state(tensor<i64>) -> (tensor<512xf32>) state(tensor<i64>)
  %v, %n1 = ptrain.compress %g state(%n) {codec = #ptrain.randk<k = 512, seed = 7>}
      : tensor<64x128xf32> state(tensor<i64>) -> (tensor<512xf32>) state(tensor<i64>)
  // CHECK: ptrain.decompress %{{.*}} state(%{{.*}}) {codec = #ptrain.randk<k = 512, seed = 7>} : (tensor<512xf32>) state(tensor<i64>) -> tensor<64x128xf32> state(tensor<i64>)
  %d, %m1 = ptrain.decompress %v state(%m) {codec = #ptrain.randk<k = 512, seed = 7>}
      : (tensor<512xf32>) state(tensor<i64>) -> tensor<64x128xf32> state(tensor<i64>)
  return
}

// TAH-Quant on 4 x 64 x 128 at 64-element tiles: T = 512 tiles, H = round(0.8 T) = 410 at 4 bits, 102 at 3:
// (410 x 4 + 102 x 3) x 64 / 8 = 15568 packed bytes, one f32 scale, one f32 zero point and one flag byte per tile.
// CHECK-LABEL: func.func @tahquant
func.func @tahquant(%a: tensor<4x64x128xf32>) {
  // CHECK: {codec = #ptrain.tahquant<>} : tensor<4x64x128xf32> -> (tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>)
  %p, %s, %z, %f = ptrain.compress %a {codec = #ptrain.tahquant<>} : tensor<4x64x128xf32> -> (tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>)
  // 32-element tiles, 2 / 4 bits, half high: T = 1024, (512 x 4 + 512 x 2) x 32 / 8 = 12288.
  // CHECK: {codec = #ptrain.tahquant<tile_size = 32, low_bits = 2, high_ratio = 5.000000e-01 : f64>} : tensor<4x64x128xf32> -> (tensor<12288xi8>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xi8>)
  %p2, %s2, %z2, %f2 = ptrain.compress %a {codec = #ptrain.tahquant<tile_size = 32, low_bits = 2, high_ratio = 0.5>} : tensor<4x64x128xf32> -> (tensor<12288xi8>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xi8>)
  %d = ptrain.decompress %p, %s, %z, %f {codec = #ptrain.tahquant<>} : (tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>) -> tensor<4x64x128xf32>
  return
}

// Quantization: per channel (default), per tensor, per block, asymmetric adds zero points.
// CHECK-LABEL: func.func @quant
func.func @quant(%a: tensor<4x64x128xf32>) {
  // 4 * 64 * 128 elements * 4 bits = 16384 bytes; one scale per hidden channel.
  // CHECK: {codec = #ptrain.quant<bits = 4>} : tensor<4x64x128xf32> -> (tensor<16384xi8>, tensor<128xf32>)
  %p, %s = ptrain.compress %a {codec = #ptrain.quant<bits = 4>} : tensor<4x64x128xf32> -> (tensor<16384xi8>, tensor<128xf32>)
  // CHECK: {codec = #ptrain.quant<bits = 2, granularity = tensor>} : tensor<4x64x128xf32> -> (tensor<8192xi8>, tensor<1xf32>)
  %p2, %s2 = ptrain.compress %a {codec = #ptrain.quant<bits = 2, granularity = tensor>} : tensor<4x64x128xf32> -> (tensor<8192xi8>, tensor<1xf32>)
  // 32768 elements in blocks of 100: 328 scales, the last block short.
  // CHECK: {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 100, symmetric = false>} : tensor<4x64x128xf32> -> (tensor<32768xi8>, tensor<328xf32>, tensor<328xf32>)
  %p3, %s3, %z3 = ptrain.compress %a {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 100, symmetric = false>}
      : tensor<4x64x128xf32> -> (tensor<32768xi8>, tensor<328xf32>, tensor<328xf32>)
  %d = ptrain.decompress %p, %s {codec = #ptrain.quant<bits = 4>} : (tensor<16384xi8>, tensor<128xf32>) -> tensor<4x64x128xf32>
  return
}

// Casts to 16-bit floats keep the shape.
// CHECK-LABEL: func.func @cast
func.func @cast(%a: tensor<4x64x128xf32>) {
  // CHECK: {codec = #ptrain.cast<bf16>} : tensor<4x64x128xf32> -> (tensor<4x64x128xbf16>)
  %c = ptrain.compress %a {codec = #ptrain.cast<bf16>} : tensor<4x64x128xf32> -> (tensor<4x64x128xbf16>)
  // CHECK: {codec = #ptrain.cast<f16>} : tensor<4x64x128xf32> -> (tensor<4x64x128xf16>)
  %h = ptrain.compress %a {codec = #ptrain.cast<f16>} : tensor<4x64x128xf32> -> (tensor<4x64x128xf16>)
  %d = ptrain.decompress %c {codec = #ptrain.cast<bf16>} : (tensor<4x64x128xbf16>) -> tensor<4x64x128xf32>
  return
}

// Linear autoencoder: trainable encoder and decoder weights as params.
// CHECK-LABEL: func.func @linear_ae
func.func @linear_ae(%a: tensor<4x64x128xf32>, %we: tensor<128x50xf32>, %wd: tensor<50x128xf32>) {
  // CHECK: ptrain.compress %{{.*}} params(%{{.*}}) {codec = #ptrain.linear_ae<dim = 50>} : tensor<4x64x128xf32> params(tensor<128x50xf32>) -> (tensor<256x50xf32>)
  %c = ptrain.compress %a params(%we) {codec = #ptrain.linear_ae<dim = 50>}
      : tensor<4x64x128xf32> params(tensor<128x50xf32>) -> (tensor<256x50xf32>)
  // CHECK: ptrain.decompress %{{.*}} params(%{{.*}}) {codec = #ptrain.linear_ae<dim = 50>} : (tensor<256x50xf32>) params(tensor<50x128xf32>) -> tensor<4x64x128xf32>
  %d = ptrain.decompress %c params(%wd) {codec = #ptrain.linear_ae<dim = 50>}
      : (tensor<256x50xf32>) params(tensor<50x128xf32>) -> tensor<4x64x128xf32>
  return
}

// Optimus-CC selective stage compression: DP PowerSGD rank 8 with per-parameter error feedback.
// CHECK-LABEL: func.func @compressed_all_reduce
func.func @compressed_all_reduce(%g: tensor<512x128xf32>, %e: tensor<512x128xf32>, %q: tensor<128x8xf32>)
    -> tensor<512x128xf32> {
  // CHECK: %[[R:.*]], %{{.*}}:2 = ptrain.compressed_all_reduce_start %{{.*}} state(%{{.*}}, %{{.*}}) on @grid axes [dp] reduction = avg {codec = #ptrain.powersgd<rank = 8>, error_feedback} : tensor<512x128xf32> state(tensor<512x128xf32>, tensor<128x8xf32>) -> state(tensor<512x128xf32>, tensor<128x8xf32>)
  %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q) on @grid axes [dp] reduction = avg
      {codec = #ptrain.powersgd<rank = 8>, error_feedback}
      : tensor<512x128xf32> state(tensor<512x128xf32>, tensor<128x8xf32>)
      -> state(tensor<512x128xf32>, tensor<128x8xf32>)
  // CHECK: ptrain.wait %[[R]] : !ptrain.request<tensor<512x128xf32>>
  %v = ptrain.wait %r : !ptrain.request<tensor<512x128xf32>>
  return %v : tensor<512x128xf32>
}

// The PowerSGD phases of --ptrain-expand-codecs round-trip (custom and generic form).
// CHECK-LABEL: func.func @powersgd_phases
func.func @powersgd_phases(%g: tensor<512x128xf32>, %e: tensor<512x128xf32>, %q0: tensor<128x8xf32>)
    -> (tensor<512x128xf32>, tensor<512x128xf32>, tensor<128x8xf32>) {
  // CHECK: ptrain.powersgd_phase_p %{{.*}} residual(%{{.*}}) warm_start_q(%{{.*}}) {codec = #ptrain.powersgd<rank = 8>} : tensor<512x128xf32> residual(tensor<512x128xf32>) warm_start_q(tensor<128x8xf32>) -> tensor<512x128xf32>, tensor<512x8xf32>, tensor<128x8xf32>
  %m, %p, %q = ptrain.powersgd_phase_p %g residual(%e) warm_start_q(%q0) {codec = #ptrain.powersgd<rank = 8>}
      : tensor<512x128xf32> residual(tensor<512x128xf32>) warm_start_q(tensor<128x8xf32>)
      -> tensor<512x128xf32>, tensor<512x8xf32>, tensor<128x8xf32>
  // CHECK: ptrain.powersgd_phase_q %{{.*}}, %{{.*}} {codec = #ptrain.powersgd<rank = 8>} : tensor<512x128xf32>, tensor<512x8xf32> -> tensor<512x8xf32>, tensor<128x8xf32>
  %ph, %qi = ptrain.powersgd_phase_q %m, %p {codec = #ptrain.powersgd<rank = 8>}
      : tensor<512x128xf32>, tensor<512x8xf32> -> tensor<512x8xf32>, tensor<128x8xf32>
  // CHECK: ptrain.powersgd_finish %{{.*}}, %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f32, beta = 5.000000e-01 : f32, codec = #ptrain.powersgd<rank = 8>} : tensor<512x8xf32>, tensor<128x8xf32>, tensor<512x128xf32> -> tensor<512x128xf32>, tensor<512x128xf32>, tensor<128x8xf32>
  %out, %e1, %q1 = ptrain.powersgd_finish %ph, %qi, %m {codec = #ptrain.powersgd<rank = 8>, alpha = 0.5 : f32, beta = 0.5 : f32}
      : tensor<512x8xf32>, tensor<128x8xf32>, tensor<512x128xf32> -> tensor<512x128xf32>, tensor<512x128xf32>, tensor<128x8xf32>
  return %out, %e1, %q1 : tensor<512x128xf32>, tensor<512x128xf32>, tensor<128x8xf32>
}

// ZeRO-1's quantized reduce-scatter of a flat bucket round-trips, with its residual (dp = 4: 1 / 4 each).
// CHECK-LABEL: func.func @compressed_reduce_scatter
func.func @compressed_reduce_scatter(%g: tensor<256xf32>, %e: tensor<256xf32>) -> (tensor<64xf32>, tensor<256xf32>) {
  // CHECK: %[[R:.*]], %[[E:.*]] = ptrain.compressed_reduce_scatter_start %{{.*}} state(%{{.*}}) on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 32>, error_feedback} : tensor<256xf32> state(tensor<256xf32>) -> !ptrain.request<tensor<64xf32>> state(tensor<256xf32>)
  %r, %e1 = ptrain.compressed_reduce_scatter_start %g state(%e) on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 32>, error_feedback} : tensor<256xf32> state(tensor<256xf32>) -> !ptrain.request<tensor<64xf32>> state(tensor<256xf32>)
  %s = ptrain.wait %r : !ptrain.request<tensor<64xf32>>
  return %s, %e1 : tensor<64xf32>, tensor<256xf32>
}

// A bf16 plan's link (docs/Compression.md, "Codecs on 16-bit traffic"): PowerSGD on a bf16 input has f32
// factors, warm start and residual; top-k and rand-k keep bf16 values; quantization has f32 scales.
// CHECK-LABEL: func.func @half_inputs
func.func @half_inputs(%g: tensor<4x64x128xbf16>, %e: tensor<4x64x128xf32>, %q: tensor<128x4xf32>, %n: tensor<i64>,
                       %h: tensor<4x64x128xf16>) {
  // CHECK: ptrain.compress %{{.*}} state(%{{.*}}, %{{.*}}) {codec = #ptrain.powersgd<rank = 4>, error_feedback} : tensor<4x64x128xbf16> state(tensor<4x64x128xf32>, tensor<128x4xf32>) -> (tensor<256x4xf32>, tensor<128x4xf32>) state(tensor<4x64x128xf32>, tensor<128x4xf32>)
  %p, %qq, %e1, %q1 = ptrain.compress %g state(%e, %q) {codec = #ptrain.powersgd<rank = 4>, error_feedback}
      : tensor<4x64x128xbf16> state(tensor<4x64x128xf32>, tensor<128x4xf32>)
      -> (tensor<256x4xf32>, tensor<128x4xf32>) state(tensor<4x64x128xf32>, tensor<128x4xf32>)
  // CHECK: ptrain.decompress %{{.*}}, %{{.*}} {codec = #ptrain.powersgd<rank = 4>} : (tensor<256x4xf32>, tensor<128x4xf32>) -> tensor<4x64x128xbf16>
  %d = ptrain.decompress %p, %qq {codec = #ptrain.powersgd<rank = 4>} : (tensor<256x4xf32>, tensor<128x4xf32>) -> tensor<4x64x128xbf16>
  // CHECK: {codec = #ptrain.topk<k = 1024>, error_feedback} : tensor<4x64x128xbf16> state(tensor<4x64x128xf32>) -> (tensor<1024xbf16>, tensor<1024xi32>)
  %v, %i, %e2 = ptrain.compress %g state(%e) {codec = #ptrain.topk<k = 1024>, error_feedback}
      : tensor<4x64x128xbf16> state(tensor<4x64x128xf32>) -> (tensor<1024xbf16>, tensor<1024xi32>) state(tensor<4x64x128xf32>)
  // CHECK: {codec = #ptrain.randk<k = 64, seed = 3>} : tensor<4x64x128xf16> state(tensor<i64>) -> (tensor<64xf16>)
  %r, %n1 = ptrain.compress %h state(%n) {codec = #ptrain.randk<k = 64, seed = 3>}
      : tensor<4x64x128xf16> state(tensor<i64>) -> (tensor<64xf16>) state(tensor<i64>)
  // CHECK: {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 64>} : tensor<4x64x128xbf16> -> (tensor<32768xi8>, tensor<512xf32>)
  %c, %s = ptrain.compress %g {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 64>}
      : tensor<4x64x128xbf16> -> (tensor<32768xi8>, tensor<512xf32>)
  return
}

// The widened form of a 16-bit TP site: an f32 compressed all-reduce whose top-k values are sent as bf16.
// CHECK-LABEL: func.func @half_values
func.func @half_values(%x: tensor<4x64x128xf32>, %e: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
  // CHECK: ptrain.compressed_all_reduce_start %{{.*}} state(%{{.*}}) on @grid axes [dp] reduction = sum {codec = #ptrain.topk<k = 1024>, error_feedback, value_type = bf16}
  %r, %e1 = ptrain.compressed_all_reduce_start %x state(%e) on @grid axes [dp] reduction = sum
      {codec = #ptrain.topk<k = 1024>, error_feedback, value_type = bf16}
      : tensor<4x64x128xf32> state(tensor<4x64x128xf32>) -> state(tensor<4x64x128xf32>)
  %s = ptrain.wait %r : !ptrain.request<tensor<4x64x128xf32>>
  return %s : tensor<4x64x128xf32>
}
