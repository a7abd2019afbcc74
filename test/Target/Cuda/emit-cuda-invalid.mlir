// RUN: split-file %s %t
// RUN: not ptrain-translate --emit-cuda %t/unsupported-op.mlir -o %t/a.cu 2>&1 | FileCheck %s --check-prefix=OP
// RUN: not test -e %t/a.cu
// RUN: not ptrain-translate --emit-cuda %t/pipeline.mlir 2>&1 | FileCheck %s --check-prefix=PIPE --implicit-check-not="see current operation"
// RUN: not ptrain-translate --emit-cuda %t/dynamic.mlir 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: not ptrain-translate --emit-cuda %t/f16.mlir 2>&1 | FileCheck %s --check-prefix=F16
// RUN: not ptrain-translate --emit-cuda %t/axis.mlir 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not ptrain-translate --emit-cuda %t/matmul.mlir 2>&1 | FileCheck %s --check-prefix=MATMUL
// RUN: not ptrain-translate --emit-cuda %t/external.mlir 2>&1 | FileCheck %s --check-prefix=EXT --implicit-check-not="see current operation"
// RUN: not ptrain-translate --emit-cuda %t/mask.mlir 2>&1 | FileCheck %s --check-prefix=MASK
// RUN: not ptrain-translate --emit-cuda %t/dropout-axis.mlir -o %t/d.cu 2>&1 | FileCheck %s --check-prefix=DROPAXIS
// RUN: not test -e %t/d.cu
// RUN: not ptrain-translate --emit-cuda %t/zero.mlir -o %t/z.cu 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not ptrain-translate --emit-cuda %t/zero-dim.mlir 2>&1 | FileCheck %s --check-prefix=ZERODIM
// RUN: not ptrain-translate --emit-cuda %t/cast-f16.mlir 2>&1 | FileCheck %s --check-prefix=CAST16
// RUN: not test -e %t/z.cu

// An op the CUDA code generator has no rule for: named, with its ONNX node location; no output file.
//--- unsupported-op.mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.addf %x, %x : tensor<4xf32> loc("/model/Add_7")
  return %y : tensor<4xf32>
}
// OP: error: loc("/model/Add_7"): --emit-cuda: 'arith.addf' is not supported by the CUDA code generator (docs/CodegenCuda.md lists the ops it maps; --target cpu has the others)

// A pipeline module needs its grid with an axis pp (the pipeline driver shared with --emit-cpp).
//--- pipeline.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@stage0_train, @stage1_train], micro_batches = 2>} {
  func.func @stage0_train() {
    return
  }
  func.func @stage1_train() {
    return
  }
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
// PIPE: error: --emit-cuda: a pipeline module needs a ptrain.grid with an axis pp

// Dynamic shapes are rejected.
//--- dynamic.mlir
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}
// DYN: error: --emit-cuda: argument #0 has the dynamic shape 'tensor<?x4xf32>'; only static shapes are supported

// Element types other than f32 and i64 are rejected.
//--- f16.mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = ptrain.unary neg %x : tensor<4xf32> loc("/neg")
  %c = arith.constant dense<1.0> : tensor<4xf16> loc("/half")
  return %h : tensor<4xf32>
}
// F16: error: loc("/half"): --emit-cuda: result #0 has element type 'f16'; only f32, i64 and i1 (masks) are supported

// Softmax runs over the last axis only.
//--- axis.mlir
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = ptrain.softmax %x {axis = 0 : i64} : tensor<4x8xf32> loc("/Softmax")
  return %y : tensor<4x8xf32>
}
// AXIS: error: loc("/Softmax"): --emit-cuda: softmax is supported over the last axis only, got axis 0

