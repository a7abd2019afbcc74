// RUN: split-file %s %t
// RUN: not ptrain-translate --emit-cuda %t/all-reduce.mlir -o %t/a.cu 2>&1 | FileCheck %s --check-prefix=ALLREDUCE
// RUN: not test -e %t/a.cu
// RUN: not ptrain-translate --emit-cuda %t/linear-ae.mlir -o %t/b.cu 2>&1 | FileCheck %s --check-prefix=AE
// RUN: not test -e %t/b.cu
// RUN: not ptrain-translate --emit-cuda %t/view.mlir 2>&1 | FileCheck %s --check-prefix=VIEW
// RUN: not ptrain-translate --emit-cuda %t/code-type.mlir 2>&1 | FileCheck %s --check-prefix=CODETYPE

// A compressed all-reduce (Optimus-CC's SC, MCBench's TP site) is emitted (emit-cuda-compressed-all-reduce.mlir)
// unless its codec has no runtime kernel's shape: a matrix view that reorders the dimensions is named at the op,
// no output file.
//--- all-reduce.mlir
ptrain.grid @grid(dp = 2)
ptrain.state @e key "sc/w/residual" kind codec_residual : tensor<64x32xf32>
func.func @f(%g: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %e = ptrain.state_read @e : tensor<64x32xf32>
  %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = avg
      {codec = #ptrain.powersgd<rank = 4, warm_start = false, view = #ptrain.matrix_view<rows = [1], cols = [0]>>, error_feedback}
      : tensor<64x32xf32> state(tensor<64x32xf32>) -> state(tensor<64x32xf32>) loc("/sc/w")
  ptrain.state_write %e1 to @e : tensor<64x32xf32>
  %y = ptrain.wait %r : !ptrain.request<tensor<64x32xf32>>
  return %y : tensor<64x32xf32>
}
// ALLREDUCE: error: loc("/sc/w"): --emit-cuda: the matrix view #ptrain.matrix_view<rows = [1], cols = [0]> of 'tensor<64x32xf32>' is not a split of the dimensions in order

// A codec without a runtime kernel (the linear autoencoder is model ops, --ptrain-insert-linear-ae).
//--- linear-ae.mlir
func.func @f(%g: tensor<8x16xf32>, %we: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %c = ptrain.compress %g params(%we) {codec = #ptrain.linear_ae<dim = 4>}
      : tensor<8x16xf32> params(tensor<16x4xf32>) -> (tensor<8x4xf32>) loc("/blocks.1/send")
  return %c : tensor<8x4xf32>
}
// AE: error: loc("/blocks.1/send"): --emit-cuda: the codec #ptrain.linear_ae<dim = 4> has no runtime kernel; the CUDA code generator emits #ptrain.powersgd, #ptrain.topk, #ptrain.randk, #ptrain.quant, #ptrain.tahquant and #ptrain.cast

// A matrix view that reorders dimensions is not the row-major n x m matrix the kernels read.
//--- view.mlir
func.func @f(%g: tensor<4x8x16xf32>) -> (tensor<16x2xf32>, tensor<32x2xf32>) {
  %c:2 = ptrain.compress %g {codec = #ptrain.powersgd<rank = 2, warm_start = false, view = #ptrain.matrix_view<rows = [2], cols = [0, 1]>>}
      : tensor<4x8x16xf32> -> (tensor<16x2xf32>, tensor<32x2xf32>) loc("/cb")
  return %c#0, %c#1 : tensor<16x2xf32>, tensor<32x2xf32>
}
// VIEW: error: loc("/cb"): --emit-cuda: the matrix view #ptrain.matrix_view<rows = [2], cols = [0, 1]> of 'tensor<4x8x16xf32>' is not a split of the dimensions in order

// Codes may have the codecs' element types only in codec ops and the transfers that carry them: a bf16 code
// as a function result (a host buffer) is an error naming the type.
//--- code-type.mlir
func.func @f(%g: tensor<8x16xf32>) -> tensor<8x16xbf16> {
  %c = ptrain.compress %g {codec = #ptrain.cast<bf16>} : tensor<8x16xf32> -> (tensor<8x16xbf16>) loc("/cast")
  return %c : tensor<8x16xbf16>
}
// CODETYPE: error: --emit-cuda: result #0 has element type 'bf16'; only f32 and i64 are supported
