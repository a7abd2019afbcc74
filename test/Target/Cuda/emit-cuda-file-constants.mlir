// RUN: ptrain-translate --emit-cuda --emit-cuda-constants=%t.bin %s | FileCheck %s
// RUN: ptrain-translate --emit-cuda --emit-cuda-constants=%t.bin %s -o %t.cu && c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu
// RUN: %PYTHON -c "import sys, struct; b = open(sys.argv[1], 'rb').read(); assert len(b) == 1024, len(b); assert struct.unpack_from('<3f', b, 0) == (0.5, -1.25, 3.0), b[:12]; assert struct.unpack_from('<2q', b, 384) == (7, -3), b[384:400]" %t.bin
// RUN: not ptrain-translate --emit-cuda %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFILE

// Large constants that are neither splats nor generated (ConstantForm::File) are never printed (issue 23;
// lib/Target/Cuda/EmitCuda.cpp, emitConstant): their bytes go to the constant file at 64-byte offsets, and
// setUpDevice reads each from the file beside libstep.so (ptrain_read_beside, which fails naming the file when it
// is missing or short) into its range of d_constants. A [9, 9] f32 table (324 bytes at 0) and a [2, 40] i64 table
// (640 bytes at 384: 324 rounded up to 64) make a 1,024-byte file; the 4-element constant stays a literal.
module {
  func.func @forward(%x: tensor<9x9xf32>, %p: tensor<2x40xi64>, %s: tensor<4xf32>) -> (tensor<9x9xf32>, tensor<2x40xi64>, tensor<4xf32>) {
    %w = arith.constant dense<[[0.5, -1.25, 3.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.5], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.5], [3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.5], [4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.5], [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.5], [6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.5], [7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.5], [8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.5]]> : tensor<9x9xf32> loc("table")
    %q = arith.constant dense<[[7, -3, 2, 9, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39], [1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2584, 4181, 6765, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]> : tensor<2x40xi64> loc("ids")
    %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> loc("small")
    %a = ptrain.binary add %x, %w : tensor<9x9xf32>, tensor<9x9xf32> loc("a")
    %b = ptrain.binary add %p, %q : tensor<2x40xi64>, tensor<2x40xi64> loc("b")
    %d = ptrain.binary add %s, %c : tensor<4xf32>, tensor<4xf32> loc("d")
    return %a, %b, %d : tensor<9x9xf32>, tensor<2x40xi64>, tensor<4xf32>
  }
}

// No host array of the large constants: only the 4-element one is printed.
// CHECK-NOT: [81] = {
// CHECK-NOT: [80] = {
// CHECK: "table"{{.*}}: 81 x float, device offset [[W:[0-9]+]]: bytes [0, 324) of emit-cuda-file-constants.mlir.tmp.bin, read at set-up
// CHECK: "ids"{{.*}}: 80 x int64_t, device offset [[Q:[0-9]+]]: bytes [384, 1024) of emit-cuda-file-constants.mlir.tmp.bin, read at set-up
// CHECK: "small"{{.*}}: 4 x float
// CHECK-NEXT: alignas(64) const float constant_2[4] = {
// CHECK-LABEL: ptrain_status_t setUpDevice() {
// CHECK: std::vector<unsigned char> bytes(324);
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_read_beside(step_error, "emit-cuda-file-constants.mlir.tmp.bin", 0, 324, bytes.data()));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device(bytes.data(), 324, d_constants + [[W]]));
// CHECK: std::vector<unsigned char> bytes(640);
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_read_beside(step_error, "emit-cuda-file-constants.mlir.tmp.bin", 384, 640, bytes.data()));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device(bytes.data(), 640, d_constants + [[Q]]));
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device(constant_2, 16, d_constants +
// The functions read them from d_constants like any constant.
// CHECK-LABEL: ptrain_status_t device_forward(
// CHECK: const float *{{v[0-9]+}} = reinterpret_cast<const float *>(d_constants + [[W]]);

// Without --emit-cuda-constants such a constant is an error naming it (and nothing is written).
// NOFILE: error: loc("table"): --emit-cuda: a constant of 324 bytes is neither small (at most 64 elements), a splat, a causal mask nor an iota: it is read from a constant file at set-up; pass --emit-cuda-constants=FILE (FILE lies beside libstep.so)
