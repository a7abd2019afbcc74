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