// A batch that broadcasts only partly (2x3 against 3) has no strided-batched GEMM.
//--- matmul.mlir
func.func @f(%a: tensor<2x3x4x5xf32>, %b: tensor<1x3x5x6xf32>) -> tensor<2x3x4x6xf32> {
  %c = ptrain.matmul %a, %b : tensor<2x3x4x5xf32>, tensor<1x3x5x6xf32> loc("/MatMul")
  return %c : tensor<2x3x4x6xf32>
}
// MATMUL: error: loc("/MatMul"): --emit-cuda: 'ptrain.matmul' with partially broadcast batch dimensions

// A declaration without a body.
//--- external.mlir
func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32>
// EXT: error: --emit-cuda: function @f has no body

// i1 masks are uint8 buffers inside a function (emit-cuda-transformer-ops.mlir), never a function's argument or
// result (the C ABI has none), as on the CPU target: named with its type.
//--- mask.mlir
func.func @f(%x: tensor<6xi64>) -> tensor<6xi1> {
  %m = ptrain.cast %x : tensor<6xi64> -> tensor<6xi1> loc("/Cast_mask")
  return %m : tensor<6xi1>
}
// MASK: error: --emit-cuda: result #0 has element type 'i1'; only f32 and i64 are supported

// A dropout layout naming an axis no grid has (the rank's coordinate is unknown): named at the op, nothing written.
//--- dropout-axis.mlir
func.func @f(%x: tensor<4x2x8xf32>, %c: tensor<i64>) -> tensor<4x2x8xf32> {
  %y = ptrain.dropout %x, %c {ptrain.dropout_layout = #ptrain.dropout_layout<shard_axis = "tp", shard_dim = 1>, ratio = 1.000000e-01 : f64,
      seed = 9 : i64} : tensor<4x2x8xf32>, tensor<i64> loc("/attn/Dropout")
  return %y : tensor<4x2x8xf32>
}
// DROPAXIS: error: loc("/attn/Dropout"): --emit-cuda: the dropout layout names grid axis 'tp', which no grid has

// ZeRO-1's quantized reduce-scatter (--zero 1 with mcbench's dp-codec) is refused by name; no output file. The
// plain reduce-scatter and all-gather are NCCL's (emit-cuda-zero.mlir).
//--- zero.mlir
ptrain.grid @grid(dp = 2)
func.func @f(%g: tensor<16xf32>) -> tensor<8xf32> {
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = tensor>} : tensor<16xf32> -> !ptrain.request<tensor<8xf32>> loc("bucket0")
  %s = ptrain.wait %r : !ptrain.request<tensor<8xf32>>
  return %s : tensor<8xf32>
}
// ZERO: error: loc("bucket0"): --emit-cuda: 'ptrain.compressed_reduce_scatter_start' (ZeRO-1's compressed buckets: ptrain-compile --zero 1 with a dp-codec) is not supported by the CUDA code generator; --target cpu runs it
//
// A reduce-scatter along another dimension than 0 (the runtimes scatter blocks of dimension 0): named at the op.
//--- zero-dim.mlir
ptrain.grid @grid(dp = 2)
func.func @f(%g: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %r = ptrain.reduce_scatter_start %g on @grid axes [dp] scatter_dim = 1 reduction = sum : tensor<2x8xf32> -> !ptrain.request<tensor<2x4xf32>> loc("rs1")
  %s = ptrain.wait %r : !ptrain.request<tensor<2x4xf32>>
  return %s : tensor<2x4xf32>
}
// ZERODIM: error: loc("rs1"): --emit-cuda: only f32 reduce-scatters along dimension 0 are supported

// A mixed-precision cast the CUDA target has no kernel for (f32 <-> bf16 and f32 <-> f16 only).
//--- cast-f16.mlir
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  %b = ptrain.cast %x : tensor<4xf32> -> tensor<4xbf16>
  %h = ptrain.cast %b : tensor<4xbf16> -> tensor<4xf16> loc("/model/Cast_3")
  %y = ptrain.cast %h : tensor<4xf16> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
// CAST16: error: loc("/model/Cast_3"): --emit-cuda: a cast from 'bf16' to 'f16' is not supported (f32, i64 and i1 among themselves, f32 <-> bf16, f32 <-> f16)
