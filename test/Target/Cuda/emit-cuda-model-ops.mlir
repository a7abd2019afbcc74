// The model ops beyond the GPT core through --emit-cuda (docs/CodegenCuda.md): ONNX Gather, LogSoftmax and
// Cast as imported (the BERT exports' attention-mask cast, i64 -> f32), reduce and broadcast_to (the
// vocabulary-parallel loss), each op's calls of libptrain_runtime_cuda under its location; then a C++17
// compile of the unit (no device code, no nvcc). i1 masks are not CUDA buffers (emit-cuda-invalid.mlir).
// RUN: ptrain-translate --emit-cuda %s -o %t.cu
// RUN: FileCheck %s < %t.cu
// RUN: FileCheck %s --check-prefix=NOCPU < %t.cu
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu

// CHECK-LABEL: ptrain_status_t device_selection({{.*}}) {
func.func @selection(%x: tensor<3x4x5xf32>, %i: tensor<2x2xi64>, %n: tensor<6xi64>)
    -> (tensor<3x2x2x5xf32>, tensor<2x2xi64>, tensor<3x4x5xf32>, tensor<3x4x5xf32>, tensor<3x4x5xi64>,
        tensor<6xf32>) {
  // Gather views the data as [outer, len, inner] around its axis; indices stay i64 on the device.
  // CHECK: // "/Gather"
  // CHECK-NEXT: // ptrain.gather
  // CHECK-NEXT: float *[[G:v[0-9]+]] = reinterpret_cast<float *>(d_arena + {{[0-9]+}});
  // CHECK-NEXT: {
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_gather_axis(d_arg0, 4, 3, 4, 5, d_arg1, 4, [[G]]));
  %g = ptrain.gather %x, %i {axis = 1 : i64} : tensor<3x4x5xf32>, tensor<2x2xi64> -> tensor<3x2x2x5xf32> loc("/Gather")
  // CHECK: // "/GatherI64"
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_gather_axis(d_arg2, 8, 1, 6, 1, d_arg1, 4, {{v[0-9]+}}));
  %gi = ptrain.gather %n, %i {axis = 0 : i64} : tensor<6xi64>, tensor<2x2xi64> -> tensor<2x2xi64> loc("/GatherI64")
  // CHECK: // "/LogSoftmax"
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_log_softmax_f32(d_arg0, 12, 5, 1, {{v[0-9]+}}));
  %ls = ptrain.log_softmax %x {axis = -1 : i64} : tensor<3x4x5xf32> loc("/LogSoftmax")
  // CHECK: // "/LogSoftmaxMiddle"
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_log_softmax_f32(d_arg0, 3, 4, 5, {{v[0-9]+}}));
  %ls1 = ptrain.log_softmax %x {axis = 1 : i64} : tensor<3x4x5xf32> loc("/LogSoftmaxMiddle")
  // CHECK: // "/CastToInt"
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_cast_elements(d_arg0, PTRAIN_CAST_F32, 60, PTRAIN_CAST_I64, {{v[0-9]+}}));
  %xi = ptrain.cast %x : tensor<3x4x5xf32> -> tensor<3x4x5xi64> loc("/CastToInt")
  // CHECK: // "/CastToFloat"
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_cast_elements(d_arg2, PTRAIN_CAST_I64, 6, PTRAIN_CAST_F32, {{v[0-9]+}}));
  %nf = ptrain.cast %n : tensor<6xi64> -> tensor<6xf32> loc("/CastToFloat")
  return %g, %gi, %ls, %ls1, %xi, %nf : tensor<3x2x2x5xf32>, tensor<2x2xi64>, tensor<3x4x5xf32>, tensor<3x4x5xf32>,
      tensor<3x4x5xi64>, tensor<6xf32>
}

// CHECK-LABEL: ptrain_status_t device_reduce({{.*}}) {
func.func @reduce(%x: tensor<3x4x5xf32>, %i: tensor<4x1xi64>)
    -> (tensor<3x1x1xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<2x4x3xi64>) {
  // Every reduction goes to its keepdims shape (the result's elements in the same order).
  // CHECK: // "/ReduceSum"
  // CHECK-NEXT: // ptrain.reduce
  // CHECK-NEXT: float *{{v[0-9]+}} = reinterpret_cast<float *>(d_arena + {{[0-9]+}});
  // CHECK-NEXT: {
  // CHECK-NEXT: static const int64_t dims[3] = {3, 4, 5};
  // CHECK-NEXT: static const int64_t out_dims[3] = {3, 1, 1};
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_reduce_f32(0, d_arg0, 3, dims, 3, out_dims, {{v[0-9]+}}));
  %sum = ptrain.reduce sum %x {axes = array<i64: 1, 2>, keepdims = true} : tensor<3x4x5xf32> -> tensor<3x1x1xf32> loc("/ReduceSum")
  // CHECK: // "/ReduceMean"
  // CHECK: static const int64_t out_dims[3] = {1, 4, 1};
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_reduce_f32(1, d_arg0, 3, dims, 3, out_dims, {{v[0-9]+}}));
  %mean = ptrain.reduce mean %x {axes = array<i64: 0, -1>, keepdims = false} : tensor<3x4x5xf32> -> tensor<4xf32> loc("/ReduceMean")
  // CHECK: // "/ReduceMax"
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_reduce_f32(2, d_arg0, 3, dims, 3, out_dims, {{v[0-9]+}}));
  %max = ptrain.reduce max %x {axes = array<i64: 2>, keepdims = false} : tensor<3x4x5xf32> -> tensor<3x4xf32> loc("/ReduceMax")
  // CHECK: // "/Expand"
  // CHECK: static const int64_t dims[2] = {4, 1};
  // CHECK-NEXT: static const int64_t out_dims[3] = {2, 4, 3};
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_broadcast_to(d_arg1, 8, 2, dims, 3, out_dims, {{v[0-9]+}}));
  %bi = ptrain.broadcast_to %i : tensor<4x1xi64> -> tensor<2x4x3xi64> loc("/Expand")
  return %sum, %mean, %max, %bi : tensor<3x1x1xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<2x4x3xi64>
}
// No CPU kernel is called.
// NOCPU-NOT: PTRAIN_STEP_CALL(ptrain_{{gather_axis|log_softmax_f32|cast_elements|reduce_f32|broadcast_to}}(
