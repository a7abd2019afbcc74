// The i1 masks of Hugging Face GPT-2 exports (ptrain.compare, ptrain.select), the LLaMA-style ops (rms_norm,
// rotary_embedding) and dropout through --emit-cuda (docs/CodegenCuda.md): each op's calls of
// libptrain_runtime_cuda under its location, with --emit-cpp's arguments; masks are uint8_t device buffers and
// i1 constants uint8_t arrays in the block of constants, as on the CPU; the dropout counter stays on the device.
// Then a C++17 compile of the unit (no device code, no nvcc).
// RUN: split-file %s %t
// RUN: ptrain-translate --emit-cuda %t/ops.mlir -o %t/ops.cu
// RUN: FileCheck %s < %t/ops.cu
// RUN: FileCheck %s --check-prefix=NOCPU < %t/ops.cu
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t/ops.cu
// RUN: ptrain-translate --emit-cuda %t/layout.mlir -o %t/layout.cu
// RUN: FileCheck %s --check-prefix=LAYOUT < %t/layout.cu
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t/layout.cu

// No CPU kernel is called.
// NOCPU-NOT: PTRAIN_STEP_CALL(ptrain_{{(compare|logical|select|rms_norm|rotary|dropout)}}

//--- ops.mlir
// The causal mask constant: one uint8_t per element.
// CHECK: alignas(64) const uint8_t constant_0[4] = {
// CHECK-NEXT: 1, 0, 1, 1};

// A comparison of i64 with broadcasting, a logical and of masks, a select of f32 by the mask.
// CHECK-LABEL: ptrain_status_t device_masked({{.*}}) {
// CHECK: const uint8_t *[[CAUSAL:v[0-9]+]] = reinterpret_cast<const uint8_t *>(d_constants + 0);
// CHECK: // "/Less"
// CHECK-NEXT: // ptrain.compare
// CHECK-NEXT: uint8_t *[[LT:v[0-9]+]] = reinterpret_cast<uint8_t *>(d_arena + {{[0-9]+}});
// CHECK-NEXT: {
// CHECK-NEXT: static const int64_t a_dims[1] = {2};
// CHECK-NEXT: static const int64_t out_dims[1] = {2};
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_compare_i64(1, d_arg1, 1, a_dims, {{v[0-9]+}}, 0, nullptr, 1, out_dims, [[LT]]));
// CHECK: // "/And"
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_logical_u8(5, [[CAUSAL]], 2, a_dims, [[LT]], 1, b_dims, 2, out_dims, [[M:v[0-9]+]]));
// CHECK: // "/Greater"
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_compare_f32(3, d_arg0, 3, a_dims, {{v[0-9]+}}, 0, nullptr, 3, out_dims, {{v[0-9]+}}));
// CHECK: // "/Where"
// CHECK: static const int64_t c_dims[2] = {2, 2};
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_select([[M]], 2, c_dims, d_arg0, 3, a_dims, {{v[0-9]+}}, 0, nullptr, 4, 3, out_dims, {{v[0-9]+}}));
// CHECK: // "/WhereI64"
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_select([[M]], 2, c_dims, {{v[0-9]+}}, 0, nullptr, {{v[0-9]+}}, 0, nullptr, 8, 2, out_dims, {{v[0-9]+}}));
// A mask cast to f32 (the reduce-max gradient's tie mask) is a cast of kind MASK.
// CHECK: // "/MaskToF32"
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_cast_elements([[M]], PTRAIN_CAST_MASK, 4, PTRAIN_CAST_F32, {{v[0-9]+}}));
func.func @masked(%x: tensor<3x2x2xf32>, %pos: tensor<2xi64>) -> (tensor<3x2x2xf32>, tensor<2x2xi64>, tensor<2x2xf32>) {
  %causal = arith.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %len = arith.constant dense<1> : tensor<i64>
  %lt = ptrain.compare lt %pos, %len : tensor<2xi64>, tensor<i64> loc("/Less")
  %m = ptrain.compare and %causal, %lt : tensor<2x2xi1>, tensor<2xi1> loc("/And")
  %zero = arith.constant dense<0.0> : tensor<f32>
  %pos3 = ptrain.compare gt %x, %zero : tensor<3x2x2xf32>, tensor<f32> loc("/Greater")
  %ninf = arith.constant dense<-1.0e+09> : tensor<f32>
  %y = ptrain.select %m, %x, %ninf : tensor<2x2xi1>, tensor<3x2x2xf32>, tensor<f32> loc("/Where")
  %one = arith.constant dense<1> : tensor<i64>
  %yi = ptrain.select %m, %one, %len : tensor<2x2xi1>, tensor<i64>, tensor<i64> loc("/WhereI64")
  %mf = ptrain.cast %m : tensor<2x2xi1> -> tensor<2x2xf32> loc("/MaskToF32")
  %yi2 = ptrain.binary add %yi, %yi : tensor<2x2xi64>, tensor<2x2xi64>
  %u = ptrain.select %pos3, %y, %x : tensor<3x2x2xi1>, tensor<3x2x2xf32>, tensor<3x2x2xf32>
  return %u, %yi2, %mf : tensor<3x2x2xf32>, tensor<2x2xi64>, tensor<2x2xf32>
}

