// RUN: ptrain-translate --emit-cpp %s | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// i1 masks are uint8_t arrays: a constant causal mask, a comparison, a selection by both.
// CHECK: alignas(64) const uint8_t constant_0[4] = {
// CHECK-NEXT: 1, 0, 1, 1};
// CHECK-LABEL: ptrain_step_masked(const float *arg0, const int64_t *arg1, float *out_0)
// CHECK: // "/Less"
// CHECK: uint8_t *v{{[0-9]+}} = reinterpret_cast<uint8_t *>(ptrain_arena
// CHECK: PTRAIN_STEP_CALL(ptrain_compare_i64(1, arg1, 1, a_dims, {{.*}}, 0, nullptr, 1, out_dims, v{{[0-9]+}}));
// CHECK: // "/And"
// CHECK: PTRAIN_STEP_CALL(ptrain_logical_u8(5,
// CHECK: // "/Where"
// CHECK: static const int64_t c_dims[2] = {2, 2};
// CHECK: PTRAIN_STEP_CALL(ptrain_select(v{{[0-9]+}}, 2, c_dims, arg0, 3, a_dims, {{.*}}, 0, nullptr, 4, 3, out_dims, v{{[0-9]+}}));
func.func @masked(%x: tensor<3x2x2xf32>, %pos: tensor<2xi64>) -> tensor<3x2x2xf32> {
  %causal = arith.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %len = arith.constant dense<1> : tensor<i64>
  %lt = ptrain.compare lt %pos, %len : tensor<2xi64>, tensor<i64> loc("/Less")
  %m = ptrain.compare and %causal, %lt : tensor<2x2xi1>, tensor<2xi1> loc("/And")
  %ninf = arith.constant dense<-1.0e+09> : tensor<f32>
  %y = ptrain.select %m, %x, %ninf : tensor<2x2xi1>, tensor<3x2x2xf32>, tensor<f32> loc("/Where")
  return %y : tensor<3x2x2xf32>
}

// i64 arithmetic with broadcasting (tf2onnx's guard of negative token ids) calls the integer kernel; the
// step counter's add of equal shapes keeps ptrain_add_i64.
// CHECK-LABEL: ptrain_step_ids(const int64_t *arg0, const int64_t *arg1, int64_t *out_0)
// CHECK: // "/Add"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_i64(0, arg0, 2, a_dims, {{.*}}, 0, nullptr, 2, out_dims, v{{[0-9]+}}));
// CHECK: // "/Mul"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_i64(2, v{{[0-9]+}}, 2, a_dims, arg1, 1, b_dims, 2, out_dims, v{{[0-9]+}}));
// CHECK: // "/Add_1"
// CHECK: PTRAIN_STEP_CALL(ptrain_add_i64(
func.func @ids(%ids: tensor<2x8xi64>, %keep: tensor<8xi64>) -> tensor<2x8xi64> {
  %vocab = arith.constant dense<64> : tensor<i64>
  %s = ptrain.binary add %ids, %vocab : tensor<2x8xi64>, tensor<i64> loc("/Add")
  %m = ptrain.binary mul %s, %keep : tensor<2x8xi64>, tensor<8xi64> loc("/Mul")
  %y = ptrain.binary add %m, %ids : tensor<2x8xi64>, tensor<2x8xi64> loc("/Add_1")
  return %y : tensor<2x8xi64>
}

// Reductions reduce to the keepdims shape; broadcast_to copies bytes.
// CHECK-LABEL: ptrain_step_reduce(const float *arg0, float *out_0, float *out_1)
// CHECK: static const int64_t out_dims[3] = {2, 1, 1};
// CHECK: PTRAIN_STEP_CALL(ptrain_reduce_f32(1, arg0, 3, dims, 3, out_dims,
// CHECK: PTRAIN_STEP_CALL(ptrain_broadcast_to(arg0, 4, 3, dims, 4, out_dims,
func.func @reduce(%x: tensor<2x3x4xf32>) -> (tensor<2xf32>, tensor<5x2x3x4xf32>) {
  %m = ptrain.reduce mean %x {axes = array<i64: 1, 2>, keepdims = false} : tensor<2x3x4xf32> -> tensor<2xf32>
  %b = ptrain.broadcast_to %x : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
  return %m, %b : tensor<2xf32>, tensor<5x2x3x4xf32>
}

// rms_norm views x as rows x cols, epsilon a double literal; rotary passes B, N, S, D, R and the layout;
// dropout passes its ratio, seed (as bits) and the counter's value.
// CHECK-LABEL: ptrain_step_llama(
// CHECK: // ptrain.rms_norm
// CHECK: PTRAIN_STEP_CALL(ptrain_rms_norm_fwd_f32(arg0, arg1, 8, 16, 9.9999999999999995e-07, v{{[0-9]+}}));
// CHECK: // ptrain.rotary_embedding
// CHECK: PTRAIN_STEP_CALL(ptrain_rotary_embedding_f32(v{{[0-9]+}}, arg2, arg3, 2, 1, 4, 16, 8, 1, v{{[0-9]+}}));
// CHECK: // ptrain.dropout
// CHECK: PTRAIN_STEP_CALL(ptrain_dropout_f32(v{{[0-9]+}}, 128, 0.10000000149011612, static_cast<int64_t>(0xfffffffffffffff9ULL), arg4[0], v{{[0-9]+}}));
func.func @llama(%x: tensor<2x4x16xf32>, %g: tensor<16xf32>, %cos: tensor<2x4x4xf32>, %sin: tensor<2x4x4xf32>,
                 %t: tensor<i64>) -> tensor<2x1x4x16xf32> {
  %r = ptrain.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64} : tensor<2x4x16xf32>, tensor<16xf32>
  %q = ptrain.reshape %r : tensor<2x4x16xf32> -> tensor<2x1x4x16xf32>
  %y = ptrain.rotary_embedding %q, %cos, %sin {interleaved = true, rotary_dim = 8 : i64}
      : tensor<2x1x4x16xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %d = ptrain.dropout %y, %t {ratio = 0.10000000149011612 : f64, seed = -7 : i64} : tensor<2x1x4x16xf32>, tensor<i64>
  return %d : tensor<2x1x4x16xf32>
}
