// RUN: split-file %s %t
// RUN: not ptrain-translate --emit-cpp %t/unsupported-op.mlir -o %t/a.cpp 2>&1 | FileCheck %s --check-prefix=OP
// RUN: not test -e %t/a.cpp
// RUN: not ptrain-translate --emit-cpp %t/dynamic.mlir -o %t/b.cpp 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: not test -e %t/b.cpp
// RUN: not ptrain-translate --emit-cpp %t/f16.mlir 2>&1 | FileCheck %s --check-prefix=F16
// RUN: not ptrain-translate --emit-cpp %t/axis.mlir 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not ptrain-translate --emit-cpp %t/matmul.mlir 2>&1 | FileCheck %s --check-prefix=MATMUL

// An op the CPU code generator has no rule for: named, with its ONNX node location; no output file.
//--- unsupported-op.mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.addf %x, %x : tensor<4xf32> loc("/model/Add_7")
  return %y : tensor<4xf32>
}
// OP: error: loc("/model/Add_7"): --emit-cpp: 'arith.addf' is not supported by the CPU code generator

// Dynamic shapes are rejected.
//--- dynamic.mlir
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}
// DYN: error: --emit-cpp: argument #0 has the dynamic shape 'tensor<?x4xf32>'; only static shapes are supported

// Element types other than f32 and i64 are rejected.
//--- f16.mlir
func.func @f(%x: tensor<4xf16>) -> tensor<4xf16> {
  %y = ptrain.unary neg %x : tensor<4xf16> loc("/neg")
  return %y : tensor<4xf16>
}
// F16: error: --emit-cpp: argument #0 has element type 'f16'; only f32 and i64 are supported

// Softmax runs over the last axis only.
//--- axis.mlir
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = ptrain.softmax %x {axis = 0 : i64} : tensor<4x8xf32> loc("/Softmax")
  return %y : tensor<4x8xf32>
}
// AXIS: error: loc("/Softmax"): --emit-cpp: softmax is supported over the last axis only, got axis 0

// Batch dimensions broadcast from both sides at once do not map onto one strided GEMM.
//--- matmul.mlir
func.func @f(%a: tensor<2x1x3x4xf32>, %b: tensor<1x5x4x6xf32>) -> tensor<2x5x3x6xf32> {
  %y = ptrain.matmul %a, %b : tensor<2x1x3x4xf32>, tensor<1x5x4x6xf32> loc("/MatMul")
  return %y : tensor<2x5x3x6xf32>
}
// MATMUL: error: loc("/MatMul"): --emit-cpp: 'ptrain.matmul' with partially broadcast batch dimensions

// RUN: not ptrain-translate --emit-cpp %t/mask-arg.mlir -o %t/m.cpp 2>&1 | FileCheck %s --check-prefix=MASK-ARG
// RUN: not test -e %t/m.cpp
// RUN: not ptrain-translate --emit-cpp %t/cast.mlir 2>&1 | FileCheck %s --check-prefix=CAST
// RUN: not ptrain-translate --emit-cpp %t/mask-state.mlir 2>&1 | FileCheck %s --check-prefix=MASK-STATE
// RUN: not ptrain-translate --emit-cpp %t/reduce-i64.mlir 2>&1 | FileCheck %s --check-prefix=REDUCE-I64
// RUN: not ptrain-translate --emit-cpp %t/div-i64.mlir 2>&1 | FileCheck %s --check-prefix=DIV-I64

// i1 masks live inside a function only: an i1 argument (or result, or state) is refused.
//--- mask-arg.mlir
func.func @f(%m: tensor<4xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %y = ptrain.select %m, %x, %x : tensor<4xi1>, tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4xf32>
}
// MASK-ARG: error: --emit-cpp: argument #0 has element type 'i1'; only f32 and i64 are supported

// ptrain.cast converts between f32, i64 and i1 masks, and f32 <-> bf16 or f16 (mixed precision,
// docs/MixedPrecision.md); a cast between the two 16-bit types (no kernel) is named with its location.
//--- cast.mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %b = ptrain.cast %x : tensor<4xf32> -> tensor<4xbf16>
  %h = ptrain.cast %b : tensor<4xbf16> -> tensor<4xf16> loc("/model/Cast_3")
  %y = ptrain.cast %h : tensor<4xf16> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
// CAST: error: loc("/model/Cast_3"): --emit-cpp: ptrain.cast from 'bf16' to 'f16' is not supported (f32, i64 and i1 among themselves, f32 <-> bf16, f32 <-> f16)

// Nor is an i1 state.
//--- mask-state.mlir
ptrain.state @m key "mask" kind parameter : tensor<4xi1>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// MASK-STATE: error: --emit-cpp: the state has element type 'i1'; only f32 and i64 are supported

// reduce of i64: f32 only.
//--- reduce-i64.mlir
func.func @f(%x: tensor<2x8xi64>) -> tensor<2xi64> {
  %y = ptrain.reduce sum %x {axes = array<i64: 1>, keepdims = false} : tensor<2x8xi64> -> tensor<2xi64> loc("/ReduceSum")
  return %y : tensor<2xi64>
}
// REDUCE-I64: error: loc("/ReduceSum"): --emit-cpp: 'ptrain.reduce' supports f32 tensors only

// i64 ptrain.binary: add, sub, mul, max and min only (an integer division would need ONNX's rounding).
//--- div-i64.mlir
func.func @f(%x: tensor<2x8xi64>, %d: tensor<i64>) -> tensor<2x8xi64> {
  %y = ptrain.binary div %x, %d : tensor<2x8xi64>, tensor<i64> loc("/Div")
  return %y : tensor<2x8xi64>
}
// DIV-I64: error: loc("/Div"): --emit-cpp: i64 'ptrain.binary' supports add, sub, mul, max and min, got div