// rms_norm views x as rows x cols (epsilon a double literal); rotary passes B, N, S, D, R and the layout;
// dropout passes its ratio, seed and the DEVICE counter, no layout (mid 0, one part, no row packing).
// CHECK-LABEL: ptrain_status_t device_llama({{.*}}) {
// CHECK: // "/RMSNorm"
// CHECK-NEXT: // ptrain.rms_norm
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_rms_norm_fwd_f32(d_arg0, d_arg1, 8, 16, 9.9999999999999995e-07, {{v[0-9]+}}));
// CHECK: // "/Rotary"
// CHECK-NEXT: // ptrain.rotary_embedding
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_rotary_embedding_f32({{v[0-9]+}}, d_arg2, d_arg3, 2, 1, 4, 16, 8, 1, {{v[0-9]+}}));
// CHECK: // "/Dropout"
// CHECK-NEXT: // ptrain.dropout
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_dropout_f32({{v[0-9]+}}, 128, 0.10000000149011612, -7, d_arg4, 0, 1, 0, 1, 0, 0, {{v[0-9]+}}));
// A micro-batch's row-packed counter: rows of 64 elements, derived on the device; INT64_MIN as a seed.
// CHECK: // "/DropoutRows"
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_dropout_f32({{v[0-9]+}}, 128, 0.29999999999999999, INT64_MIN, d_arg4, 0, 1, 0, 1, 0, 64, {{v[0-9]+}}));
func.func @llama(%x: tensor<2x4x16xf32>, %g: tensor<16xf32>, %cos: tensor<2x4x4xf32>, %sin: tensor<2x4x4xf32>,
                 %t: tensor<i64>) -> (tensor<2x1x4x16xf32>, tensor<2x64xf32>) {
  %r = ptrain.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64} : tensor<2x4x16xf32>, tensor<16xf32> loc("/RMSNorm")
  %q = ptrain.reshape %r : tensor<2x4x16xf32> -> tensor<2x1x4x16xf32>
  %y = ptrain.rotary_embedding %q, %cos, %sin {interleaved = true, rotary_dim = 8 : i64}
      : tensor<2x1x4x16xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32> loc("/Rotary")
  %d = ptrain.dropout %y, %t {ratio = 0.10000000149011612 : f64, seed = -7 : i64} : tensor<2x1x4x16xf32>, tensor<i64> loc("/Dropout")
  %x2 = ptrain.reshape %x : tensor<2x4x16xf32> -> tensor<2x64xf32>
  %e = ptrain.dropout %x2, %t {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 2>, ratio = 3.000000e-01 : f64,
      seed = -9223372036854775808 : i64} : tensor<2x64xf32>, tensor<i64> loc("/DropoutRows")
  return %d, %e : tensor<2x1x4x16xf32>, tensor<2x64xf32>
}

//--- layout.mlir
// On a dp x tp grid: a dropout sharded on dim 1 over tp (this rank's tp coordinate, of 2 parts) with the rows
// of the dp replicas before this one added to the packed counter's row on the device (8 rows per replica).
// LAYOUT-LABEL: ptrain_status_t device_stage({{.*}}) {
// LAYOUT: // "/attn/Dropout"
// LAYOUT: PTRAIN_STEP_CALL(ptrain_cuda_dropout_f32(d_arg0, 512, 0.10000000000000001, 9, d_arg1, 2, 64, gridCoordinate(ptrain_rank, 1), 2, gridCoordinate(ptrain_rank, 0) * 8, 256, {{v[0-9]+}}));
module {
  ptrain.grid @grid(dp = 2, tp = 2)
  func.func @stage(%p: tensor<4x2x8x8xf32>, %c: tensor<i64>) -> tensor<4x2x8x8xf32> {
    %y = ptrain.dropout %p, %c {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 4, replica_axis = "dp",
        replica_rows = 8, shard_axis = "tp", shard_dim = 1>, ratio = 1.000000e-01 : f64,
        seed = 9 : i64} : tensor<4x2x8x8xf32>, tensor<i64> loc("/attn/Dropout")
    return %y : tensor<4x2x8x8xf32>
  }
}
